/**
 * Passage vectors by embedding generation (migration 0007), and the exact,
 * filtered nearest-message search over them (issue 15).
 *
 * - Generations: `beginGeneration` starts building one for a profile (a
 *   generation still building for another profile is retired),
 *   `promoteGeneration` makes it serve and retires the one it replaces, in one
 *   transaction, so a search always finds one serving generation or none;
 *   `purgeRetiredVectors` deletes a retired generation's vectors in bounded
 *   passes.
 * - `writeVectors`: a batch of one generation in one transaction. The
 *   message, account, binding and received time are copied from the store
 *   as it is then: a passage that no longer exists (its message tombstoned,
 *   erased or re-derived meanwhile) gets no vector. The batch's rows carry
 *   the generation's next write sequence number (migration 0009).
 * - `vectorsInKeyOrder`, `lastVectorSeq`, `vectorsWrittenAfter`: a reader
 *   holding a generation in memory (the query pool's candidate index,
 *   actors/mail-query/vector-index.ts) loads it front to back once, then
 *   reads only the rows written since; `passageDistances` rescores its
 *   candidates exactly.
 * - `deleteMessageVectors`: every generation's vectors of some messages. The
 *   sync actor's tombstone, erasure and re-derivation statements delete them
 *   too, with the other child rows (server-changes.ts, erasure.ts, derived.ts).
 * - `nearestMessages`: messages ranked by their nearest passage, exactly.
 *   The scope (bindings, received-time range) is an index range read first;
 *   the distance is computed for every row in it, in SQL
 *   (`vector_distance_cos` / `vector_distance_l2`), which measured faster
 *   than reading the rows into a Float32Array scan (docs/semantic-search.md).
 *   Ties: smaller distance, then the later received, then the larger id.
 *   The rows are ranked in SQL and deduplicated by message here.
 *
 * Writers: the embedding actor (generations and vectors); the account's sync
 * actor (deletions, and `moveMessageVectors` when it relocates a message). Importable by the embedding actor's and the query
 * actor's store access, and by modules under `runtime/store/mailbox/`.
 */
import type { Database } from '../open.ts';
import { many, one, run, type SqlValue } from '../rows.ts';
import { perConnection } from './prepared.ts';

export type Distance = 'cosine' | 'l2';
export type GenerationProfile = { provider: string; model: string; dimensions: number; distance: Distance };
export type GenerationState = 'building' | 'serving' | 'retired';
/** Where an OpenAI-compatible generation's provider is reached (null for the local model); a secret reference, never the secret. */
export type GenerationEndpoint = { baseAddress: string | null; apiKeyRef: string | null };
export type Generation = GenerationProfile &
  GenerationEndpoint & {
    id: number;
    state: GenerationState;
    createdAt: number;
    servingAt: number | null;
    retiredAt: number | null;
  };
/** `textHash`: SHA-256 of the normalised text the vector was made from (migration 0018), found again by `vectorsOfTexts`. */
export type PassageVector = { passageId: number; vector: Float32Array; textHash?: Uint8Array };
export type NearestQuery = {
  generation: number;
  queryVector: Float32Array;
  /** The visible bindings; none finds nothing. */
  bindingIds: readonly number[];
  /** Received at or after (epoch ms); undated mail is left out when given. */
  receivedFrom?: number;
  /** Received before (epoch ms); undated mail counts as before any instant. */
  receivedBelow?: number;
  limit: number;
};
export type NearestMessage = { messageId: number; bindingId: number; distance: number };

type GenerationRow = {
  id: number;
  provider: string;
  model: string;
  dimensions: number;
  distance: Distance;
  state: GenerationState;
  created_at: number;
  serving_at: number | null;
  retired_at: number | null;
  base_address: string | null;
  api_key_ref: string | null;
};

const inJson = 'IN (SELECT value FROM json_each(?))';
const scope = `generation_id = ? AND binding_id ${inJson} AND received >= ? AND received < ?`;
/**
 * The nearest rows of the scope, in the order of the ranking: the first row
 * of each message stands for its nearest passage, and since received time
 * and id are the message's own, messages first appear in ranking order.
 * (Grouping by message in SQL measured twice as slow: its sorter runs over
 * every row of the scope.)
 */
