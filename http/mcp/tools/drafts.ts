/**
 * The `drafts` tools (permission `service.mail.drafts.write`): save,
 * update and delete a draft. The outbox actor records each revision
 * (composing the MIME once) and files it in the account's drafts folder
 * through the change journal; the call answers with the record. A reply or
 * forward draft names a stored email the caller may read, located first by
 * the query pool. Inputs: DECISIONS.md "Write tools' inputs"; bounds and
 * refusals: docs/sending.md.
 */
import { z } from 'zod';
import { StoredEmailId } from '../../../actors/mail-query/protocol/stored-email-id.ts';
import { type Composition, DeleteDraftReply, DRAFTS_PERMISSION, SaveDraftReply } from '../../../actors/outbox/protocol.ts';
import { locateEmail, requireAccount } from '../caller-scope.ts';
import { Addresses, bodies, DraftId, draftRowIn, htmlOf, Subject } from '../message-inputs.ts';
import { callerOf, outboxRefusal } from '../outbox-asks.ts';
import { answerOf } from '../reply-answer.ts';
import { defineTool, type Tool, type ToolContext } from '../tool.ts';

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

/** What a draft is, decided once from its members: a new message from an account, or a reply or forward of a stored email. */
type Drafted =
  | { kind: 'new'; account: string; subject: string }
  | { kind: 'reply'; answeredEmailId: string; audience: 'senderOnly' | 'everyone' }
  | { kind: 'forward'; answeredEmailId: string };

type DraftMembers = {
  account?: string | undefined;
  subject?: string | undefined;
  answeredEmailId?: string | undefined;
  answering?: 'senderOnly' | 'everyone' | 'forward' | undefined;
  to: string[];
  bcc: string[];
};

/** The members that go together, checked (51001 naming what is missing) and read as one `Drafted`. */
function drafted<T extends DraftMembers>(input: T, ctx: z.RefinementCtx): T & { drafted: Drafted } {
  const refuse = (message: string, path: PropertyKey[] = []): never => {
    ctx.addIssue({ code: 'custom', message, path });
    return z.NEVER;
  };
  const { account, subject, answeredEmailId, answering } = input;
  const asNew = account !== undefined || subject !== undefined;
  const asAnswer = answeredEmailId !== undefined || answering !== undefined;
  if (asNew === asAnswer) return refuse('state either account and subject, or answeredEmailId and answering');
  if (asNew) {
    if (account === undefined || subject === undefined) return refuse('account and subject go together');
    return { ...input, drafted: { kind: 'new', account, subject } };
  }
  if (answeredEmailId === undefined || answering === undefined) return refuse('answeredEmailId and answering go together');
  if (answering === 'forward') return { ...input, drafted: { kind: 'forward', answeredEmailId } };
  if (input.to.length + input.bcc.length > 0) return refuse('a reply draft takes its audience from the original: only cc may be added', ['to']);
  return { ...input, drafted: { kind: 'reply', answeredEmailId, audience: answering } };
}

export const SaveDraftInput = z.strictObject(DraftFields).transform(drafted);
export const UpdateDraftInput = z.strictObject({ draftId: DraftId, ...DraftFields }).transform(drafted);
export const DraftIdInput = z.strictObject({ draftId: DraftId });

/** Save a new draft (`draftId` null) or restate one whole, and answer with its record. */
async function saveDraft(ctx: ToolContext, input: z.output<typeof SaveDraftInput>, draftId: number | null) {
  const { to, cc, bcc, plainTextBody } = input;
  const htmlBody = htmlOf(input.htmlBody);
  let accountId: string;
  let composition: Composition;
  const about = input.drafted;
  if (about.kind === 'new') {
    requireAccount(ctx, about.account);
    accountId = about.account;
    composition = { kind: 'new', to, cc, bcc, subject: about.subject, plainTextBody, htmlBody };
  } else {
    const original = await locateEmail(ctx, about.answeredEmailId);
    accountId = original.accountId;
    composition =
      about.kind === 'forward'
        ? { kind: 'forward', original: original.messageId, to, cc, bcc, plainTextBody, htmlBody }
        : { kind: 'reply', original: original.messageId, audience: about.audience, cc, plainTextBody, htmlBody };
  }
  const reply = await ctx.outbox.ask(
    { type: 'outbox.save-draft', ...callerOf(ctx), accountId, draftId, composition },
    { reply: SaveDraftReply, deadlineMs: ctx.deadlineMs },
  );
  return answerOf(reply, 'saved', (r) => outboxRefusal(r, DRAFTS_PERMISSION));
}

export const draftsTools: readonly Tool[] = [
  defineTool({
    name: 'save_draft',
    title: 'Save a draft',
    description: 'Save a new draft (account + subject, or answeredEmailId + answering); it is filed in the drafts folder. Answers draftId.',
    category: 'drafts',
    permission: DRAFTS_PERMISSION,
    annotations: { title: 'Save a draft', readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    input: SaveDraftInput,
    run: (input, ctx) => saveDraft(ctx, input, null),
  }),
  defineTool({
    name: 'update_draft',
    title: 'Update a draft',
    description: 'Replace a draft with the whole message stated again; the old copy in the drafts folder is replaced.',
    category: 'drafts',
    permission: DRAFTS_PERMISSION,
    annotations: { title: 'Update a draft', readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
    input: UpdateDraftInput,
    run: (input, ctx) => saveDraft(ctx, input, draftRowIn(input.draftId)),
  }),
  defineTool({
    name: 'delete_draft',
    title: 'Delete a draft',
    description: 'Delete a draft and its copy in the drafts folder. Answers deleted, or copyLeftBehind when a copy may remain there.',
    category: 'drafts',
    permission: DRAFTS_PERMISSION,
    annotations: { title: 'Delete a draft', readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
    input: DraftIdInput,
    async run(input, ctx) {
      const reply = await ctx.outbox.ask(
        { type: 'outbox.delete-draft', ...callerOf(ctx), draftId: draftRowIn(input.draftId) },
        { reply: DeleteDraftReply, deadlineMs: ctx.deadlineMs },
      );
      return answerOf(reply, 'deleted', (r) => outboxRefusal(r, DRAFTS_PERMISSION));
    },
  }),
];
