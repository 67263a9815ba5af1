/**
 * The sending tools (category `sending`, permission `service.mail.send`)
 * and the draft tools (category `drafts`, `service.mail.drafts.write`).
 * Nothing transmits inside the request: each call asks the outbox actor to
 * record (composing the MIME once) and answers with the record; delivery
 * runs afterwards. The outbox checks the caller's grant again (a third
 * check). A reply or forward names a stored email the caller may read; the
 * query pool locates it first, so an email outside the caller's scope reads
 * as not found. Inputs: DECISIONS.md "Write tools' inputs"; bounds and
 * refusals: docs/sending.md.
 */
import { z } from 'zod';
import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import {
  type Composition,
  DRAFTS_PERMISSION,
  DeleteDraftReply,
  OperatorReply,
  OutgoingReply,
  SEND_LIMITS,
  SEND_PERMISSION,
  SaveDraftReply,
  SendReply,
} from '../../actors/outbox/protocol.ts';
import { LocateEmailReply } from '../../actors/mail-query/protocol/email-lookup.ts';
import { decodeStoredEmailId, StoredEmailId } from '../../actors/mail-query/protocol/stored-email-id.ts';
import { AppError } from '../../runtime/errors.ts';
import type { Tool, ToolContext } from './tools.ts';

const Address = z.string().min(3).max(SEND_LIMITS.addressLength);
const Addresses = (what: string) => z.array(Address).max(SEND_LIMITS.recipients).default([]).describe(what);
const Subject = z
  .string()
  .max(SEND_LIMITS.subjectLength)
  .regex(/^[^\r\n\u2028\u2029]*$/, 'subject must be one line: line breaks are refused in header values');
const Body = z.string().max(SEND_LIMITS.bodyCharacters);
const IdempotencyKey = z
  .string()
  .min(1)
  .max(SEND_LIMITS.idempotencyKeyLength)
  .describe('Your key for this send: repeating it returns the same record, never a second send');
const OutgoingEmailId = z
  .string()
  .regex(/^o[1-9][0-9]{0,14}$/, 'an outgoingEmailId as a send answered it')
  .describe('As a send answered it');
const DraftId = z.string().regex(/^d[1-9][0-9]{0,14}$/, 'a draftId as save_draft answered it');

const bodies = {
  plainTextBody: Body.describe('The message text'),
  htmlBody: Body.optional().describe('An HTML version, sent beside the text'),
};

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

const DraftFields = {
  account: z.string().min(1).optional().describe('Account id, for a new message (with subject)'),
  subject: Subject.optional(),
  answeredEmailId: StoredEmailId.optional().describe('The stored email a reply or forward draft answers (with answering)'),
  answering: z.enum(['senderOnly', 'everyone', 'forward']).optional(),
  to: Addresses('Plain addresses (not for a reply)'),
  cc: Addresses('Plain addresses'),
  bcc: Addresses('Plain addresses (not for a reply)'),
  ...bodies,
};

function draftShape<
  T extends {
    account?: string | undefined;
    subject?: string | undefined;
    answeredEmailId?: string | undefined;
    answering?: string | undefined;
    to: string[];
    bcc: string[];
  },
>(input: T, ctx: z.RefinementCtx): void {
  const asNew = input.account !== undefined || input.subject !== undefined;
  const asAnswer = input.answeredEmailId !== undefined || input.answering !== undefined;
  if (asNew === asAnswer) ctx.addIssue({ code: 'custom', message: 'state either account and subject, or answeredEmailId and answering', path: [] });
  else if (asNew && (input.account === undefined || input.subject === undefined))
    ctx.addIssue({ code: 'custom', message: 'account and subject go together', path: [] });
  else if (asAnswer && (input.answeredEmailId === undefined || input.answering === undefined))
    ctx.addIssue({ code: 'custom', message: 'answeredEmailId and answering go together', path: [] });
  else if (input.answering !== undefined && input.answering !== 'forward' && input.to.length + input.bcc.length > 0)
    ctx.addIssue({ code: 'custom', message: 'a reply draft takes its audience from the original: only cc may be added', path: ['to'] });
}

export const SaveDraftInput = z.strictObject(DraftFields).superRefine(draftShape);
export const UpdateDraftInput = z.strictObject({ draftId: DraftId, ...DraftFields }).superRefine(draftShape);
export const DraftIdInput = z.strictObject({ draftId: DraftId });
export const SendDraftInput = z.strictObject({
  draftId: DraftId,
  idempotencyKey: IdempotencyKey.optional().describe('Your key for this send; absent: one per draft'),
});
export const OutgoingIdInput = z.strictObject({ outgoingEmailId: OutgoingEmailId });

type Refusal = { outcome: string; sentence: string };

