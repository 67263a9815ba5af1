/**
 * Re-derivation segments: the cheap route that re-reads stored raw MIME and
 * rewrites only what is derived from it (the message's derived columns, its
 * search document and passages) — never the raw MIME, never server
 * properties. Sole writer of the rows touched: the account's sync actor,
 * one bounded segment per step of the run's job (read a segment, have
 * the parse pool parse it, apply each result).
 *
 * Both states that hold raw MIME are re-read: `stored`, and `unreadable`
 * (a newer parser may read it now; what it still cannot read stays
 * unreadable with no derived rows).
 *
 * Importable through `maintenance.ts`.
 */
import { createHash } from 'node:crypto';
import type { DerivedMessage } from './derived-message.ts';
import type { Database } from '../open.ts';
import { many, run } from '../rows.ts';
import { derivedColumnList, derivedValues, writeDerivedChildren } from './derived.ts';
import { blobOf, perConnection } from './prepared.ts';
import { folderOf } from './scope.ts';

export type SegmentMessage = {
  id: number;
  /** null: the raw MIME row is missing. */
  raw: Uint8Array | null;
  /** false when the raw MIME is missing or does not match its SHA-256 (damaged). */
  sha256ok: boolean;
};

const select = `SELECT m.id, r.mime, r.sha256 FROM messages m LEFT JOIN message_raw r ON r.message_id = m.id
  WHERE m.account_id = ? AND m.id > ? AND m.state IN ('stored', 'unreadable')`;
const setDerived = derivedColumnList.map((column) => `${column} = ?`).join(', ');

const statements = perConnection((db: Database) => ({
  account: db.prepare(`${select} ORDER BY m.id LIMIT ?`),
  folder: db.prepare(`${select} AND m.binding_id IN (SELECT id FROM folder_bindings WHERE account_id = ? AND alias = ?) ORDER BY m.id LIMIT ?`),
  apply: db.prepare(
    `UPDATE messages SET state = ?, ${setDerived}, derived_at = ?, updated_at = ?
     WHERE id = ? AND state IN ('stored', 'unreadable')`,
  ),
  // The derivation writer's first derivation: only a row still waiting for one.
  applyFirst: db.prepare(
    `UPDATE messages SET state = ?, ${setDerived}, derived_at = ?, updated_at = ?
     WHERE id = ? AND state = 'stored' AND parse_version IS NULL`,
  ),
}));

type Row = { id: number; mime: Uint8Array | ArrayBuffer | null; sha256: Uint8Array | ArrayBuffer | null };

/** The next at most `limit` messages of the scope after `afterMessageId`, in id order, with their raw MIME. */
export function rederivationSegment(db: Database, accountId: string, alias: string | null, afterMessageId: number, limit: number): SegmentMessage[] {
  const s = statements(db);
  const folder = folderOf(alias);
  const rows =
    folder === null ? many<Row>(s.account, [accountId, afterMessageId, limit]) : many<Row>(s.folder, [accountId, afterMessageId, accountId, folder, limit]);
  return rows.map((row) => {
    const raw = blobOf(row.mime);
    const sha256 = blobOf(row.sha256);
    return { id: row.id, raw, sha256ok: raw !== null && sha256 !== null && Buffer.from(sha256).equals(createHash('sha256').update(raw).digest()) };
  });
}

/**
 * Rewrites the derived properties of one message from a fresh parse (null:
 * the parser could not read it; it becomes `unreadable` with no derived
 * rows). Returns false, writing nothing, when the message is no longer held
 * with raw MIME (erased, tombstoned or oversized since the segment was read).
 */
export function applyDerivation(db: Database, id: number, parsed: DerivedMessage | null, now: number): boolean {
  return applyDerivations(db, [{ id, parsed }], now) === 1;
}

/**
 * A whole segment's results in one transaction (one commit, one fsync);
 * returns how many were applied. `first`: only rows not derived yet are
 * written (the derivation writer's queue); a row derived, tombstoned or
 * erased since it was read is left as it is.
 */
export function applyDerivations<R extends { id: number; parsed: DerivedMessage | null }>(
  db: Database,
  results: readonly R[],
  now: number,
  mode: 'rederive' | 'first' = 'rederive',
  /** Further writes for a row applied, in the same transaction (the first derivation's contact collection). */
  alsoWrite?: (result: R) => void,
): number {
  const s = statements(db);
  const statement = mode === 'first' ? s.applyFirst : s.apply;
  const apply = db.transaction((): number => {
    let applied = 0;
    for (const result of results) {
      const { id, parsed } = result;
      if (run(statement, [parsed === null ? 'unreadable' : 'stored', ...derivedValues(parsed), now, now, id]).changes === 0) continue;
      writeDerivedChildren(db, id, parsed, true);
      alsoWrite?.(result);
      applied += 1;
    }
    return applied;
  });
  return apply.immediate();
}
