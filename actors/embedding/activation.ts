/**
 * The operator's acts on generations (admin-surface.md "Embedding status and
 * activation"): what activating the declared profile would do and cost, the
 * activation itself, and the cancellation of a reindex. The actor never
 * begins a generation by itself: the first one serves at once and fills as
 * mail is embedded; a changed profile builds a new one while the serving one
 * answers, promoted when a sweep finds nothing it lacks (generations.ts).
 */
import type { ActorContext } from '../../runtime/actor.ts';
import { AppError } from '../../runtime/errors.ts';
import { embeddingForecast } from '../../runtime/store/mailbox/embedding-work.ts';
import { beginGeneration, cancelBuilding, promoteGeneration } from '../../runtime/store/mailbox/vectors.ts';
import { declaredProvider, maxInput } from './endpoints.ts';
import { live, sameProfile } from './generations.ts';
import { schedulePass } from './passes.ts';
import { type ActivationForecast, type ActivationResult, CHARACTERS_PER_TOKEN, type CancellationResult } from './protocol.ts';
import type { EmbeddingState } from './state.ts';

export function forecast(state: EmbeddingState): ActivationForecast {
  const declared = state.config.declared;
  const zero = { passages: 0, characters: 0, approximateTokens: 0, periods: 0 };
  if (declared === null) return { declared: null, effect: 'not-declared', ...zero, forecast: 'No embedding profile is declared; activating would do nothing.' };
  const { serving, building } = live(state.db);
  const max = maxInput(state, declaredProvider(state));
  const named = `${declared.profile.provider} model ${declared.profile.model} (${declared.profile.dimensions} dimensions)`;
  if (serving !== undefined && sameProfile(serving, declared.profile))
    return {
      declared: declared.profile,
      effect: 'serving',
      ...zero,
      forecast: `The declared profile already serves (generation ${serving.id}); activating it again sends nothing.`,
    };
  const onBuilding = building !== undefined && sameProfile(building, declared.profile);
  const { passages, characters } = embeddingForecast(state.db, onBuilding ? building.id : null, {
    maxCharacters: max,
    passagesPerMessage: declared.passagesPerMessage,
  });
  const approximateTokens = Math.ceil(characters / CHARACTERS_PER_TOKEN);
  const periods = Math.ceil(characters / state.config.spend.maxCharactersPerPeriod);
  const bound = declared.passagesPerMessage === null ? '' : ` (at most the first ${declared.passagesPerMessage} of each message)`;
  const cost = `${passages} passages${bound}, about ${characters} characters (~${approximateTokens} tokens) sent to ${named}`;
  const pace = periods > 1 ? `, over at least ${periods} spend periods` : '';
  const backfill = state.config.backfill.enabled ? '' : ' The backfill is off (EmbeddingBackfill:Enabled): only mail arriving from now on will be embedded.';
  if (onBuilding)
    return {
      declared: declared.profile,
      effect: 'building',
      passages,
      characters,
      approximateTokens,
      periods,
      forecast: `Already being built (generation ${building.id}): ${cost} remain${pace}.${backfill}`,
    };
  const effect = serving === undefined ? 'start' : 'reindex';
  const beside = serving === undefined ? '' : `, while generation ${serving.id} keeps answering searches`;
  return {
    declared: declared.profile,
    effect,
    passages,
    characters,
    approximateTokens,
    periods,
    forecast: `Activating embeds ${cost}${pace}${beside}.${backfill}`,
  };
}

export function activate(state: EmbeddingState, ctx: ActorContext): ActivationResult {
  const before = forecast(state);
  const declared = state.config.declared;
  if (declared === null || before.effect === 'not-declared') throw new AppError('E_EMBED_NOT_DECLARED');
  const { serving, building } = live(state.db);
  if (before.effect === 'serving') return { outcome: 'serving', generation: serving!.id, forecast: before };
  if (before.effect === 'building') return { outcome: 'building', generation: building!.id, forecast: before };
  const now = Date.now();
  const begun = beginGeneration(state.db, declared.profile, now, { baseAddress: declared.baseAddress, apiKeyRef: declared.apiKeyRef });
  // The first generation serves at once (there is nothing to keep answering); coverage says how far it reaches.
  if (serving === undefined) promoteGeneration(state.db, begun.id, now);
  const outcome = serving === undefined ? 'started' : 'reindexing';
  ctx.log.info({ event: 'embedding.activated', generation: begun.id, outcome, passages: before.passages }, 'embedding.activated');
  schedulePass(state, ctx, 0);
  return { outcome, generation: begun.id, forecast: before };
}

export function cancelReindex(state: EmbeddingState, ctx: ActorContext): CancellationResult {
  const cancelled = cancelBuilding(state.db, Date.now());
  if (cancelled !== null) {
    state.cursors.delete(cancelled);
    ctx.log.info({ event: 'embedding.reindex-cancelled', generation: cancelled }, 'embedding.reindex-cancelled');
    schedulePass(state, ctx, 0); // purges its vectors
  }
  return { cancelled, serving: live(state.db).serving?.id ?? null };
}
