/**
 * The `sending` tools (permission `service.mail.send`): send, reply,
 * forward, send a draft, read and cancel a queued send. Nothing transmits
 * inside the request: each call asks the outbox actor to record (composing
 * the MIME once) and answers with the record; delivery runs afterwards. The
 * outbox checks the caller's grant again (a third check). A reply or forward
 * names a stored email the caller may read; the query pool locates it first,
 * so an email outside the caller's scope reads as not found. Inputs:
 * DECISIONS.md "Write tools' inputs"; bounds and refusals: docs/sending.md.
 */
import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { StoredEmailId } from '../../../actors/mail-query/protocol/stored-email-id.ts';
import { type Composition, OperatorReply, OutgoingReply, SEND_PERMISSION, SendReply } from '../../../actors/outbox/protocol.ts';
import { AppError } from '../../../runtime/errors.ts';
import { locateEmail, requireAccount } from '../caller-scope.ts';
import { Addresses, bodies, DraftId, htmlOf, IdempotencyKey, OutgoingEmailId, draftRowIn, outgoingRowIn, Subject } from '../message-inputs.ts';
import { callerOf, outboxRefusal } from '../outbox-asks.ts';
import { answerOf } from '../reply-answer.ts';
import { defineTool, type Tool, type ToolContext } from '../tool.ts';

export const SendEmailInput = z.strictObject({
  account: z.string().min(1).describe('Account id (list_accounts)'),
  to: Addresses('Plain addresses (name@example.org)'),
  cc: Addresses('Plain addresses'),
  bcc: Addresses('Plain addresses; in no header'),
  subject: Subject,
  ...bodies,
  idempotencyKey: IdempotencyKey,
});

export const ReplyToEmailInput = z.strictObject({
  storedEmailId: StoredEmailId,
  audience: z.enum(['senderOnly', 'everyone']).describe('senderOnly: Reply-To, else From; everyone: also its To and Cc, minus this account'),
  cc: Addresses('Extra Cc addresses'),
  ...bodies,
  idempotencyKey: IdempotencyKey,
});

export const ForwardEmailInput = z.strictObject({
  storedEmailId: StoredEmailId,
  to: Addresses('Plain addresses'),
  cc: Addresses('Plain addresses'),
  bcc: Addresses('Plain addresses; in no header'),
  ...bodies,
  idempotencyKey: IdempotencyKey,
});

export const SendDraftInput = z.strictObject({
  draftId: DraftId,
  idempotencyKey: IdempotencyKey.optional().describe('Your key for this send; absent: one per draft'),
});
export const OutgoingIdInput = z.strictObject({ outgoingEmailId: OutgoingEmailId });

/** Record one send and answer with its record (or the outbox's refusal). */
async function recordSend(ctx: ToolContext, accountId: string, idempotencyKey: string, composition: Composition) {
  const reply = await ctx.outbox.ask(
    { type: 'outbox.record-send', ...callerOf(ctx), accountId, idempotencyKey, composition },
    { reply: SendReply, deadlineMs: ctx.deadlineMs },
  );
  return answerOf(reply, 'recorded', (r) => outboxRefusal(r, SEND_PERMISSION));
}

const sending: ToolAnnotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true };

