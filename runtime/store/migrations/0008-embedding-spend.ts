/**
 * Migration 8: the embedding spend ledger, and where a generation's provider
 * is reached (issue 15). Never edit once shipped; add the next one.
 *
 * `embedding_generations.base_address` / `api_key_ref`: the OpenAI-compatible
 * endpoint and the secret reference (never the secret) the generation was
 * begun with, so that while a changed profile reindexes, the serving
 * generation still places queries and embeds arrivals with its own model.
 * NULL for the local model.
 *
 * `embedding_spend`: characters sent to the embedding provider per period,
 * keyed by the period's first instant (epoch ms, periods aligned to the
 * epoch: `floor(now / period) × period`). The embedding actor adds a batch's
 * characters before it sends the batch, in one statement that refuses to go
 * past the bound, so a `kill -9` during a call can over-count one batch but
 * never under-count: the bound `Embeddings:MaxInputCharactersPerPeriod`
 * holds across restarts. Old periods are kept (a few rows a day) for the
 * operator's reading; store maintenance may prune them later.
 *
 * Writer: the embedding actor. Imported by `migrations/index.ts` only.
 */
export const sql = `
ALTER TABLE embedding_generations ADD COLUMN base_address TEXT;
ALTER TABLE embedding_generations ADD COLUMN api_key_ref TEXT;

CREATE TABLE embedding_spend (
  period_start INTEGER PRIMARY KEY,
  characters INTEGER NOT NULL CHECK (characters >= 0)
) STRICT;
`;
