/**
 * From a rule's conclusion to recorded changes: the journal's changes for
 * what the rule asks, recorded through the account's sync actor
 * (`imap-sync.record-changes`), and the history row saying what came of it.
 *
 * - A move names a folder alias; it goes to the server folder the alias is
 *   bound to now (`folder_bindings`), as `relocate`. An alias bound to no
 *   folder records no move (`note: no-folder`); the rule's other changes are
 *   still asked. A move to the folder the message is already in asks
 *   nothing (`already-there`).
 * - Changes go in a fixed order, flags and keywords before the move (they
 *   apply to the message where it is, and the journal follows it).
 * - The request identifier is deterministic: `rule:<Name>:<messageId>` for
 *   the arrival stage, with `:run<id>` for a rule run, so asking again after
 *   a crash is answered with the same jobs (exactly once). A name too long
 *   for the journal's 128 characters is replaced there by its SHA-256.
 *
 * Importable by the mail-rules actor.
 */
import { createHash } from 'node:crypto';
import type { ActorContext } from '../../runtime/actor.ts';
import type { Database } from '../../runtime/store/open.ts';
import { boundPath } from '../../runtime/store/mail-rules/judged-mail.ts';
import type { HistoryRow } from '../../runtime/store/mail-rules/rule-records.ts';
import { type ChangeAsk, RecordChangesReply, syncActorId } from '../imap-sync/protocol.ts';
import type { Conclusion } from './judge.ts';
import { ruleRequester } from './protocol.ts';

/** The journal's limit on a request identifier. */
const REQUEST_ID_MAX = 128;
/** A sync actor answers a record once durable: a short write. */
const RECORD_DEADLINE_MS = 30_000;

export function requestIdOf(rule: string, messageId: number, runId: number | null): string {
  const suffix = `:${messageId}${runId === null ? '' : `:run${runId}`}`;
  const plain = `rule:${rule}${suffix}`;
  if (plain.length <= REQUEST_ID_MAX) return plain;
  return `rule:#${createHash('sha256').update(rule).digest('hex')}${suffix}`;
}

export type Concluded = { row: HistoryRow; changeCount: number };

/** Records one conclusion's changes and says what came of it. */
export async function conclude(
  db: Database,
  ctx: ActorContext,
  at: { account: string; messageId: number; folder: string; runId: number | null },
  conclusion: Conclusion,
): Promise<Concluded> {
  const { ask } = conclusion;
  const changes: ChangeAsk[] = [];
  let note: string | null = null;
  if (ask.seen) changes.push({ kind: 'set-seen', value: true });
  if (ask.flagged) changes.push({ kind: 'set-flagged', value: true });
  if (ask.keywords !== undefined) changes.push({ kind: 'add-keywords', keywords: ask.keywords });
  if (ask.moveTo !== undefined) {
    if (ask.moveTo === at.folder) note = 'already-there';
    else {
      const path = boundPath(db, at.account, ask.moveTo);
      if (path === null) note = 'no-folder';
      else changes.push({ kind: 'relocate', targetPath: path });
    }
  }
  const row: HistoryRow = { ruleName: conclusion.rule, position: conclusion.position, messageId: at.messageId, runId: at.runId, asked: ask, jobIds: [], note };
  if (changes.length === 0) return { row, changeCount: 0 };
  const reply = await ctx.ask(
    syncActorId(at.account),
    {
      type: 'imap-sync.record-changes',
      messageId: at.messageId,
      requester: ruleRequester(conclusion.rule),
      requestId: requestIdOf(conclusion.rule, at.messageId, at.runId),
      changes,
    },
    { reply: RecordChangesReply, deadlineMs: RECORD_DEADLINE_MS },
  );
  if (reply.outcome !== 'recorded') return { row: { ...row, note: reply.outcome }, changeCount: 0 };
  return { row: { ...row, jobIds: reply.changes.map((c) => Number(c.changeId.slice(1))) }, changeCount: reply.changes.length };
}
