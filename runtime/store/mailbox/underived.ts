/**
 * Stored mail not derived yet: the derivation writer's queue. The sync
 * actor stores raw MIME with `parse_version` NULL (store-batch.ts); the
 * derivation actor reads those rows back in id order, parses them on its
 * own (system) thread, and writes each one's derived columns, search document and
 * passages in one transaction (`deriveFirst`, the same writes as
 * re-derivation). A crash anywhere leaves a row either underived (taken
 * again) or derived (never taken again): nothing is lost or written twice.
 *
 * Writers: the derivation actor takes a row from underived to derived, and
 * only that (`deriveFirst` touches no row derived, tombstoned or erased
 * since it was read); everything else about the row stays the account's
 * sync actor's. In the same transaction it records the row's correspondents
 * as collected contacts (runtime/store/contacts/book.ts `collect`), so a
 * message's contacts are collected exactly once, with it, whatever crashes:
 * a first derivation only, never a re-derivation (which would bring back
 * what the owner erased: docs/contacts.md "Collection").
 *
 * The queue is the partial index `messages_underived` (account_id, id),
 * so it costs no table and a derived row leaves it by its update.
 *
 * Importable by the derivation actor and the read side (the lag counts).
 */
import type { DerivedMessage } from './derived-message.ts';
import { collect, type Correspondent } from '../contacts/book.ts';
import type { Database } from '../open.ts';
import { many, one } from '../rows.ts';
import { blobOf, perConnection } from './prepared.ts';

import { applyDerivations } from './rederivation.ts';

export type UnderivedMessage = {
  id: number;
  bindingId: number;
  uid: number;
  /** The alias of the folder it is in (what its correspondents are: the sent folder's are its recipients). */
  alias: string;
  /** false: the raw MIME row is missing (a defect elsewhere); left underived and reported as lag. */
  hasRaw: boolean;
};

type Head = { id: number; binding_id: number; uid: number; alias: string; bytes: number | null };

/**
 * A folder's mail not derived yet. Left to itself the planner seeks (binding_id, state) and reads every stored message
 * of the folder: 7 ms a call at 50,000, paid by every search and listing (their freshness). The partial index holds
 * only what is not derived yet. Exported for the test of its plan.
 */
export const LAG_OF_BINDING =
  "SELECT count(*) AS count FROM messages INDEXED BY messages_underived WHERE account_id = ? AND binding_id = ? AND parse_version IS NULL AND state = 'stored'";

const statements = perConnection((db: Database) => ({
  heads: db.prepare(
    `SELECT m.id, m.binding_id, m.uid, (SELECT b.alias FROM folder_bindings b WHERE b.id = m.binding_id) AS alias, (SELECT length(r.mime) FROM message_raw r WHERE r.message_id = m.id) AS bytes
     FROM messages m WHERE m.account_id = ? AND m.id > ? AND m.id <= ? AND m.parse_version IS NULL AND m.state = 'stored'
     ORDER BY m.id LIMIT ?`,
  ),
  raw: db.prepare('SELECT mime FROM message_raw WHERE message_id = ?'),
  lastId: db.prepare("SELECT max(id) AS id FROM messages WHERE account_id = ? AND parse_version IS NULL AND state = 'stored'"),
  lagOfBinding: db.prepare(LAG_OF_BINDING),
}));

export type SegmentBounds = {
  /** Only rows with a larger id (the pass's cursor). */
  afterId: number;
  /** Only rows up to this id. */
  throughId: number;
  /** At most this many rows... */
  limit: number;
  /** ...and about this many bytes of raw MIME (the first row is always taken). */
  maxBytes: number;
};

/** The next underived messages of the account, in id order; each one's raw MIME is read by `rawMimeOf` when it is parsed. */
export function underivedSegment(db: Database, accountId: string, bounds: SegmentBounds): UnderivedMessage[] {
  const heads = many<Head>(statements(db).heads, [accountId, bounds.afterId, bounds.throughId, bounds.limit]);
  const taken: UnderivedMessage[] = [];
  let bytes = 0;
  for (const head of heads) {
    const size = head.bytes ?? 0;
    if (taken.length > 0 && bytes + size > bounds.maxBytes) break;
    bytes += size;
    taken.push({ id: head.id, bindingId: head.binding_id, uid: head.uid, alias: head.alias, hasRaw: head.bytes !== null });
  }
  return taken;
}

/**
 * One message's raw MIME, or null when its row is gone (erased since the
 * segment was read). Read one message at a time as it is parsed, so each
 * message's bytes die young: read for a whole segment, they outlived the
 * thread's scavenges and waited for a major collection.
 */
export function rawMimeOf(db: Database, messageId: number): Uint8Array | null {
  const row = one<{ mime: Uint8Array | ArrayBuffer }>(statements(db).raw, [messageId]);
  return row === undefined ? null : blobOf(row.mime);
}

/** The highest id of the account's underived mail, or 0 when none waits. */
export function lastUnderivedId(db: Database, accountId: string): number {
  return one<{ id: number | null }>(statements(db).lastId, [accountId])?.id ?? 0;
}

/** Stored emails of one binding not derived yet (neither listed nor searchable until they are). */
export function underivedInBinding(db: Database, accountId: string, bindingId: number): number {
  return one<{ count: number }>(statements(db).lagOfBinding, [accountId, bindingId])?.count ?? 0;
}

/** One row's first derivation, and the correspondents it makes collected contacts (none: nothing collected). */
export type FirstDerivation = { id: number; parsed: DerivedMessage | null; correspondents?: readonly Correspondent[] };

/**
 * Writes the first derivation of a segment's rows in one transaction, each
 * applied row's correspondents collected with it; returns how many were
 * still waiting for it.
 */
export function deriveFirst(db: Database, results: readonly FirstDerivation[], now: number): number {
  return applyDerivations(db, results, now, 'first', (result) => {
    if (result.correspondents !== undefined && result.correspondents.length > 0) collect(db, result.correspondents, now);
  });
}