const nearest = (fn: string) =>
  `SELECT message_id AS messageId, binding_id AS bindingId, ${fn}(vector, ?) AS distance
   FROM passage_vectors WHERE ${scope}
   ORDER BY distance, received DESC, message_id DESC LIMIT ?`;

/**
 * Exact distances of some passages (candidates of the in-memory index),
 * within the scope. The candidate list is the outer loop (CROSS JOIN): one
 * probe of the (passage, generation) key each (the unary `+` keeps the
 * scope out of the probe: an IN list would multiply it); `passage_id IN (…)` let the
 * planner read the generation's whole range instead.
 */
const rescore = (fn: string) =>
  `SELECT v.passage_id AS passageId, v.message_id AS messageId, v.binding_id AS bindingId, ${fn}(v.vector, ?) AS distance
   FROM json_each(?) c CROSS JOIN passage_vectors v ON v.passage_id = c.value AND v.generation_id = ?
   WHERE +v.binding_id ${inJson} AND +v.received >= ? AND +v.received < ?
   ORDER BY distance, v.received DESC, v.message_id DESC`;

/**
 * The candidates' messages by their nearest passage, `limit` of them, and
 * how many candidates came back: the rows stay in SQL, grouped there, and
 * only the messages asked reach JavaScript (handing over 1,000 rows took
 * about a third of `rescore`'s time).
 */
const nearestOfCandidates = (fn: string) =>
  `WITH scored AS MATERIALIZED (
     SELECT v.message_id AS messageId, v.binding_id AS bindingId, v.received AS received, ${fn}(v.vector, ?) AS distance
     FROM json_each(?) c CROSS JOIN passage_vectors v ON v.passage_id = c.value AND v.generation_id = ?
     WHERE +v.binding_id ${inJson} AND +v.received >= ? AND +v.received < ?)
   SELECT messageId, bindingId, min(distance) AS distance, (SELECT count(*) FROM scored) AS found
   FROM scored GROUP BY messageId
   ORDER BY distance, max(received) DESC, messageId DESC LIMIT ?`;

