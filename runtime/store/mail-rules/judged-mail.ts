/**
 * What the mail-rules stage reads of the mailbox (migration 1's `messages`
 * and `folder_bindings`, written by the sync actors and the derivation
 * writer): the messages to judge in id order, the highest id stored, and
 * the server folder an alias is bound to. Reads only.
 *
 * A message is judged once derived (`derived_at` set: its parsed headers
 * exist) and while live (not tombstoned), in a binding not retired. Which
 * folders' mail is judged at all (the folder's role) is the actor's
 * decision: each row carries its alias.
 *
 * Importable by the mail-rules actor.
 */
import type { Database } from '../open.ts';
import { many, one } from '../rows.ts';
import { perConnection } from '../mailbox/prepared.ts';

export type JudgedMessage = { id: number; alias: string; fromJson: string | null; subject: string | null };

type Row = { id: number; alias: string; from_json: string | null; subject: string | null };

const statements = perConnection((db: Database) => ({
  // `+m.account_id`: the id range is the index here. Left to itself the planner read every message of the
  // account through messages_listing (account_id first) and sorted them, each segment: quadratic over a mirror
  // (docs/performance.md, "initial mirror CPU with 20 rules").
  segment: db.prepare(
    `SELECT m.id, b.alias, m.from_json, m.subject FROM messages m JOIN folder_bindings b ON b.id = m.binding_id
     WHERE +m.account_id = ? AND m.id > ? AND m.id <= ? AND m.state <> 'tombstoned' AND m.derived_at IS NOT NULL AND b.retired_at IS NULL
     ORDER BY m.id LIMIT ?`,
  ),
  // The highest id whose headers exist: the stage never passes an underived message (derivation goes in id order).
  lastDerived: db.prepare("SELECT max(id) AS id FROM messages WHERE account_id = ? AND derived_at IS NOT NULL AND state <> 'tombstoned'"),
  lastStored: db.prepare('SELECT max(id) AS id FROM messages WHERE account_id = ?'),
  countsByAlias: db.prepare(
    `SELECT b.alias, count(*) AS n FROM messages m JOIN folder_bindings b ON b.id = m.binding_id
     WHERE m.account_id = ? AND m.id <= ? AND m.state <> 'tombstoned' AND b.retired_at IS NULL GROUP BY b.alias`,
  ),
  path: db.prepare(
    'SELECT remote_path FROM folder_bindings WHERE account_id = ? AND alias = ? AND retired_at IS NULL AND unresolved_since IS NULL AND remote_path IS NOT NULL',
  ),
}));

/** Up to `limit` judgeable messages of the account with `afterId < id <= throughId`, in id order. */
export function judgedSegment(db: Database, accountId: string, afterId: number, throughId: number, limit: number): JudgedMessage[] {
  return many<Row>(statements(db).segment, [accountId, afterId, throughId, limit]).map((r) => ({
    id: r.id,
    alias: r.alias,
    fromJson: r.from_json,
    subject: r.subject,
  }));
}

/** The highest live derived message id of the account (0: none). */
export function lastDerivedId(db: Database, accountId: string): number {
  return one<{ id: number | null }>(statements(db).lastDerived, [accountId])?.id ?? 0;
}

/** The highest message id the account ever stored (0: none). */
export function lastStoredId(db: Database, accountId: string): number {
  return one<{ id: number | null }>(statements(db).lastStored, [accountId])?.id ?? 0;
}

/** Live messages per folder alias with `id <= throughId` (a run's total is the sum over the folders it judges). */
export function liveCountsByAlias(db: Database, accountId: string, throughId: number): Map<string, number> {
  return new Map(many<{ alias: string; n: number }>(statements(db).countsByAlias, [accountId, throughId]).map((r) => [r.alias, r.n]));
}

/** The server folder the alias is bound to now; null when it is bound to none (unresolved, or never mapped). */
export function boundPath(db: Database, accountId: string, alias: string): string | null {
  return one<{ remote_path: string }>(statements(db).path, [accountId, alias])?.remote_path ?? null;
}