/** The tool's error for an outbox refusal (docs/errors.md). */
function refusalError(r: Refusal, permission: string): AppError {
  switch (r.outcome) {
    case 'invalid':
      return new AppError('E_TOOL_INVALID_INPUT', { message: r.sentence });
    case 'key-conflict':
      return new AppError('E_SEND_KEY_CONFLICT');
    case 'policy':
      return new AppError('E_SEND_POLICY_REFUSED', { message: r.sentence });
    case 'ceiling':
      return new AppError('E_BUDGET_SPENT', { message: r.sentence });
    case 'no-smtp':
      return new AppError('E_SEND_UNAVAILABLE');
    case 'not-permitted':
      return new AppError('E_APP_REFUSED', { details: { permission } });
    case 'state-passed':
      return new AppError('E_STATE_PASSED', { message: r.sentence });
    default:
      return new AppError('E_NOT_FOUND');
  }
}

const caller = (ctx: ToolContext) => ({ requester: ctx.caller.identity, permissions: [...ctx.caller.permissions] });

/** The account and row of a stored email the caller may read; not found otherwise. */
async function locate(ctx: ToolContext, storedEmailId: string): Promise<{ accountId: string; messageId: number }> {
  const messageId = decodeStoredEmailId(storedEmailId);
  if (messageId === null) throw new AppError('E_NOT_FOUND');
  const { email } = await ctx.queryPool.ask(
    { type: 'mail-query.locate-email', scope: ctx.scope, messageId },
    { reply: LocateEmailReply, deadlineMs: ctx.deadlineMs },
  );
  if (email === null) throw new AppError('E_NOT_FOUND');
  return { accountId: email.accountId, messageId };
}

/** The caller's scope must configure the account a new message is sent from. */
function assertAccount(ctx: ToolContext, account: string): void {
  if (!ctx.scope.accounts.some((a) => a.id === account)) throw new AppError('E_NOT_FOUND');
}

async function recordSend(ctx: ToolContext, accountId: string, idempotencyKey: string, composition: Composition): Promise<Record<string, unknown>> {
  const reply = await ctx.outbox.ask(
    { type: 'outbox.record-send', ...caller(ctx), accountId, idempotencyKey, composition },
    { reply: SendReply, deadlineMs: ctx.deadlineMs },
  );
  if (reply.outcome !== 'recorded') throw refusalError(reply, SEND_PERMISSION);
  const { outcome: _, ...answer } = reply;
  return answer;
}

const html = (value: string | undefined): string | null => value ?? null;

const sending: ToolAnnotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true };

