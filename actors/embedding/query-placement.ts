/**
 * Placing a search query (`embedding.place-query`) by the serving
 * generation's own provider: while a changed profile reindexes, the old
 * model still places queries for the vectors it made. Never an error: when
 * it cannot, search goes on lexically and says so (`degraded`).
 */
import type { ActorContext } from '../../runtime/actor.ts';
import { AppError } from '../../runtime/errors.ts';
import { characterCount } from '../../runtime/store/mailbox/embedding-work.ts';
import { builtProvider, endpointOf, maxInput, providerFor } from './endpoints.ts';
import { live } from './generations.ts';
import type { PlacedQuery, Readiness } from './protocol.ts';
import { spendOnQuery } from './spend.ts';
import type { EmbeddingState } from './state.ts';

/** The query placed by the serving generation's provider, or why not. The text is never logged. */
export async function placeQuery(state: EmbeddingState, ctx: ActorContext, text: string): Promise<PlacedQuery> {
  const { serving } = live(state.db);
  if (serving === undefined) return { semanticSearch: 'inactive' };
  const degraded = (code: string): PlacedQuery => {
    ctx.log.warn({ event: 'embedding.query-degraded', code }, 'embedding.query-degraded');
    return { semanticSearch: 'degraded' };
  };
  const endpoint = endpointOf(state, serving);
  if (endpoint === null) return degraded('E_EMBED_NOT_DECLARED');
  try {
    const p = await providerFor(state, ctx, endpoint);
    if (p.health().state === 'open') return degraded('E_EMBED_CIRCUIT_OPEN');
    const query = text.slice(0, maxInput(state, p));
    if (!spendOnQuery(state, characterCount(query))) return degraded('E_BUDGET_SPENT');
    const signal =
      ctx.deadline === null ? state.abort.signal : AbortSignal.any([state.abort.signal, AbortSignal.timeout(Math.max(1, ctx.deadline - Date.now()))]);
    // Inside the ask's trace (a search's): the span's parent is named, the active context does not follow awaits.
    const [vector] = await p.embed([query], signal, ctx.trace, 'query');
    return { semanticSearch: 'available', generation: serving.id, vector: vector! };
  } catch (err) {
    if (err instanceof AppError) return degraded(err.code);
    throw err;
  }
}

/** Whether `placeQuery` could answer `available` now, as far as is known without a call (a spent period is found by the call). */
export function readiness(state: EmbeddingState): Readiness {
  const { serving } = live(state.db);
  if (serving === undefined) return { canPlaceQuery: false };
  const endpoint = endpointOf(state, serving);
  if (endpoint === null) return { canPlaceQuery: false };
  return { canPlaceQuery: builtProvider(state, endpoint)?.health().state !== 'open' };
}
