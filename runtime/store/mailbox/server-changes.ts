/**
 * What the mail server changed on mail already stored: flags and keywords,
 * expunges, a new UIDVALIDITY. Sole writer of the rows touched
 * (`messages`, `message_raw`, `search_documents`, `passages`,
 * `passage_vectors`, `repair_requests`, `checkpoints`): the account's sync actor. Each function
 * is one short transaction.
 *
 * A tombstone keeps identity only (account, binding, UIDVALIDITY, UID, local
 * id, when it was stored and tombstoned, and why): server properties and
 * every derived column are emptied and the child rows deleted, explicitly
 * (a libSQL server may not enforce the cascades). Deleting the search
 * document fires the trigger that takes it out of the FTS index.
 *
 * Importable by the sync actor only.
 */
import type { Database } from '../open.ts';
import { many, run, type SqlValue } from '../rows.ts';
import { flagSet, perConnection } from './prepared.ts';

/** `relocated` and `deleted`: a change of the journal moved the message out of the mirror or removed it. */
export type TombstoneReason = 'expunged' | 'uidvalidity-changed' | 'relocated' | 'deleted';
export type FlagChange = { uid: number; flags: string[]; keywords: string[]; modseq: bigint | null };

const emptied = `state = 'tombstoned', tombstoned_at = ?, tombstone_reason = ?, updated_at = ?,
  internal_date = NULL, size = NULL, flags = '[]', keywords = '[]', modseq = NULL, requested_flags = NULL, requested_keywords = NULL,
  header_message_id = NULL, in_reply_to = NULL, references_json = NULL, thread_id = NULL,
  from_json = NULL, to_json = NULL, cc_json = NULL, subject = NULL, sent_at = NULL,
  has_attachments = NULL, attachments_json = NULL, parse_version = NULL, derived_at = NULL`;

/** Statements that tombstone the live rows a WHERE clause selects (same parameters for each). */
function tombstoner(db: Database, where: string) {
  const children = ['message_raw', 'search_documents', 'passage_vectors', 'passages', 'repair_requests'].map((table) =>
    db.prepare(`DELETE FROM ${table} WHERE message_id IN (SELECT id FROM messages WHERE ${where} AND state <> 'tombstoned')`),
  );
  const update = db.prepare(`UPDATE messages SET ${emptied} WHERE ${where} AND state <> 'tombstoned'`);
  return (params: SqlValue[], reason: TombstoneReason, now: number): number => {
    for (const statement of children) run(statement, params);
    return run(update, [now, reason, now, ...params]).changes;
  };
}

const statements = perConnection((db: Database) => ({
  known: db.prepare("SELECT uid FROM messages WHERE binding_id = ? AND uidvalidity = ? AND state <> 'tombstoned' ORDER BY uid"),
  flags: db.prepare("SELECT uid, flags, keywords FROM messages WHERE binding_id = ? AND uidvalidity = ? AND state <> 'tombstoned'"),
  setFlags: db.prepare(
    `UPDATE messages SET flags = ?, keywords = ?, modseq = ifnull(?, modseq), updated_at = ?
     WHERE binding_id = ? AND uidvalidity = ? AND uid = ? AND state <> 'tombstoned'
       AND (flags <> ? OR keywords <> ? OR (? IS NOT NULL AND modseq IS NOT ?))`,
  ),
  advanceModseq: db.prepare(
    `UPDATE checkpoints SET highest_modseq = ?, advanced_at = ?
     WHERE binding_id = ? AND uidvalidity = ? AND (highest_modseq IS NULL OR highest_modseq < ?)`,
  ),
  byUid: tombstoner(db, 'binding_id = ? AND uidvalidity = ? AND uid IN (SELECT value FROM json_each(?))'),
  byId: tombstoner(db, 'id = ?'),
  otherUidValidity: tombstoner(db, 'binding_id = ? AND uidvalidity <> ?'),
  resetCheckpoint: db.prepare('UPDATE checkpoints SET uidvalidity = ?, highest_uid = 0, highest_modseq = NULL, advanced_at = ? WHERE binding_id = ?'),
}));