export const sendTools: readonly Tool[] = [
  {
    name: 'send_email',
    title: 'Send an email',
    description:
      'Queue a new email from an account. Answers at once with outgoingEmailId; delivery follows (get_outgoing_email). Same idempotencyKey, same record.',
    category: 'sending',
    permission: SEND_PERMISSION,
    annotations: { title: 'Send an email', ...sending },
    input: SendEmailInput,
    run(raw, ctx) {
      const input = raw as z.infer<typeof SendEmailInput>;
      assertAccount(ctx, input.account);
      const { to, cc, bcc, subject, plainTextBody } = input;
      return recordSend(ctx, input.account, input.idempotencyKey, { kind: 'new', to, cc, bcc, subject, plainTextBody, htmlBody: html(input.htmlBody) });
    },
  },
  {
    name: 'reply_to_email',
    title: 'Reply to an email',
    description: 'Queue a reply to a stored email: subject, threading headers and a quote come from it. audience: senderOnly or everyone.',
    category: 'sending',
    permission: SEND_PERMISSION,
    annotations: { title: 'Reply to an email', ...sending },
    input: ReplyToEmailInput,
    async run(raw, ctx) {
      const input = raw as z.infer<typeof ReplyToEmailInput>;
      const original = await locate(ctx, input.storedEmailId);
      return recordSend(ctx, original.accountId, input.idempotencyKey, {
        kind: 'reply',
        original: original.messageId,
        audience: input.audience,
        cc: input.cc,
        plainTextBody: input.plainTextBody,
        htmlBody: html(input.htmlBody),
      });
    },
  },
  {
    name: 'forward_email',
    title: 'Forward an email',
    description: "Queue a forward of a stored email with its attachments, from the email's account.",
    category: 'sending',
    permission: SEND_PERMISSION,
    annotations: { title: 'Forward an email', ...sending },
    input: ForwardEmailInput,
    async run(raw, ctx) {
      const input = raw as z.infer<typeof ForwardEmailInput>;
      const original = await locate(ctx, input.storedEmailId);
      const { to, cc, bcc, plainTextBody } = input;
      return recordSend(ctx, original.accountId, input.idempotencyKey, {
        kind: 'forward',
        original: original.messageId,
        to,
        cc,
        bcc,
        plainTextBody,
        htmlBody: html(input.htmlBody),
      });
    },
  },
  {
    name: 'send_draft',
    title: 'Send a draft',
    description: "Queue a saved draft's exact message; the draft is removed from the drafts folder once sent.",
    category: 'sending',
    permission: SEND_PERMISSION,
    annotations: { title: 'Send a draft', ...sending },
    input: SendDraftInput,
    async run(raw, ctx) {
      const input = raw as z.infer<typeof SendDraftInput>;
      const draftId = Number(input.draftId.slice(1));
      const reply = await ctx.outbox.ask(
        { type: 'outbox.send-draft', ...caller(ctx), draftId, idempotencyKey: input.idempotencyKey ?? `draft:${draftId}` },
        { reply: SendReply, deadlineMs: ctx.deadlineMs },
      );
      if (reply.outcome !== 'recorded') throw refusalError(reply, SEND_PERMISSION);
      const { outcome: _, ...answer } = reply;
      return answer;
    },
  },
  {
    name: 'get_outgoing_email',
    title: 'Read a queued email',
    description: "State of a send you queued: queued, sending, sent, refused or cancelled; attempts and each recipient's state and last server reply code.",
    category: 'sending',
    permission: SEND_PERMISSION,
    annotations: { title: 'Read a queued email', readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    input: OutgoingIdInput,
    async run(raw, ctx) {
      const input = raw as z.infer<typeof OutgoingIdInput>;
      const { outgoing } = await ctx.outbox.ask(
        { type: 'outbox.outgoing', requester: ctx.caller.identity, outgoing: Number(input.outgoingEmailId.slice(1)) },
        { reply: OutgoingReply, deadlineMs: ctx.deadlineMs },
      );
      if (outgoing === null) throw new AppError('E_NOT_FOUND');
      return outgoing;
    },
  },
  {
    name: 'cancel_outgoing_email',
    title: 'Cancel a queued email',
    description: 'Withdraw a send you queued, only while transmission has not begun.',
    category: 'sending',
    permission: SEND_PERMISSION,
    annotations: { title: 'Cancel a queued email', readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    input: OutgoingIdInput,
    async run(raw, ctx) {
      const input = raw as z.infer<typeof OutgoingIdInput>;
      const id = Number(input.outgoingEmailId.slice(1));
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
  },
];

function draftComposition(input: z.infer<typeof SaveDraftInput>, answered: number | null): Composition {
  const htmlBody = html(input.htmlBody);
  const { to, cc, bcc, plainTextBody } = input;
  if (answered === null) return { kind: 'new', to, cc, bcc, subject: input.subject!, plainTextBody, htmlBody };
  if (input.answering === 'forward') return { kind: 'forward', original: answered, to, cc, bcc, plainTextBody, htmlBody };
  return { kind: 'reply', original: answered, audience: input.answering!, cc, plainTextBody, htmlBody };
}

async function saveDraft(ctx: ToolContext, input: z.infer<typeof SaveDraftInput>, draftId: number | null): Promise<Record<string, unknown>> {
  let accountId = input.account ?? '';
  let answered: number | null = null;
  if (input.answeredEmailId !== undefined) {
    const original = await locate(ctx, input.answeredEmailId);
    accountId = original.accountId;
    answered = original.messageId;
  } else assertAccount(ctx, accountId);
  const reply = await ctx.outbox.ask(
    { type: 'outbox.save-draft', ...caller(ctx), accountId, draftId, composition: draftComposition(input, answered) },
    { reply: SaveDraftReply, deadlineMs: ctx.deadlineMs },
  );
  if (reply.outcome !== 'saved') throw refusalError(reply as Refusal, DRAFTS_PERMISSION);
  const { outcome: _, ...answer } = reply;
  return answer;
}

export const draftTools: readonly Tool[] = [
  {
    name: 'save_draft',
    title: 'Save a draft',
    description: 'Save a new draft (account + subject, or answeredEmailId + answering); it is filed in the drafts folder. Answers draftId.',
    category: 'drafts',
    permission: DRAFTS_PERMISSION,
    annotations: { title: 'Save a draft', readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    input: SaveDraftInput,
    run: (raw, ctx) => saveDraft(ctx, raw as z.infer<typeof SaveDraftInput>, null),
  },
  {
    name: 'update_draft',
    title: 'Update a draft',
    description: 'Replace a draft with the whole message stated again; the old copy in the drafts folder is replaced.',
    category: 'drafts',
    permission: DRAFTS_PERMISSION,
    annotations: { title: 'Update a draft', readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
    input: UpdateDraftInput,
    run(raw, ctx) {
      const { draftId, ...rest } = raw as z.infer<typeof UpdateDraftInput>;
      return saveDraft(ctx, rest, Number(draftId.slice(1)));
    },
  },
  {
    name: 'delete_draft',
    title: 'Delete a draft',
    description: 'Delete a draft and its copy in the drafts folder. Answers deleted, or copyLeftBehind when a copy may remain there.',
    category: 'drafts',
    permission: DRAFTS_PERMISSION,
    annotations: { title: 'Delete a draft', readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
    input: DraftIdInput,
    async run(raw, ctx) {
      const input = raw as z.infer<typeof DraftIdInput>;
      const reply = await ctx.outbox.ask(
        { type: 'outbox.delete-draft', ...caller(ctx), draftId: Number(input.draftId.slice(1)) },
        { reply: DeleteDraftReply, deadlineMs: ctx.deadlineMs },
      );
      if (reply.outcome !== 'deleted') throw refusalError(reply as Refusal, DRAFTS_PERMISSION);
      return { draftId: reply.draftId, result: reply.result };
    },
  },
];
