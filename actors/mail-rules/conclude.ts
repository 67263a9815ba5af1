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
 * - A segment's asks go together (`imap-sync.record-changes-many`, one
 *   transaction per RECORD_MANY_MAX messages' asks), each with its own
 *   request identifier.
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
import { type ChangeAsk, RECORD_MANY_MAX, RecordChangesManyReply, type RecordChangesReply, syncActorId } from '../imap-sync/protocol.ts';
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

type At = { account: string; messageId: number; folder: string; runId: number | null };
/** A conclusion with the journal's ask it makes, if any (`ask` null: nothing to record). */
export type Planned = { row: HistoryRow; ask: RecordAsk | null };
type RecordAsk = { messageId: number; requester: string; requestId: string; changes: ChangeAsk[] };

/** What one conclusion asks of the journal, and its history row before the answer. */
export function plan(db: Database, at: At, conclusion: Conclusion): Planned {
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
  if (changes.length === 0) return { row, ask: null };
  const requestId = requestIdOf(conclusion.rule, at.messageId, at.runId);
  return { row, ask: { messageId: at.messageId, requester: ruleRequester(conclusion.rule), requestId, changes } };
}

/**
 * Records the asks of several conclusions (one segment's) through the
 * account's sync actor, RECORD_MANY_MAX a time, each ask in one transaction
 * with the others of its call; says what came of each, in order.
 */
export async function record(ctx: ActorContext, account: string, planned: readonly Planned[]): Promise<Concluded[]> {
  const asking = planned.filter((p) => p.ask !== null);
  const answers = new Map<Planned, RecordChangesReply>();
  for (let i = 0; i < asking.length; i += RECORD_MANY_MAX) {
    const chunk = asking.slice(i, i + RECORD_MANY_MAX);
    const reply = await ctx.ask(
      syncActorId(account),
      { type: 'imap-sync.record-changes-many', asks: chunk.map((p) => p.ask!) },
      { reply: RecordChangesManyReply, deadlineMs: RECORD_DEADLINE_MS },
    );
    for (const [j, p] of chunk.entries()) answers.set(p, reply.replies[j]!);
  }
  return planned.map((p) => {
    const reply = answers.get(p);
    if (reply === undefined) return { row: p.row, changeCount: 0 };
    if (reply.outcome !== 'recorded') return { row: { ...p.row, note: reply.outcome }, changeCount: 0 };
    return { row: { ...p.row, jobIds: reply.changes.map((c) => Number(c.changeId.slice(1))) }, changeCount: reply.changes.length };
  });
}
