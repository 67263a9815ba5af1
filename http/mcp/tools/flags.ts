/**
 * `set_mail_flags` (category `flags`, permission `service.mail.flags.write`):
 * the agents' one write to the mailbox. The call records the asked changes
 * in the account's change journal (one transaction, by the account's sync
 * actor) and answers at once with each change's state; the sync actor then
 * applies them to the server (actors/imap-sync/change-journal.ts). Calling
 * again with the same `requestId` and the same changes answers the same
 * records with their current states, which is how an agent learns that the
 * server has them; other changes under that `requestId` are refused (51004).
 *
 * Each change states the value it writes; a keyword replacement states the
 * whole set (spec: agent-surface "Tools"). Decisions: docs/mcp-tools.md.
 */
import { z } from 'zod';
import { type ChangeAsk, type ChangeView, KEYWORD_ATOM, MAX_CHANGE_KEYWORDS, MAX_KEYWORD_LENGTH } from '../../../actors/imap-sync/protocol.ts';
import { StoredEmailId } from '../../../actors/mail-query/protocol/stored-email-id.ts';
import { AppError } from '../../../runtime/errors.ts';
import { locateEmail } from '../caller-scope.ts';
import { callerKey } from '../message-inputs.ts';
import { answerOf } from '../reply-answer.ts';
import { defineTool, type Tool } from '../tool.ts';

const Keyword = z
  .string()
  .min(1)
  .max(MAX_KEYWORD_LENGTH)
  .regex(KEYWORD_ATOM, 'an IMAP keyword is one atom: no spaces, quotes, parentheses, backslash or ] % * {')
  .transform((k) => k.toLowerCase());

export const SetMailFlagsInput = z
  .strictObject({
    storedEmailId: StoredEmailId,
    seen: z.boolean().optional().describe('Mark read (true) or unread (false)'),
    flagged: z.boolean().optional().describe('Flag (true) or unflag (false)'),
    keywordChange: z.enum(['add', 'remove', 'replace']).optional().describe('What to do with keywords; replace states the whole set'),
    keywords: z
      .array(Keyword)
      .max(MAX_CHANGE_KEYWORDS)
      .optional()
      .describe(`IMAP keywords (case-insensitive, at most ${MAX_CHANGE_KEYWORDS}); empty only with replace`),
    requestId: callerKey(128).optional().describe('Your identifier for this request: repeat it to read the states again'),
  })
  .superRefine((input, ctx) => {
    if (input.seen === undefined && input.flagged === undefined && input.keywordChange === undefined)
      ctx.addIssue({ code: 'custom', message: 'state at least one of seen, flagged or keywordChange', path: [] });
    if ((input.keywordChange === undefined) !== (input.keywords === undefined))
      ctx.addIssue({ code: 'custom', message: 'keywordChange and keywords go together', path: ['keywords'] });
    if (input.keywords?.length === 0 && input.keywordChange !== 'replace')
      ctx.addIssue({ code: 'custom', message: 'an empty list is only meaningful with replace', path: ['keywords'] });
  });
export type SetMailFlagsInput = z.infer<typeof SetMailFlagsInput>;

const KEYWORD_KINDS = { add: 'add-keywords', remove: 'remove-keywords', replace: 'set-keywords' } as const;

/** The journal's changes for a call, in a fixed order (so a repeated request compares equal). */
export function changesOf(input: SetMailFlagsInput): ChangeAsk[] {
  const changes: ChangeAsk[] = [];
  if (input.seen !== undefined) changes.push({ kind: 'set-seen', value: input.seen });
  if (input.flagged !== undefined) changes.push({ kind: 'set-flagged', value: input.flagged });
  if (input.keywordChange !== undefined) {
    const keywords = [...new Set(input.keywords ?? [])].sort();
    changes.push({ kind: KEYWORD_KINDS[input.keywordChange], keywords });
  }
  return changes;
}

/** One recorded change as the agent reads it: what it writes, and whether the server has it yet. */
function recordedChange(view: ChangeView): Record<string, unknown> {
  const effect = view.effect;
  return {
    changeId: view.changeId,
    change: view.change,
    ...(effect.kind === 'set-seen' ? { seen: effect.value } : {}),
    ...(effect.kind === 'set-flagged' ? { flagged: effect.value } : {}),
    ...('keywords' in effect ? { keywords: effect.keywords } : {}),
    state: view.state,
    ...(view.outcome !== null ? { outcome: view.outcome } : {}),
  };
}

export const flagsTools: readonly Tool[] = [
  defineTool({
    name: 'set_mail_flags',
    title: 'Set mail flags',
    description:
      'Mark an email read/unread, flagged/unflagged, or change its keywords. Recorded at once and applied to the mail server shortly after; each change answers its state (pending, converging, completed, dead-lettered).',
    category: 'flags',
    permission: 'service.mail.flags.write',
    annotations: { title: 'Set mail flags', readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true },
    input: SetMailFlagsInput,
    async run(input, ctx) {
      const { accountId, messageId } = await locateEmail(ctx, input.storedEmailId);
      const reply = await ctx.recordChanges(accountId, { messageId, requestId: input.requestId ?? null, changes: changesOf(input) });
      const { changes } = answerOf(reply, 'recorded', (r) => new AppError(r.outcome === 'not-found' ? 'E_NOT_FOUND' : 'E_TOOL_REQUEST_CONFLICT'));
      return { storedEmailId: input.storedEmailId, accountId, recordedChanges: changes.map(recordedChange) };
    },
  }),
];
