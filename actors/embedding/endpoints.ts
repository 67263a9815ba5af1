/**
 * How each generation's provider is reached, and the providers built for
 * those endpoints, once each: the declared one, and the serving
 * generation's own while a changed profile reindexes (its vectors are
 * placed by its own model until the new generation is promoted).
 */
import type { ActorContext } from '../../runtime/actor.ts';
import { AppError } from '../../runtime/errors.ts';
import type { Generation } from '../../runtime/store/mailbox/vectors.ts';
import { defaultPassagesPerMessage } from '../../config/schema/embeddings.ts';
import { live, profileOf, sameProfile } from './generations.ts';
import type { EmbeddingProvider } from './provider.ts';
import { createProvider, type Declared } from './providers.ts';
import type { EmbeddingState } from './state.ts';

/** A query or passage is cut to this when the provider states no bound of its own (well inside common models' 8,192 tokens). */
const DEFAULT_MAX_INPUT_CHARACTERS = 8_000;
/** Call settings of a generation's provider when nothing is declared any more (the schema's defaults). */
const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;
const DEFAULT_BATCH_SIZE = 64;

/**
 * How a generation's provider is reached: its own endpoint, with the declared
 * call settings. Passages per message are the declared ones for the declared
 * profile's generation, else the default of the generation's provider.
 */
export function endpointOf(state: EmbeddingState, g: Generation): Declared | null {
  const profile = profileOf(g);
  if (profile.provider === 'openai-compatible' && g.baseAddress === null) return null;
  const declared = state.config.declared;
  const passagesPerMessage =
    declared !== null && sameProfile(g, declared.profile)
      ? declared.passagesPerMessage
      : defaultPassagesPerMessage(profile.provider === 'local' ? 'Local' : 'OpenAiCompatible');
  return {
    passagesPerMessage,
    profile,
    baseAddress: g.baseAddress,
    apiKeyRef: g.apiKeyRef,
    requestTimeoutMs: declared?.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
    batchSize: declared?.batchSize ?? DEFAULT_BATCH_SIZE,
    localThreads: declared?.localThreads ?? 1,
  };
}

function endpointKey(e: Declared): string {
  return JSON.stringify([e.profile.provider, e.profile.model, e.profile.dimensions, e.baseAddress, e.apiKeyRef]);
}

/** The generations that take vectors, serving first, each with how its provider is reached (one begun by something else than an activation has none and is skipped). */
export function targets(state: EmbeddingState): Array<{ generation: Generation; endpoint: Declared }> {
  const { serving, building } = live(state.db);
  return [serving, building].flatMap((generation) => {
    const endpoint = generation === undefined ? null : endpointOf(state, generation);
    return generation === undefined || endpoint === null ? [] : [{ generation, endpoint }];
  });
}

/** The provider reached as `endpoint`, built once (a build that failed is tried again next time). */
export function providerFor(state: EmbeddingState, ctx: ActorContext, endpoint: Declared): Promise<EmbeddingProvider> {
  const key = endpointKey(endpoint);
  let made = state.providers.get(key);
  if (made === undefined) {
    made = createProvider(endpoint, ctx.log).then((p) => {
      state.built.set(key, p);
      return p;
    });
    made.catch(() => state.providers.delete(key));
    state.providers.set(key, made);
  }
  return made;
}

/** The provider reached as `endpoint` if it is built already (not loaded: a local model loads on its first call). */
export function builtProvider(state: EmbeddingState, endpoint: Declared): EmbeddingProvider | undefined {
  return state.built.get(endpointKey(endpoint));
}

/** The declared endpoint's provider, built, for its input bound and health. */
export function declaredProvider(state: EmbeddingState): EmbeddingProvider | undefined {
  const declared = state.config.declared;
  return declared === null ? undefined : builtProvider(state, declared);
}

/** The characters a query or passage is cut to: the provider's bound (the default until it is built), within the period's spend. */
export function maxInput(state: EmbeddingState, p: EmbeddingProvider | undefined): number {
  return Math.min(p?.maxInputCharacters ?? DEFAULT_MAX_INPUT_CHARACTERS, state.config.spend.maxCharactersPerPeriod);
}

/** A provider failure is an outside one: logged by its code and class, and work waits. Anything else is a defect. */
export function providerFailed(ctx: ActorContext, err: unknown): null {
  if (!(err instanceof AppError)) throw err;
  ctx.log.warn({ event: 'embedding.provider-failed', code: err.code, failure: err.details?.failure ?? null }, 'embedding.provider-failed');
  return null;
}
