/**
 * The generations of vectors as the actor sees them
 * (runtime/store/mailbox/vectors.ts): the one serving and the one being
 * built, the profile each was made with, and the promotion of a built one
 * once a sweep finds nothing it lacks.
 */
import type { ActorContext } from '../../runtime/actor.ts';
import type { Database } from '../../runtime/store/open.ts';
import { embeddingForecast } from '../../runtime/store/mailbox/embedding-work.ts';
import { type Generation, generations, promoteGeneration } from '../../runtime/store/mailbox/vectors.ts';
import type { Profile } from './protocol.ts';
import type { EmbeddingState } from './state.ts';

export function sameProfile(g: Pick<Generation, 'provider' | 'model' | 'dimensions' | 'distance'>, p: Profile): boolean {
  return g.provider === p.provider && g.model === p.model && g.dimensions === p.dimensions && g.distance === p.distance;
}

export function profileOf(g: Generation): Profile {
  return { provider: g.provider as Profile['provider'], model: g.model, dimensions: g.dimensions, distance: g.distance };
}

export function live(db: Database): { serving: Generation | undefined; building: Generation | undefined } {
  const all = generations(db);
  return { serving: all.find((g) => g.state === 'serving'), building: all.find((g) => g.state === 'building') };
}

/** Promotes a building generation once none of the passages it embeds (`passagesPerMessage` of each message; null: all) lacks a vector. */
export function promoteIfComplete(state: EmbeddingState, ctx: ActorContext, generation: Generation, passagesPerMessage: number | null): void {
  if (embeddingForecast(state.db, generation.id, { maxCharacters: 1, passagesPerMessage }).passages > 0) return;
  if (promoteGeneration(state.db, generation.id, Date.now())) {
    ctx.log.info({ event: 'embedding.generation-serving', generation: generation.id }, 'embedding.generation-serving');
    state.cursors.delete(generation.id);
  }
}
