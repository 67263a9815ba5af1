/**
 * Storing a batch of fetched messages with the checkpoint that covers them,
 * in ONE transaction: either every row of the batch and the advance are
 * durable, or none is. Sole writer of `messages`, `message_raw`,
 * `search_documents`, `passages` and `checkpoints`: the account's sync actor.
 *
 * The batch is refused (nothing written) when the binding's progress moved
 * under the run: a rewind bumped the epoch since the run read it, a
 * checkpoint appeared that the run did not know of, or the checkpoint is
 * under another UIDVALIDITY (call `retireUidValidity` first). A UID already
 * held for the binding and UIDVALIDITY is not stored again; its server
 * properties (flags, keywords, modseq, internal date) are refreshed, which is
 * what a refetch after a rewind is for.
 *
 * Importable by the sync actor only.
 */
import { createHash } from 'node:crypto';
import type { DerivedMessage } from './derived-message.ts';
import type { Database } from '../open.ts';
import { one, run } from '../rows.ts';
import { derivedColumnList, derivedValues, writeDerivedChildren } from './derived.ts';
import { flagSet, perConnection } from './prepared.ts';
import { retireOtherUidValidities } from './server-changes.ts';

export type FetchedMessage = {
  uid: number;
  flags: string[];
  keywords: string[];
  modseq: bigint | null;
  internalDate: number | null;
  size: number;
  state: 'stored' | 'oversized' | 'unreadable';
  /** Raw MIME: required for stored and unreadable, null for oversized. */
  raw: Uint8Array | null;
  /** Only for stored; null there means "not derived yet" (parse_version NULL). */
  parsed: DerivedMessage | null;
};

export type StoreBatchInput = {
  accountId: string;
  bindingId: number;
  uidValidity: number;
  /**
   * The epoch the run started under (`Checkpoint.epoch`, or `progressEpoch`).
   * null: the run found no checkpoint — accepted only while there still is
   * none, so pass the `epoch` an accepted batch returns to the next one.
   */
  expectedEpoch: number | null;
  messages: readonly FetchedMessage[];
  advanceTo: { lastUid: number; highestModseq: bigint | null };
  now: number;
};

export type StoreBatchResult =
  | {
      ok: true;
      /** Messages inserted. */
      inserted: number;
      /** UIDs already held whose server properties were refreshed. */
      refreshed: number;
      /** Live rows under another UIDVALIDITY tombstoned because the binding had no checkpoint. */
      retired: number;
      /** The epoch to pass as `expectedEpoch` with the run's next batch. */
      epoch: number;
    }
  | { ok: false; reason: 'checkpoint-moved' };

const derivedColumns = derivedColumnList.join(', ');
const derivedPlaceholders = derivedColumnList.map(() => '?').join(', ');

const statements = perConnection((db: Database) => ({
  progress: db.prepare(
    `SELECT b.account_id, b.progress_epoch, c.uidvalidity
     FROM folder_bindings b LEFT JOIN checkpoints c ON c.binding_id = b.id WHERE b.id = ?`,
  ),
  insertMessage: db.prepare(
    `INSERT INTO messages (account_id, binding_id, uidvalidity, uid, state, internal_date, size, flags, keywords, modseq,
       ${derivedColumns}, derived_at, stored_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ${derivedPlaceholders}, ?, ?, ?)
     ON CONFLICT (binding_id, uidvalidity, uid) DO NOTHING`,
  ),
  refresh: db.prepare(
    `UPDATE messages SET flags = ?, keywords = ?, modseq = ifnull(?, modseq), internal_date = ifnull(?, internal_date), updated_at = ?
     WHERE binding_id = ? AND uidvalidity = ? AND uid = ? AND state <> 'tombstoned'`,
  ),
  insertRaw: db.prepare('INSERT INTO message_raw (message_id, mime, sha256, stored_at) VALUES (?, ?, ?, ?)'),
  advance: db.prepare(
    `INSERT INTO checkpoints (binding_id, uidvalidity, highest_uid, highest_modseq, advanced_at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (binding_id) DO UPDATE SET
       highest_uid = max(highest_uid, excluded.highest_uid),
       highest_modseq = CASE
         WHEN excluded.highest_modseq IS NULL THEN highest_modseq
         WHEN highest_modseq IS NULL OR excluded.highest_modseq > highest_modseq THEN excluded.highest_modseq
         ELSE highest_modseq END,
       advanced_at = excluded.advanced_at`,
  ),
}));

export function storeBatch(db: Database, input: StoreBatchInput): StoreBatchResult {
  for (const message of input.messages) check(message);
  const s = statements(db);
  const apply = db.transaction((): StoreBatchResult => {
    const progress = one<{ account_id: string; progress_epoch: number; uidvalidity: number | null }>(s.progress, [input.bindingId]);
    if (progress === undefined) throw new Error(`folder binding ${input.bindingId} does not exist`);
    if (progress.account_id !== input.accountId) throw new Error(`folder binding ${input.bindingId} belongs to another account`);
    const hasCheckpoint = progress.uidvalidity !== null;
    const moved =
      input.expectedEpoch === null
        ? hasCheckpoint
        : progress.progress_epoch !== input.expectedEpoch || (hasCheckpoint && progress.uidvalidity !== input.uidValidity);
    if (moved) return { ok: false, reason: 'checkpoint-moved' };
    // Without a checkpoint (first run, or after a rewind) nothing says which
    // UIDVALIDITY the held rows belong to; rows under another one are stale
    // and would show beside their refetched copies.
    const retired = hasCheckpoint ? 0 : retireOtherUidValidities(db, input.bindingId, input.uidValidity, input.now);
    let inserted = 0;
    let refreshed = 0;
    for (const m of input.messages) {
      const flags = flagSet(m.flags);
      const keywords = flagSet(m.keywords);
      const parsed = m.state === 'stored' ? m.parsed : null;
      const result = run(s.insertMessage, [
        input.accountId,
        input.bindingId,
        input.uidValidity,
        m.uid,
        m.state,
        m.internalDate,
        m.size,
        flags,
        keywords,
        m.modseq,
        ...derivedValues(parsed),
        parsed === null ? null : input.now,
        input.now,
        input.now,
      ]);
      if (result.changes === 0) {
        refreshed += run(s.refresh, [flags, keywords, m.modseq, m.internalDate, input.now, input.bindingId, input.uidValidity, m.uid]).changes;
        continue;
      }
      inserted += 1;
      const id = Number(result.lastInsertRowid);
      if (m.raw !== null) run(s.insertRaw, [id, m.raw, createHash('sha256').update(m.raw).digest(), input.now]);
      if (parsed !== null) writeDerivedChildren(db, id, parsed, false);
    }
    run(s.advance, [input.bindingId, input.uidValidity, input.advanceTo.lastUid, input.advanceTo.highestModseq, input.now]);
    return { ok: true, inserted, refreshed, retired, epoch: progress.progress_epoch };
  });
  return apply.immediate();
}

// Programming errors of the caller, refused before the transaction begins.
function check(m: FetchedMessage): void {
  if (m.state === 'oversized' ? m.raw !== null : m.raw === null) {
    throw new Error(`a fetched message in state ${m.state} must ${m.state === 'oversized' ? 'not ' : ''}carry raw MIME (UID ${m.uid})`);
  }
  if (m.state !== 'stored' && m.parsed !== null) throw new Error(`only a stored message carries parsed properties (UID ${m.uid})`);
}
