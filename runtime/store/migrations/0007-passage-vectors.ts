/**
 * Migration 7: vectors of passages, by embedding generation (issue 15).
 * Never edit once shipped; add the next one.
 *
 * - `embedding_generations`: one row per embedding profile the store has
 *   held vectors for (provider id, model, dimensions, distance). `building`
 *   fills while the `serving` one (at most one, by a partial unique index)
 *   keeps answering; promotion makes the building one serve and retires the
 *   one it replaces in one transaction; a retired generation's vectors are
 *   deleted in bounded passes, the row stays. At most one is building.
 * - `passage_vectors`: one float32 vector per (generation, passage), with the
 *   passage's message, account, binding and received time copied from
 *   `messages` when written, so the scope of a search (visible bindings and a
 *   received-time range) is an index range, applied before any distance is
 *   computed. `received` is the internal date in ms clamped at 0, or −1 when
 *   the server gave none: an undated message sorts before every dated one, as
 *   its search key does (migration 0006). Like the search key it is not
 *   rewritten when a later fetch refreshes the internal date.
 *
 * The vector is a plain BLOB of 4 × dimensions bytes (little-endian float32,
 * libSQL's F32 vector format, which `vector_distance_cos` and
 * `vector_distance_l2` read as is). Not `F32_BLOB(n)`: its n is fixed per
 * column and the dimensions vary by generation; and a BLOB keeps the table
 * STRICT (migration 0001 expected a non-STRICT table for F32_BLOB). No
 * `libsql_vector_idx`: measured, it cannot pre-filter, and its recall and
 * cost per row were poor (docs/semantic-search.md, Storage). A trigger
 * refuses a vector whose length does not match its generation.
 *
 * WITHOUT ROWID, its primary key led by the scope (generation, binding,
 * received): a folder's vectors lie together, so a scoped search reads
 * neighbouring pages instead of one page per row. Measured at 150,000
 * vectors against a rowid table with the same columns as an index: 1.3–3.5×
 * faster for a folder of 1 % or 20 %, 1.2–1.8× for the whole mailbox, for
 * +0.3–9 % disk. With 16 KiB pages a row of up to ~4 KB (1,000 float32
 * dimensions) stays on its leaf page.
 *
 * Writers: the embedding actor (generations, vectors). The account's sync
 * actor deletes the vectors of the mail it tombstones, erases or re-derives,
 * explicitly, like the other child rows (the cascades are a safety net).
 *
 * Imported by `migrations/index.ts` only.
 */
export const sql = `
CREATE TABLE embedding_generations (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  provider TEXT NOT NULL,
  model TEXT NOT NULL,
  dimensions INTEGER NOT NULL CHECK (dimensions BETWEEN 1 AND 8192),
  distance TEXT NOT NULL CHECK (distance IN ('cosine', 'l2')),
  state TEXT NOT NULL CHECK (state IN ('building', 'serving', 'retired')),
  created_at INTEGER NOT NULL,
  serving_at INTEGER,
  retired_at INTEGER,
  CHECK ((state = 'retired') = (retired_at IS NOT NULL)),
  CHECK (state <> 'serving' OR serving_at IS NOT NULL)
) STRICT;
CREATE UNIQUE INDEX embedding_generations_serving ON embedding_generations (state) WHERE state = 'serving';
CREATE UNIQUE INDEX embedding_generations_building ON embedding_generations (state) WHERE state = 'building';

CREATE TABLE passage_vectors (
  generation_id INTEGER NOT NULL REFERENCES embedding_generations(id) ON DELETE CASCADE,
  passage_id INTEGER NOT NULL REFERENCES passages(id) ON DELETE CASCADE,
  message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
  account_id TEXT NOT NULL,
  binding_id INTEGER NOT NULL,
  received INTEGER NOT NULL CHECK (received >= -1),
  vector BLOB NOT NULL,
  PRIMARY KEY (generation_id, binding_id, received, message_id, passage_id),
  UNIQUE (passage_id, generation_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX passage_vectors_message ON passage_vectors (message_id);

CREATE TRIGGER passage_vectors_length BEFORE INSERT ON passage_vectors
WHEN length(new.vector) IS NOT (SELECT 4 * dimensions FROM embedding_generations WHERE id = new.generation_id)
BEGIN
  SELECT RAISE(ABORT, 'a vector''s length does not match its generation''s dimensions');
END;
`;