/** UIDs of the live (not tombstoned) rows, ascending: for expunge sweeps without QRESYNC. */
export function knownUids(db: Database, bindingId: number, uidValidity: number): Uint32Array {
  const rows = many<{ uid: number }>(statements(db).known, [bindingId, uidValidity]);
  const uids = new Uint32Array(rows.length);
  rows.forEach((row, index) => {
    uids[index] = row.uid;
  });
  return uids;
}

/** Flags and keywords of every live row (sorted, without repeats), by UID. */
export function localFlags(db: Database, bindingId: number, uidValidity: number): Map<number, { flags: string[]; keywords: string[] }> {
  const rows = many<{ uid: number; flags: string; keywords: string }>(statements(db).flags, [bindingId, uidValidity]);
  return new Map(rows.map((row) => [row.uid, { flags: JSON.parse(row.flags) as string[], keywords: JSON.parse(row.keywords) as string[] }]));
}

/**
 * Applies flag and keyword changes; returns how many rows changed (a change
 * equal to what is stored, or for a UID not held, counts nothing). Advances
 * the checkpoint's HIGHESTMODSEQ in the same transaction when given and
 * higher, under the same UIDVALIDITY only.
 */
export function applyFlagChanges(
  db: Database,
  bindingId: number,
  uidValidity: number,
  changes: readonly FlagChange[],
  highestModseq: bigint | null,
  now: number,
): number {
  const s = statements(db);
  const apply = db.transaction((): number => {
    let changed = 0;
    for (const change of changes) {
      const flags = flagSet(change.flags);
      const keywords = flagSet(change.keywords);
      const params = [flags, keywords, change.modseq, now, bindingId, uidValidity, change.uid, flags, keywords, change.modseq, change.modseq];
      changed += run(s.setFlags, params).changes;
    }
    if (highestModseq !== null) run(s.advanceModseq, [highestModseq, now, bindingId, uidValidity, highestModseq]);
    return changed;
  });
  return apply.immediate();
}

/** Tombstones the given UIDs; returns how many live rows became tombstones. */
export function tombstone(db: Database, bindingId: number, uidValidity: number, uids: readonly number[], reason: TombstoneReason, now: number): number {
  if (uids.length === 0) return 0;
  const s = statements(db);
  return db.transaction(() => s.byUid([bindingId, uidValidity, JSON.stringify(uids)], reason, now)).immediate();
}

/**
 * The folder's UIDVALIDITY changed: tombstones every live row under any
 * other UIDVALIDITY and resets the checkpoint (when there is one) to the new
 * UIDVALIDITY, UID 0 and no HIGHESTMODSEQ, so the next fetch takes
 * everything again and agents never see a message twice. The epoch is left
 * alone: the run that noticed the change carries on under it.
 */
export function retireUidValidity(db: Database, bindingId: number, newUidValidity: number, now: number): { tombstoned: number } {
  const s = statements(db);
  const apply = db.transaction(() => {
    const tombstoned = s.otherUidValidity([bindingId, newUidValidity], 'uidvalidity-changed', now);
    run(s.resetCheckpoint, [newUidValidity, now, bindingId]);
    return { tombstoned };
  });
  return apply.immediate();
}

/** Inside a caller's transaction: tombstones one live row by its local id; returns whether it was live. */
export function tombstoneMessage(db: Database, messageId: number, reason: TombstoneReason, now: number): boolean {
  return statements(db).byId([messageId], reason, now) === 1;
}

/** For `storeBatch`, inside its transaction: tombstones live rows under another UIDVALIDITY. */
export function retireOtherUidValidities(db: Database, bindingId: number, uidValidity: number, now: number): number {
  return statements(db).otherUidValidity([bindingId, uidValidity], 'uidvalidity-changed', now);
}
