/**
 * Migration 18: the hash of the text a passage vector was made from (issue
 * 34, semantic backfill), so that text repeating earlier mail (a quoted
 * reply, a signature, a footer) is embedded once per generation.
 * Never edit once shipped; add the next one.
 *
 * `passage_vectors.text_hash`: SHA-256 of the passage's text as sent,
 * normalised (actors/embedding/repeats.ts); null for rows written before
 * this migration. The embedding actor reads a vector of the generation by
 * it before it sends a text, and writes it with every vector. It lives on
 * the vector's own row: when a passage goes (tombstone, erasure,
 * re-derivation) its hash goes with it, and nothing else points at it.
 *
 * Index (generation_id, text_hash), partial: one probe per text; rows
 * without a hash take no room in it.
 *
 * Writer: the embedding actor, through `writeVectors`. Imported by
 * `migrations/index.ts` only.
 */
export const sql = `
ALTER TABLE passage_vectors ADD COLUMN text_hash BLOB;
CREATE INDEX passage_vectors_text ON passage_vectors (generation_id, text_hash) WHERE text_hash IS NOT NULL;
`;