export const sendingTools: readonly Tool[] = [
  defineTool({
    name: 'send_email',
    title: 'Send an email',
    description:
      'Queue a new email from an account. Answers at once with outgoingEmailId; delivery follows (get_outgoing_email). Same idempotencyKey, same record.',
    category: 'sending',
    permission: SEND_PERMISSION,
    annotations: { title: 'Send an email', ...sending },
    input: SendEmailInput,
    run(input, ctx) {
      requireAccount(ctx, input.account);
      const { to, cc, bcc, subject, plainTextBody } = input;
      return recordSend(ctx, input.account, input.idempotencyKey, { kind: 'new', to, cc, bcc, subject, plainTextBody, htmlBody: htmlOf(input.htmlBody) });
    },
  }),
  defineTool({
    name: 'reply_to_email',
    title: 'Reply to an email',
    description: 'Queue a reply to a stored email: subject, threading headers and a quote come from it. audience: senderOnly or everyone.',
    category: 'sending',
    permission: SEND_PERMISSION,
    annotations: { title: 'Reply to an email', ...sending },
    input: ReplyToEmailInput,
    async run(input, ctx) {
      const original = await locateEmail(ctx, input.storedEmailId);
      const { audience, cc, plainTextBody } = input;
      return recordSend(ctx, original.accountId, input.idempotencyKey, {
        kind: 'reply',
        original: original.messageId,
        audience,
        cc,
        plainTextBody,
        htmlBody: htmlOf(input.htmlBody),
      });
    },
  }),
  defineTool({
    name: 'forward_email',
    title: 'Forward an email',
    description: "Queue a forward of a stored email with its attachments, from the email's account.",
    category: 'sending',
    permission: SEND_PERMISSION,
    annotations: { title: 'Forward an email', ...sending },
    input: ForwardEmailInput,
    async run(input, ctx) {
      const original = await locateEmail(ctx, input.storedEmailId);
      const { to, cc, bcc, plainTextBody } = input;
      return recordSend(ctx, original.accountId, input.idempotencyKey, {
        kind: 'forward',
        original: original.messageId,
        to,
        cc,
        bcc,
        plainTextBody,
        htmlBody: htmlOf(input.htmlBody),
      });
    },
  }),
  defineTool({
    name: 'send_draft',
    title: 'Send a draft',
    description: "Queue a saved draft's exact message; the draft is removed from the drafts folder once sent.",
    category: 'sending',
    permission: SEND_PERMISSION,
    annotations: { title: 'Send a draft', ...sending },
    input: SendDraftInput,
    async run(input, ctx) {
      const draftId = draftRowIn(input.draftId);
      const reply = await ctx.outbox.ask(
        { type: 'outbox.send-draft', ...callerOf(ctx), draftId, idempotencyKey: input.idempotencyKey ?? `draft:${draftId}` },
        { reply: SendReply, deadlineMs: ctx.deadlineMs },
      );
      return answerOf(reply, 'recorded', (r) => outboxRefusal(r, SEND_PERMISSION));
    },
  }),
  defineTool({
    name: 'get_outgoing_email',
    title: 'Read a queued email',
    description: "State of a send you queued: queued, sending, sent, refused or cancelled; attempts and each recipient's state and last server reply code.",
    category: 'sending',
    permission: SEND_PERMISSION,
    annotations: { title: 'Read a queued email', readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    input: OutgoingIdInput,
    async run(input, ctx) {
      const { outgoing } = await ctx.outbox.ask(
        { type: 'outbox.outgoing', requester: ctx.caller.identity, outgoing: outgoingRowIn(input.outgoingEmailId) },
        { reply: OutgoingReply, deadlineMs: ctx.deadlineMs },
      );
      if (outgoing === null) throw new AppError('E_NOT_FOUND');
      return outgoing;
    },
  }),
  defineTool({
    name: 'cancel_outgoing_email',
    title: 'Cancel a queued email',
    description: 'Withdraw a send you queued, only while transmission has not begun.',
    category: 'sending',
    permission: SEND_PERMISSION,
    annotations: { title: 'Cancel a queued email', readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    input: OutgoingIdInput,
    async run(input, ctx) {
      const id = outgoingRowIn(input.outgoingEmailId);
      const { outcome } = await ctx.outbox.ask(
        { type: 'outbox.cancel', outgoing: id, by: ctx.caller.identity, requester: ctx.caller.identity },
        { reply: OperatorReply, deadlineMs: ctx.deadlineMs },
      );
      if (outcome === 'RecordUnknown') throw new AppError('E_NOT_FOUND');
      if (outcome !== 'Accepted') {
        // Cancelling twice answers the same: the send is cancelled.
        const { outgoing } = await ctx.outbox.ask(
          { type: 'outbox.outgoing', requester: ctx.caller.identity, outgoing: id },
          { reply: OutgoingReply, deadlineMs: ctx.deadlineMs },
        );
        if (outgoing?.state !== 'cancelled') throw new AppError('E_STATE_PASSED');
      }
      return { outgoingEmailId: input.outgoingEmailId, state: 'cancelled' };
    },
  }),
];