const statements = perConnection((db: Database) => ({
  generation: db.prepare('SELECT * FROM embedding_generations WHERE id = ?'),
  generations: db.prepare('SELECT * FROM embedding_generations ORDER BY id'),
  building: db.prepare("SELECT id FROM embedding_generations WHERE state = 'building'"),
  retireBuilding: db.prepare("UPDATE embedding_generations SET state = 'retired', retired_at = ? WHERE state = 'building'"),
  insertGeneration: db.prepare(
    "INSERT INTO embedding_generations (provider, model, dimensions, distance, state, created_at, base_address, api_key_ref) VALUES (?, ?, ?, ?, 'building', ?, ?, ?)",
  ),
  retireServing: db.prepare("UPDATE embedding_generations SET state = 'retired', retired_at = ? WHERE state = 'serving'"),
  serve: db.prepare("UPDATE embedding_generations SET state = 'serving', serving_at = ? WHERE id = ? AND state = 'building'"),
  retiredVectors: db.prepare(
    `DELETE FROM passage_vectors WHERE (passage_id, generation_id) IN (SELECT v.passage_id, v.generation_id FROM passage_vectors v
       WHERE v.generation_id IN (SELECT id FROM embedding_generations WHERE state = 'retired') LIMIT ?)`,
  ),
  retiredRemain: db.prepare(
    "SELECT 1 AS found FROM passage_vectors WHERE generation_id IN (SELECT id FROM embedding_generations WHERE state = 'retired') LIMIT 1",
  ),
  nextSeq: db.prepare('UPDATE embedding_generations SET vector_seq = vector_seq + 1 WHERE id = ? RETURNING vector_seq AS seq'),
  write: db.prepare(
    `INSERT INTO passage_vectors (generation_id, passage_id, message_id, account_id, binding_id, received, vector, seq, text_hash)
     SELECT ?, p.id, p.message_id, m.account_id, m.binding_id, CASE WHEN m.internal_date IS NULL THEN -1 ELSE max(m.internal_date, 0) END, ?, ?, ?
     FROM passages p JOIN messages m ON m.id = p.message_id WHERE p.id = ? AND m.state = 'stored'
     ON CONFLICT (passage_id, generation_id) DO UPDATE SET vector = excluded.vector, seq = excluded.seq, text_hash = excluded.text_hash`,
  ),
  // Index passage_vectors_seq holds (generation_id, seq) then the primary key: pages in that order, no sorter.
  written: db.prepare(
    `SELECT seq, binding_id AS bindingId, received, message_id AS messageId, passage_id AS passageId, vector
     FROM passage_vectors INDEXED BY passage_vectors_seq
     WHERE generation_id = ? AND (seq, binding_id, received, message_id, passage_id) > (?, ?, ?, ?, ?)
     ORDER BY seq, binding_id, received, message_id, passage_id LIMIT ?`,
  ),
  // The primary key's order: the table read front to back (a whole generation's first load).
  inKeyOrder: db.prepare(
    `SELECT seq, binding_id AS bindingId, received, message_id AS messageId, passage_id AS passageId, vector
     FROM passage_vectors WHERE generation_id = ? AND (binding_id, received, message_id, passage_id) > (?, ?, ?, ?)
     ORDER BY binding_id, received, message_id, passage_id LIMIT ?`,
  ),
  ofText: db.prepare('SELECT vector FROM passage_vectors INDEXED BY passage_vectors_text WHERE generation_id = ? AND text_hash = ? LIMIT 1'),
  generationsOfMessage: db.prepare('SELECT DISTINCT generation_id AS id FROM passage_vectors INDEXED BY passage_vectors_message WHERE message_id = ?'),
  move: db.prepare('UPDATE passage_vectors SET binding_id = ?, seq = ? WHERE generation_id = ? AND message_id = ?'),
  lastSeq: db.prepare('SELECT vector_seq AS seq FROM embedding_generations WHERE id = ?'),
  // The narrowest index holding every row of a generation: a count reads no vector.
  count: db.prepare('SELECT count(*) AS n FROM passage_vectors INDEXED BY passage_vectors_seq WHERE generation_id = ?'),
  rescoreCosine: db.prepare(rescore('vector_distance_cos')),
  rescoreL2: db.prepare(rescore('vector_distance_l2')),
  nearestOfCandidatesCosine: db.prepare(nearestOfCandidates('vector_distance_cos')),
  nearestOfCandidatesL2: db.prepare(nearestOfCandidates('vector_distance_l2')),
  deleteMessages: db.prepare(`DELETE FROM passage_vectors WHERE message_id ${inJson}`),
  // One pass over the bindings' stored mail (index messages_binding_state), two index probes per email.
  // Counting distinct messages in passage_vectors instead read every vector of the scope: 590 ms for
  // 255,000 vectors (bench/hybrid-search.ts).
  coverage: db.prepare(
    `SELECT count(*) AS embeddable,
       coalesce(sum(EXISTS (SELECT 1 FROM passage_vectors v WHERE v.message_id = m.id AND v.generation_id = ?)), 0) AS embedded
     FROM messages m WHERE m.binding_id ${inJson} AND m.state = 'stored' AND EXISTS (SELECT 1 FROM passages p WHERE p.message_id = m.id)`,
  ),
  nearestCosine: db.prepare(nearest('vector_distance_cos')),
  nearestL2: db.prepare(nearest('vector_distance_l2')),
}));

function generationOf(row: GenerationRow): Generation {
  return {
    id: row.id,
    provider: row.provider,
    model: row.model,
    dimensions: row.dimensions,
    distance: row.distance,
    state: row.state,
    createdAt: row.created_at,
    servingAt: row.serving_at,
    retiredAt: row.retired_at,
    baseAddress: row.base_address,
    apiKeyRef: row.api_key_ref,
  };
}

/** The generation, or undefined. */
export function generation(db: Database, id: number): Generation | undefined {
  const row = one<GenerationRow>(statements(db).generation, [id]);
  return row === undefined ? undefined : generationOf(row);
}

/** Every generation, oldest first. */
export function generations(db: Database): Generation[] {
  return many<GenerationRow>(statements(db).generations).map(generationOf);
}

