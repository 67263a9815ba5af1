/**
 * Outbox routes (docs/admin-api.md "Outbox"): one count per stage; a
 * keyset page of sends newest first, naming no recipient and no subject;
 * one send with its recipients; and the withdrawal and re-offer of one
 * send. Shapes: this file (the reference section of
 * docs/admin-api.md is generated from it).
 */
import { z } from 'zod';
import {
  OUTBOX_PAGE_DEFAULT,
  OUTBOX_PAGE_MAX,
  OUTBOX_STAGES,
  OUTGOING_ID_PATTERN,
  OutboxEntry,
  OutboxSummaryReply,
  OutgoingEmailDetail,
} from '../../../actors/mail-query/protocol/outbox-reads.ts';
import { CursorField, pageSizeField } from '../query-fields.ts';
import { defineRoute, WRITE_BODY_BYTES } from '../route.ts';
import { OUTBOX_PATH, OUTGOING_SHAPE, decideOutgoingEmail, listOutbox, outboxSummary, showOutgoingEmail } from '../use-cases/outbox.ts';
import { AccountField } from './mailbox.ts';

const STAGE_SENTENCE = `Send stage as one of the five stages a send can stand at (${OUTBOX_STAGES.join(', ')}), or leave it out.`;

export const OutboxQuery = z.strictObject({
  account: AccountField.optional().describe('Only sends of this configured `Accounts:Id`'),
  stage: z.enum(OUTBOX_STAGES, { error: STAGE_SENTENCE }).optional().describe('Only sends standing at this stage'),
  pageSize: pageSizeField(OUTBOX_PAGE_MAX, OUTBOX_PAGE_DEFAULT),
  cursor: CursorField,
});

export const OutboxAnswer = z.strictObject({
  outgoingEmails: z.array(OutboxEntry).describe('Newest first by identifier; no recipient, no subject'),
  nextCursor: z.string().optional().describe('Present while more remain: send it as cursor, with the same account and stage, for the next page'),
});

export const OutgoingEmailParams = z.strictObject({
  id: z.string().describe('A send as the listing names it, such as `o12`; any other text, or a send the deployment does not hold, is answered 404'),
});

const OutgoingEmailField = z
  .string({ error: OUTGOING_SHAPE })
  .regex(OUTGOING_ID_PATTERN, { error: OUTGOING_SHAPE })
  .describe('A send as the outbox listing names it, such as `o12`');

export const CancellationBody = z.strictObject({ outgoingEmail: OutgoingEmailField });

export const RequeueBody = z.strictObject({
  outgoingEmail: OutgoingEmailField,
  refusalRestated: z
    .boolean({ error: 'Send refusalRestated as true or false, or leave it out.' })
    .optional()
    .describe('true restates the refusal of a Refused send, which re-offering it needs; absent: false'),
});

export const OutboxDecisionAnswer = z.strictObject({
  outgoingEmail: z.string().describe('The send named'),
  outcome: z
    .enum(['Accepted', 'RecordUnknown', 'StageDoesNotAllowIt', 'AttemptUnderWay', 'RefusalNotRestated'])
    .describe(
      '`Accepted`: done; `RecordUnknown`: no such send of a configured account; `StageDoesNotAllowIt`: its stage does not allow it, nothing changed; `AttemptUnderWay`: an attempt holds it, nothing changed; `RefusalNotRestated` (requeue only): the send was Refused and the body did not restate the refusal, nothing changed',
    ),
});

export const outboxRoutes = [
  defineRoute({
    method: 'GET',
    path: `${OUTBOX_PATH}/summary`,
    permission: 'service.admin.read',
    summary: 'One count per stage over the configured accounts; names no message',
    answer: OutboxSummaryReply,
    async handle({ principal, deadlineMs }, deps) {
      return { status: 200, json: await outboxSummary(deps, principal, deadlineMs) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: OUTBOX_PATH,
    permission: 'service.admin.read',
    summary: 'A keyset page of sends, newest first; no recipient, no subject',
    query: OutboxQuery,
    answer: OutboxAnswer,
    async handle({ principal, deadlineMs, query }, deps) {
      return { status: 200, json: await listOutbox(deps, principal, query, deadlineMs) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: `${OUTBOX_PATH}/{id}`,
    permission: 'service.admin.audit.read',
    summary: 'One send with everyone it is offered to and what the server said of each; 404 (a problem document) when the deployment holds none by that name',
    params: OutgoingEmailParams,
    answer: OutgoingEmailDetail,
    async handle({ principal, deadlineMs, params }, deps) {
      return { status: 200, json: await showOutgoingEmail(deps, principal, params.id ?? '', deadlineMs) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: `${OUTBOX_PATH}/cancellation`,
    permission: 'service.admin.operate',
    summary: 'Withdraws one send that has not begun transmitting; the record stays, holding the withdrawal and who asked',
    body: CancellationBody,
    bodyLimit: WRITE_BODY_BYTES,
    answer: OutboxDecisionAnswer,
    async handle({ principal, deadlineMs, body }, deps) {
      return { status: 200, json: await decideOutgoingEmail(deps, principal, body, 'cancel', deadlineMs) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: `${OUTBOX_PATH}/requeue`,
    permission: 'service.admin.operate',
    summary:
      'Offers one send again, its attempts given back, to every address not yet accepted; may put a second copy in a mailbox. A Refused send needs the refusal restated',
    body: RequeueBody,
    bodyLimit: WRITE_BODY_BYTES,
    answer: OutboxDecisionAnswer,
    async handle({ principal, deadlineMs, body }, deps) {
      return { status: 200, json: await decideOutgoingEmail(deps, principal, body, 'requeue', deadlineMs) };
    },
  }),
];
