/**
 * Reading folder progress. Sole writer of `checkpoints` (and of
 * `folder_bindings.progress_epoch`): the account's sync actor — the advance
 * in `store-batch.ts` and `server-changes.ts`, in the same transaction as the
 * rows it covers; the reset in `retireUidValidity`; the deletes of rewind and
 * folder erasure in `maintenance.ts`. This module only reads.
 *
 * The epoch is the binding's `progress_epoch`, bumped by every rewind that
 * discards the binding's progress. A run remembers the epoch it started
 * under and passes it with each batch; a batch under an older epoch is
 * refused, so a rewind during a run is never overwritten by it.
 *
 * Importable by the sync actor and the status query.
 */
import type { Database } from '../open.ts';
import { one } from '../rows.ts';
import { perConnection } from './prepared.ts';

export type Checkpoint = { bindingId: number; uidValidity: number; lastUid: number; highestModseq: bigint | null; advancedAt: number; epoch: number };

type Row = { binding_id: bigint; uidvalidity: bigint; highest_uid: bigint; highest_modseq: bigint | null; advanced_at: bigint; progress_epoch: bigint };

const statements = perConnection((db: Database) => ({
  // safeIntegers: HIGHESTMODSEQ may exceed 2^53.
  read: db
    .prepare(
      `SELECT c.binding_id, c.uidvalidity, c.highest_uid, c.highest_modseq, c.advanced_at, b.progress_epoch
       FROM checkpoints c JOIN folder_bindings b ON b.id = c.binding_id WHERE c.binding_id = ?`,
    )
    .safeIntegers(true),
  epoch: db.prepare('SELECT progress_epoch FROM folder_bindings WHERE id = ?'),
}));

export function readCheckpoint(db: Database, bindingId: number): Checkpoint | null {
  const row = one<Row>(statements(db).read, [bindingId]);
  if (row === undefined) return null;
  return {
    bindingId: Number(row.binding_id),
    uidValidity: Number(row.uidvalidity),
    lastUid: Number(row.highest_uid),
    highestModseq: row.highest_modseq,
    advancedAt: Number(row.advanced_at),
    epoch: Number(row.progress_epoch),
  };
}

/**
 * The binding's epoch, also when it holds no checkpoint. A run that found no
 * checkpoint may pass it as `expectedEpoch` instead of null; every batch of
 * the run, the first included, is then checked the same way.
 */
export function progressEpoch(db: Database, bindingId: number): number {
  const row = one<{ progress_epoch: number }>(statements(db).epoch, [bindingId]);
  if (row === undefined) throw new Error(`folder binding ${bindingId} does not exist`);
  return row.progress_epoch;
}
