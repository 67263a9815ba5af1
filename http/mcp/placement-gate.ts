/**
 * Whether `search_emails` asks the embedding actor to place its query.
 * While no embedding generation serves (the default deployment, and every
 * one before its first activation) that ask is a round trip to another
 * thread that always answers `inactive`: the gate remembers that the last
 * search found nothing serving, on both sides (the actor's placement and
 * the query pool's own snapshot), and the next search goes to the pool
 * first. The pool still reads in its snapshot whether a generation serves
 * (mail-query/search.ts): when one does, its answer says `degraded`, and the
 * search places the query and asks again, so no answer differs from one
 * where the query was placed first (docs/performance.md "Search and the MCP
 * path").
 *
 * One gate per MCP surface: whether a generation serves is the
 * deployment's, not a caller's.
 */
import type { SearchEmailsResult } from '../../actors/mail-query/protocol/mail-reads.ts';

type SemanticSearch = SearchEmailsResult['semanticSearch'];

export type PlacementGate = {
  /** Whether the last search found no generation serving: the pool is asked first, without a placed query. */
  nothingServes(): boolean;
  /** What a search found: the placement's answer (null when skipped) and the pool's. */
  observe(placed: SemanticSearch | null, answered: SemanticSearch): void;
};

export function createPlacementGate(): PlacementGate {
  let nothingServes = false;
  return {
    nothingServes: () => nothingServes,
    observe(placed, answered) {
      nothingServes = (placed === null || placed === 'inactive') && answered === 'inactive';
    },
  };
}