/** Starts building a generation for `profile`; one still building is retired. */
export function beginGeneration(
  db: Database,
  profile: GenerationProfile,
  now: number,
  endpoint: GenerationEndpoint = { baseAddress: null, apiKeyRef: null },
): Generation {
  if (!Number.isInteger(profile.dimensions) || profile.dimensions < 1 || profile.dimensions > 8192) throw new RangeError('dimensions: 1 to 8192');
  const s = statements(db);
  const apply = db.transaction((): number => {
    run(s.retireBuilding, [now]);
    return Number(
      run(s.insertGeneration, [profile.provider, profile.model, profile.dimensions, profile.distance, now, endpoint.baseAddress, endpoint.apiKeyRef])
        .lastInsertRowid,
    );
  });
  return generation(db, apply.immediate())!;
}

/** The building generation serves; the one serving until now is retired. False when `id` was not building. */
export function promoteGeneration(db: Database, id: number, now: number): boolean {
  const s = statements(db);
  const apply = db.transaction((): boolean => {
    if (one<GenerationRow>(s.generation, [id])?.state !== 'building') return false;
    run(s.retireServing, [now]);
    return run(s.serve, [now, id]).changes === 1;
  });
  return apply.immediate();
}

/** Retires the generation being built, if any (a cancelled reindex); the serving one stays. Answers the id retired, or null. */
export function cancelBuilding(db: Database, now: number): number | null {
  const s = statements(db);
  const apply = db.transaction((): number | null => {
    const building = one<{ id: number }>(s.building);
    if (building === undefined) return null;
    run(s.retireBuilding, [now]);
    return building.id;
  });
  return apply.immediate();
}

/** Deletes at most `limit` vectors of retired generations. */
export function purgeRetiredVectors(db: Database, limit: number): { deleted: number; remain: boolean } {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError('a purge needs a limit of one row or more');
  const s = statements(db);
  const apply = db.transaction(() => {
    const deleted = run(s.retiredVectors, [limit]).changes;
    return { deleted, remain: one(s.retiredRemain) !== undefined };
  });
  return apply.immediate();
}

/** A vector's bytes as libsql must bind them (a Float32Array itself would bind its whole buffer). */
export function vectorBytes(vector: Float32Array): Uint8Array {
  return new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength);
}

/** A plain Uint8Array view (a Buffer is one too, but bound as itself). */
function plainBytes(bytes: Uint8Array): Uint8Array {
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function checkVector(vector: Float32Array, target: Generation): void {
  if (vector.length !== target.dimensions)
    throw new RangeError(`a vector of generation ${target.id} has ${target.dimensions} dimensions, not ${vector.length}`);
  let norm = 0;
  for (const x of vector) {
    if (!Number.isFinite(x)) throw new RangeError('a vector holds a value that is not a finite number');
    norm += x * x;
  }
  if (target.distance === 'cosine' && norm === 0) throw new RangeError('a zero vector has no cosine distance');
}

/**
 * Writes (or rewrites) a batch of vectors of one building or serving
 * generation in one transaction, stamped with the generation's next write
 * sequence number (migration 0009). Answers how many were written; a passage
 * gone, or of mail no longer stored, is skipped.
 */
export function writeVectors(db: Database, generationId: number, vectors: readonly PassageVector[]): { written: number; skipped: number } {
  const s = statements(db);
  const apply = db.transaction(() => {
    const target = generation(db, generationId);
    if (target === undefined || target.state === 'retired') throw new Error(`generation ${generationId} takes no vectors (${target?.state ?? 'unknown'})`);
    for (const { vector } of vectors) checkVector(vector, target);
    const seq = one<{ seq: number }>(s.nextSeq, [generationId])!.seq;
    let written = 0;
    for (const { passageId, vector, textHash } of vectors)
      written += run(s.write, [generationId, vectorBytes(vector), seq, textHash === undefined ? null : plainBytes(textHash), passageId]).changes;
    return { written, skipped: vectors.length - written };
  });
  return apply.immediate();
}

/**
 * The generation's vector of each text hash it holds one for (any passage's:
 * the same normalised text has one vector per generation), keyed by the
 * hash in hex. One index probe per hash (migration 0018).
 */
export function vectorsOfTexts(db: Database, generationId: number, textHashes: readonly Uint8Array[]): Map<string, Float32Array> {
  const s = statements(db);
  const found = new Map<string, Float32Array>();
  for (const hash of textHashes) {
    const key = Buffer.from(hash.buffer, hash.byteOffset, hash.byteLength).toString('hex');
    if (found.has(key)) continue;
    // libsql reads a BLOB as an ArrayBuffer.
    const row = one<{ vector: ArrayBuffer | Uint8Array }>(s.ofText, [generationId, plainBytes(hash)]);
    if (row === undefined) continue;
    const bytes = row.vector instanceof Uint8Array ? row.vector : new Uint8Array(row.vector);
    found.set(key, new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)));
  }
  return found;
}

