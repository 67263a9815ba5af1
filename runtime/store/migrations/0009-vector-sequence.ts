/**
 * Migration 9: a write sequence for passage vectors (issue 15), so that a
 * query-pool thread holding a generation's vectors in memory
 * (actors/mail-query/vector-index.ts) can read only what was written since
 * it last looked, instead of reloading the generation.
 * Never edit once shipped; add the next one.
 *
 * `embedding_generations.vector_seq`: the last sequence number given to a
 * batch of the generation's vectors. `writeVectors` increments it in the
 * batch's transaction and stamps every row it writes or rewrites with it,
 * so numbers only grow and rows commit in their order (writes are
 * serialised): a reader that has read through (seq, key) has seen every row
 * committed at or below it. A counter on the generation, not max(seq) of
 * the rows: deleting the newest rows must not let a number be given twice.
 *
 * `passage_vectors.seq`: the batch that wrote the row; 0 for rows written
 * before this migration. Index (generation_id, seq): the rows after a
 * reader's position are an index range (usually empty: one probe). The
 * index carries the table's primary key, so a reader pages through it by
 * (seq, primary key).
 *
 * Writer: the embedding actor, through `writeVectors`. Imported by
 * `migrations/index.ts` only.
 */
export const sql = `
ALTER TABLE embedding_generations ADD COLUMN vector_seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE passage_vectors ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
CREATE INDEX passage_vectors_seq ON passage_vectors (generation_id, seq);
`;