/**
 * A message moved to another folder keeps its vectors: they follow it to its
 * new binding, stamped with a new write sequence so that an in-memory index
 * (actors/mail-query/vector-index.ts) reads them again. Runs in the caller's
 * transaction (the sync actor's relocation). Answers the rows moved.
 */
export function moveMessageVectors(db: Database, messageId: number, bindingId: number): number {
  const s = statements(db);
  let moved = 0;
  for (const { id } of many<{ id: number }>(s.generationsOfMessage, [messageId])) {
    const seq = one<{ seq: number }>(s.nextSeq, [id])!.seq;
    moved += run(s.move, [bindingId, seq, id, messageId]).changes;
  }
  return moved;
}

/** Deletes the vectors of these messages, every generation. Answers how many rows went. */
export function deleteMessageVectors(db: Database, messageIds: readonly number[]): number {
  if (messageIds.length === 0) return 0;
  return run(statements(db).deleteMessages, [JSON.stringify(messageIds)]).changes;
}

/** Of the stored mail of these bindings that has passages, how many messages have a vector in the generation. */
export function coverage(db: Database, generationId: number, bindingIds: readonly number[]): { embedded: number; embeddable: number } {
  const row = one<{ embedded: number; embeddable: number }>(statements(db).coverage, [generationId, JSON.stringify(bindingIds)]);
  return { embedded: row?.embedded ?? 0, embeddable: row?.embeddable ?? 0 };
}

/** Received-time bounds as the index range (undated mail is stored as −1). */
export function receivedRange(query: Pick<NearestQuery, 'receivedFrom' | 'receivedBelow'>): { from: number; below: number } {
  return {
    from: query.receivedFrom === undefined ? -1 : Math.max(0, query.receivedFrom),
    below: query.receivedBelow === undefined ? Number.MAX_SAFE_INTEGER : Math.max(0, query.receivedBelow),
  };
}

/**
 * The `limit` messages nearest the query vector within the scope, each at
 * the distance of its nearest passage; exact (every vector in scope is
 * compared). Nothing when the generation is unknown or no binding is given.
 */
export function nearestMessages(db: Database, query: NearestQuery): NearestMessage[] {
  const target = generation(db, query.generation);
  if (target === undefined || query.bindingIds.length === 0 || query.limit < 1) return [];
  checkVector(query.queryVector, target);
  const range = receivedRange(query);
  const s = statements(db);
  const statement = target.distance === 'cosine' ? s.nearestCosine : s.nearestL2;
  const params = [vectorBytes(query.queryVector), target.id, JSON.stringify(query.bindingIds), range.from, range.below] as const;
  // A message has several passages: read the nearest rows until `limit`
  // messages are among them, or the scope holds no more (usually once).
  for (let rows = query.limit * 4; ; rows *= 4) {
    const found = many<NearestMessage>(statement, [...params, rows]);
    const messages = new Map<number, NearestMessage>();
    for (const row of found) {
      if (!messages.has(row.messageId)) messages.set(row.messageId, row);
      if (messages.size === query.limit) break;
    }
    if (messages.size === query.limit || found.length < rows) return [...messages.values()];
  }
}

/** Where a reader of `vectorsWrittenAfter` stands: the last row read, in (seq, primary key) order. */
export type VectorCursor = { seq: number; bindingId: number; received: number; messageId: number; passageId: number };
/** Before every row. */
export const VECTOR_CURSOR_START: VectorCursor = { seq: -1, bindingId: 0, received: -2, messageId: 0, passageId: 0 };
/** A vector row as written, its vector as stored (little-endian float32 bytes). */
export type WrittenVector = VectorCursor & { vector: Uint8Array };

/**
 * At most `limit` rows of the generation after `cursor`, in write order
 * (seq, then primary key): from the start, the whole generation in pages;
 * from the last row read, what was written since (one index probe when
 * nothing was). A row rewritten comes again, with its new seq.
 */
export function vectorsWrittenAfter(db: Database, generationId: number, cursor: VectorCursor, limit: number): WrittenVector[] {
  const params = [generationId, cursor.seq, cursor.bindingId, cursor.received, cursor.messageId, cursor.passageId, limit];
  // libsql reads a BLOB as an ArrayBuffer.
  return many<Omit<WrittenVector, 'vector'> & { vector: ArrayBuffer | Uint8Array }>(statements(db).written, params).map((row) => ({
    ...row,
    vector: row.vector instanceof Uint8Array ? row.vector : new Uint8Array(row.vector),
  }));
}

/** A row's place in the table (its primary key within a generation). */
export type VectorKey = Omit<VectorCursor, 'seq'>;
/** Before every row of a generation. */
export const VECTOR_KEY_START: VectorKey = { bindingId: 0, received: -2, messageId: 0, passageId: 0 };

/**
 * At most `limit` rows of the generation after `after`, in the table's own
 * order: a first load reads the generation front to back, several times
 * faster than in write order (one lookup per row). Rows written meanwhile
 * carry a seq above `lastVectorSeq` read before the first page, and are
 * read afterwards by `vectorsWrittenAfter`.
 */
export function vectorsInKeyOrder(db: Database, generationId: number, after: VectorKey, limit: number): WrittenVector[] {
  const params = [generationId, after.bindingId, after.received, after.messageId, after.passageId, limit];
  return many<Omit<WrittenVector, 'vector'> & { vector: ArrayBuffer | Uint8Array }>(statements(db).inKeyOrder, params).map((row) => ({
    ...row,
    vector: row.vector instanceof Uint8Array ? row.vector : new Uint8Array(row.vector),
  }));
}

/** The last write sequence number given in the generation (0: none yet). */
export function lastVectorSeq(db: Database, generationId: number): number {
  return one<{ seq: number }>(statements(db).lastSeq, [generationId])?.seq ?? 0;
}

/** How many vectors the generation holds (one pass over index passage_vectors_seq, no vector read). */
export function countVectors(db: Database, generationId: number): number {
  return one<{ n: number }>(statements(db).count, [generationId])?.n ?? 0;
}

export type PassageDistance = { passageId: number; messageId: number; bindingId: number; distance: number };

/**
 * The exact distances of these passages' vectors in the generation, those
 * still in the scope of the query, nearest first (ties as `nearestMessages`).
 * A passage whose vector is gone is simply absent.
 */
export function passageDistances(db: Database, query: Omit<NearestQuery, 'limit'>, passageIds: readonly number[]): PassageDistance[] {
  const target = generation(db, query.generation);
  if (target === undefined || query.bindingIds.length === 0 || passageIds.length === 0) return [];
  checkVector(query.queryVector, target);
  const s = statements(db);
  return many<PassageDistance>(target.distance === 'cosine' ? s.rescoreCosine : s.rescoreL2, candidateParams(target.id, query, passageIds));
}

/** The parameters both candidate statements start with: the query, the candidates, the generation and the scope. */
function candidateParams(generationId: number, query: Omit<NearestQuery, 'limit'>, passageIds: readonly number[]): SqlValue[] {
  const range = receivedRange(query);
  return [vectorBytes(query.queryVector), JSON.stringify(passageIds), generationId, JSON.stringify(query.bindingIds), range.from, range.below];
}

/**
 * The nearest `limit` messages among these passages (the index's
 * candidates), each at its nearest passage, ordered and tied as
 * `nearestMessages`; and how many of the passages are still there, in the
 * scope of the query (fewer than given: some vectors are gone, and
 * `passageDistances` says which).
 */
export function nearestOfPassages(db: Database, query: NearestQuery, passageIds: readonly number[]): { messages: NearestMessage[]; found: number } {
  const target = generation(db, query.generation);
  if (target === undefined || query.bindingIds.length === 0 || passageIds.length === 0) return { messages: [], found: 0 };
  checkVector(query.queryVector, target);
  const s = statements(db);
  const rows = many<NearestMessage & { found: number }>(target.distance === 'cosine' ? s.nearestOfCandidatesCosine : s.nearestOfCandidatesL2, [
    ...candidateParams(target.id, query, passageIds),
    query.limit,
  ]);
  return { messages: rows.map(({ messageId, bindingId, distance }) => ({ messageId, bindingId, distance })), found: rows[0]?.found ?? 0 };
}
