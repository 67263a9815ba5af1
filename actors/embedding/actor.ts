/**
 * The embedding actor (`embedding`): one per deployment, on a thread of its
 * own (the local model computes there). It holds the declared provider, and
 * it alone writes embedding generations and passage vectors.
 *
 * Generations (runtime/store/mailbox/vectors.ts) are begun only by an
 * operator's activation. The first one serves at once, and fills as mail is
 * embedded (coverage says how far). A changed profile builds a new one while
 * the serving one answers; it is promoted when a sweep finds nothing it
 * lacks, or retired by a cancellation.
 *
 * Work runs in passes of at most `EmbeddingBackfill:BatchSize` messages.
 * Each pass first takes mail newer than any seen (arrivals: the derivation
 * writer tells `embedding.derived`), then continues the sweep of the whole
 * store (the backfill, when enabled). A pass spends before it sends
 * (embedding-work.ts `trySpend`); when the period's characters are used, or
 * the provider fails, work waits (`waitingFor`) until the rollover or the
 * next interval. The pass is answered with `later()`, so asks (status, query
 * placement) are answered while it runs, and a defect in it crashes the
 * actor for its supervisor to restart.
 *
 * No log line carries passage text, the query or a subject.
 */
import { z } from 'zod';
import { defineActor, later, type ActorContext } from '../../runtime/actor.ts';
import { AppError } from '../../runtime/errors.ts';
import type { Database } from '../../runtime/store/open.ts';
import { openSlice } from '../../runtime/store/open-slice.ts';
import {
  characterCount,
  embeddingForecast,
  lastMessageId,
  periodStart,
  spentIn,
  storeCoverage,
  trySpend,
  unembeddedSegment,
} from '../../runtime/store/mailbox/embedding-work.ts';
import {
  beginGeneration,
  cancelBuilding,
  type Generation,
  generations,
  promoteGeneration,
  purgeRetiredVectors,
  writeVectors,
} from '../../runtime/store/mailbox/vectors.ts';
import {
  type ActivationForecast,
  type ActivationResult,
  CHARACTERS_PER_TOKEN,
  type CancellationResult,
  EmbeddingConfig,
  EmbeddingMessage,
  type EmbeddingStatus,
  type PlacedQuery,
  type Readiness,
  type Profile,
} from './protocol.ts';
import type { EmbeddingProvider } from './provider.ts';
import { createProvider, type Declared } from './providers.ts';

/** A query or passage is cut to this when the provider states no bound of its own (well inside common models' 8,192 tokens). */
const DEFAULT_MAX_INPUT_CHARACTERS = 8_000;
/** An arrival waits this long for others of the same burst before its pass runs. */
const ARRIVAL_DELAY_MS = 1_000;
/** Retired vectors deleted per purge step. */
const PURGE_ROWS = 5_000;
/** Call settings of a generation's provider when nothing is declared any more (the schema's defaults). */
const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;
const DEFAULT_BATCH_SIZE = 64;
/** Characters reserved for query placement at a time (about a hundred searches). */
const QUERY_ALLOWANCE = 2_000;

// Private: the timer of the next pass.
const Pass = z.strictObject({ type: z.literal('embedding.pass') });
const Msg = z.discriminatedUnion('type', [...EmbeddingMessage.options, Pass]);
type Msg = z.infer<typeof Msg>;

type Cursor = {
  /** The sweep of the whole store: the last message id it passed. */
  sweep: number;
  /** Arrivals: the highest message id already taken. */
  fresh: number;
};

type State = {
  config: EmbeddingConfig;
  db: Database;
  /** Providers by where they are reached (`endpointKey`): the declared one, and the serving generation's while a changed profile reindexes. */
  providers: Map<string, Promise<EmbeddingProvider>>;
  /** The same, once built (for health and input bounds). */
  built: Map<string, EmbeddingProvider>;
  passing: boolean;
  /** Asked for while a pass ran: run another at once after it. */
  again: boolean;
  timer: { cancel(): void } | null;
  nextPassAt: number | null;
  waitingFor: EmbeddingStatus['waitingFor'];
  cursors: Map<number, Cursor>;
  /** Characters reserved in the ledger for query placement and not used yet (`spendOnQuery`). */
  queryAllowance: { periodStart: number; remaining: number };
  abort: AbortController;
};

const iso = (ms: number): string => new Date(ms).toISOString();

function sameProfile(g: Pick<Generation, 'provider' | 'model' | 'dimensions' | 'distance'>, p: Profile): boolean {
  return g.provider === p.provider && g.model === p.model && g.dimensions === p.dimensions && g.distance === p.distance;
}

function profileOf(g: Generation): Profile {
  return { provider: g.provider as Profile['provider'], model: g.model, dimensions: g.dimensions, distance: g.distance };
}

function live(db: Database): { serving: Generation | undefined; building: Generation | undefined } {
  const all = generations(db);
  return { serving: all.find((g) => g.state === 'serving'), building: all.find((g) => g.state === 'building') };
}

/** How a generation's provider is reached: its own endpoint, with the declared call settings. */
function endpointOf(state: State, g: Generation): Declared | null {
  const profile = profileOf(g);
  if (profile.provider === 'openai-compatible' && g.baseAddress === null) return null;
  const declared = state.config.declared;
  return {
    profile,
    baseAddress: g.baseAddress,
    apiKeyRef: g.apiKeyRef,
    requestTimeoutMs: declared?.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
    batchSize: declared?.batchSize ?? DEFAULT_BATCH_SIZE,
  };
}

function endpointKey(e: Declared): string {
  return JSON.stringify([e.profile.provider, e.profile.model, e.profile.dimensions, e.baseAddress, e.apiKeyRef]);
}

/** The provider reached as `endpoint`, built once (a build that failed is tried again next time). */
function provider(state: State, ctx: ActorContext, endpoint: Declared): Promise<EmbeddingProvider> {
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

function maxInput(state: State, p: EmbeddingProvider): number {
  return Math.min(p.maxInputCharacters ?? DEFAULT_MAX_INPUT_CHARACTERS, state.config.spend.maxCharactersPerPeriod);
}

/** The generations that take vectors, serving first, each with how its provider is reached (one begun by something else than an activation has none and is skipped). */
function targets(state: State): Array<{ generation: Generation; endpoint: Declared }> {
  const { serving, building } = live(state.db);
  return [serving, building].flatMap((generation) => {
    const endpoint = generation === undefined ? null : endpointOf(state, generation);
    return generation === undefined || endpoint === null ? [] : [{ generation, endpoint }];
  });
}

function cursorOf(state: State, generationId: number): Cursor {
  let cursor = state.cursors.get(generationId);
  if (cursor === undefined) {
    // With the backfill off only mail newer than now is embedded.
    cursor = { sweep: 0, fresh: lastMessageId(state.db) };
    state.cursors.set(generationId, cursor);
  }
  return cursor;
}

function schedule(state: State, ctx: ActorContext, delayMs: number): void {
  const at = Date.now() + delayMs;
  if (state.timer !== null && state.nextPassAt !== null && state.nextPassAt <= at) return;
  state.timer?.cancel();
  state.nextPassAt = at;
  state.timer = ctx.schedule({ type: 'embedding.pass' }, delayMs);
}

type SegmentOutcome = 'done' | 'spend' | 'provider' | 'gone';

/** Embeds passages in provider calls, spending before each; writes each call's vectors in one transaction. */
async function embedPassages(
  state: State,
  ctx: ActorContext,
  generation: Generation,
  passages: ReadonlyArray<{ passageId: number; text: string }>,
  p: EmbeddingProvider,
  batchSize: number,
): Promise<{ outcome: SegmentOutcome; written: number }> {
  const { maxCharactersPerPeriod, periodMs } = state.config.spend;
  let written = 0;
  for (let i = 0; i < passages.length; ) {
    const start = periodStart(Date.now(), periodMs);
    const room = maxCharactersPerPeriod - spentIn(state.db, start);
    const call: Array<{ passageId: number; text: string }> = [];
    let characters = 0;
    while (i + call.length < passages.length && call.length < batchSize) {
      const next = passages[i + call.length]!;
      const size = characterCount(next.text);
      if (characters + size > room) break;
      call.push(next);
      characters += size;
    }
    if (call.length === 0 || !trySpend(state.db, start, characters, maxCharactersPerPeriod)) return { outcome: 'spend', written };
    let vectors: Float32Array[];
    try {
      vectors = await p.embed(
        call.map((c) => c.text),
        state.abort.signal,
      );
    } catch (err) {
      providerFailed(ctx, err);
      return { outcome: 'provider', written };
    }
    const current = live(state.db);
    if (current.serving?.id !== generation.id && current.building?.id !== generation.id) return { outcome: 'gone', written };
    written += writeVectors(
      state.db,
      generation.id,
      call.map((c, k) => ({ passageId: c.passageId, vector: vectors[k]! })),
    ).written;
    i += call.length;
  }
  return { outcome: 'done', written };
}

/**
 * One pass: arrivals first, then the sweep, at most BatchSize messages in
 * all. Then decides when the next one runs.
 */
async function pass(state: State, ctx: ActorContext): Promise<void> {
  state.timer = null;
  state.nextPassAt = null;
  if (state.passing) {
    state.again = true;
    return;
  }
  state.passing = true;
  const started = Date.now();
  let budget = state.config.backfill.batchSize;
  let embedded = 0;
  let waiting: EmbeddingStatus['waitingFor'] = null;
  let more = false;
  try {
    // A retired generation's vectors go in bounded steps, one per pass, passes following one another while any remain.
    if (purgeRetiredVectors(state.db, PURGE_ROWS).remain) more = true;
    eachGeneration: for (const { generation, endpoint } of targets(state)) {
      const p = await provider(state, ctx, endpoint).catch((err: unknown) => providerFailed(ctx, err));
      if (p === null) {
        waiting = 'provider';
        continue;
      }
      const maxCharacters = maxInput(state, p);
      const cursor = cursorOf(state, generation.id);
      for (const lane of state.config.backfill.enabled ? (['fresh', 'sweep'] as const) : (['fresh'] as const)) {
        while (budget > 0) {
          const segment = unembeddedSegment(state.db, generation.id, { afterMessageId: cursor[lane], maxMessages: budget, maxCharacters });
          if (segment.lastMessageId === null) {
            if (lane === 'sweep') {
              cursor.sweep = 0;
              if (generation.state === 'building') promoteIfComplete(state, ctx, generation);
            }
            break;
          }
          const messages = new Set(segment.passages.map((x) => x.messageId)).size;
          const done = await embedPassages(state, ctx, generation, segment.passages, p, endpoint.batchSize);
          embedded += done.written;
          if (done.outcome === 'gone') continue eachGeneration;
          if (done.outcome !== 'done') {
            waiting = done.outcome;
            break eachGeneration;
          }
          cursor[lane] = segment.lastMessageId;
          budget -= messages;
        }
        if (budget === 0) more = true;
      }
    }
  } finally {
    state.passing = false;
    if (embedded > 0) ctx.log.info({ event: 'embedding.pass', passages: embedded, ms: Date.now() - started }, 'embedding.pass');
    if (waiting !== state.waitingFor && waiting === 'spend') ctx.log.info({ event: 'embedding.spend-exhausted' }, 'embedding.spend-exhausted');
    state.waitingFor = waiting;
    next(state, ctx, more);
  }
}

/** A provider failure is an outside one: logged by its code and class, and work waits. Anything else is a defect. */
function providerFailed(ctx: ActorContext, err: unknown): null {
  if (!(err instanceof AppError)) throw err;
  ctx.log.warn({ event: 'embedding.provider-failed', code: err.code, failure: err.details?.failure ?? null }, 'embedding.provider-failed');
  return null;
}

function next(state: State, ctx: ActorContext, more: boolean): void {
  if (state.abort.signal.aborted || targets(state).length === 0) return;
  const { periodMs } = state.config.spend;
  if (state.waitingFor === 'spend') return schedule(state, ctx, periodStart(Date.now(), periodMs) + periodMs - Date.now());
  if (state.waitingFor === 'provider') return schedule(state, ctx, state.config.backfill.intervalMs);
  if (more || state.again) {
    state.again = false;
    return schedule(state, ctx, 0);
  }
  if (state.config.backfill.enabled) schedule(state, ctx, state.config.backfill.intervalMs);
}

function promoteIfComplete(state: State, ctx: ActorContext, generation: Generation): void {
  if (embeddingForecast(state.db, generation.id, 1).passages > 0) return;
  if (promoteGeneration(state.db, generation.id, Date.now())) {
    ctx.log.info({ event: 'embedding.generation-serving', generation: generation.id }, 'embedding.generation-serving');
    state.cursors.delete(generation.id);
  }
}

/** The declared endpoint's provider, built (not loaded: a local model loads on its first call), for its input bound and health. */
function declaredProvider(state: State): EmbeddingProvider | undefined {
  const declared = state.config.declared;
  return declared === null ? undefined : state.built.get(endpointKey(declared));
}

function forecast(state: State): ActivationForecast {
  const declared = state.config.declared;
  const zero = { passages: 0, characters: 0, approximateTokens: 0, periods: 0 };
  if (declared === null) return { declared: null, effect: 'not-declared', ...zero, forecast: 'No embedding profile is declared; activating would do nothing.' };
  const { serving, building } = live(state.db);
  const built = declaredProvider(state);
  const max = built === undefined ? Math.min(DEFAULT_MAX_INPUT_CHARACTERS, state.config.spend.maxCharactersPerPeriod) : maxInput(state, built);
  const named = `${declared.profile.provider} model ${declared.profile.model} (${declared.profile.dimensions} dimensions)`;
  if (serving !== undefined && sameProfile(serving, declared.profile))
    return {
      declared: declared.profile,
      effect: 'serving',
      ...zero,
      forecast: `The declared profile already serves (generation ${serving.id}); activating it again sends nothing.`,
    };
  const onBuilding = building !== undefined && sameProfile(building, declared.profile);
  const { passages, characters } = embeddingForecast(state.db, onBuilding ? building.id : null, max);
  const approximateTokens = Math.ceil(characters / CHARACTERS_PER_TOKEN);
  const periods = Math.ceil(characters / state.config.spend.maxCharactersPerPeriod);
  const cost = `${passages} passages, about ${characters} characters (~${approximateTokens} tokens) sent to ${named}`;
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

function activate(state: State, ctx: ActorContext): ActivationResult {
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
  schedule(state, ctx, 0);
  return { outcome, generation: begun.id, forecast: before };
}

function cancelReindex(state: State, ctx: ActorContext): CancellationResult {
  const cancelled = cancelBuilding(state.db, Date.now());
  if (cancelled !== null) {
    state.cursors.delete(cancelled);
    ctx.log.info({ event: 'embedding.reindex-cancelled', generation: cancelled }, 'embedding.reindex-cancelled');
    schedule(state, ctx, 0); // purges its vectors
  }
  return { cancelled, serving: live(state.db).serving?.id ?? null };
}

function status(state: State): EmbeddingStatus {
  const declared = state.config.declared;
  const { serving, building } = live(state.db);
  const covered = (g: Generation) => {
    const c = storeCoverage(state.db, g.id);
    return { embeddedEmailCount: c.embedded, emailCount: c.embeddable };
  };
  const health = declaredProvider(state)?.health();
  const start = periodStart(Date.now(), state.config.spend.periodMs);
  return {
    declared: declared?.profile ?? null,
    serving: serving === undefined ? null : { ...profileOf(serving), generation: serving.id, servingSince: iso(serving.servingAt!), ...covered(serving) },
    reindex:
      building === undefined
        ? { state: 'none' }
        : { state: 'building', generation: building.id, profile: profileOf(building), startedAt: iso(building.createdAt), ...covered(building) },
    nextPassAt: state.nextPassAt === null ? null : iso(state.nextPassAt),
    waitingFor: state.waitingFor,
    provider:
      declared === null
        ? { state: 'not-declared', since: null, lastFailure: null }
        : { state: health?.state ?? 'healthy', since: health?.since == null ? null : iso(health.since), lastFailure: health?.lastFailure ?? null },
    spend: {
      usedCharacters: spentIn(state.db, start),
      maxCharacters: state.config.spend.maxCharactersPerPeriod,
      periodStartedAt: iso(start),
      periodEndsAt: iso(start + state.config.spend.periodMs),
    },
  };
}

/**
 * Takes a query's characters from an allowance reserved in the ledger
 * QUERY_ALLOWANCE characters at a time: durable like every spend (a crash
 * forgets at most the unused rest of one allowance, counted as spent), but
 * one write per many searches instead of one per search — a write per
 * search also made every query-pool thread drop its cached coverage counts.
 */
function spendOnQuery(state: State, characters: number): boolean {
  const { maxCharactersPerPeriod, periodMs } = state.config.spend;
  const start = periodStart(Date.now(), periodMs);
  const allowance = state.queryAllowance;
  if (allowance.periodStart === start && allowance.remaining >= characters) {
    allowance.remaining -= characters;
    return true;
  }
  // A new allowance; at the end of the period only what is left, or just this query.
  const left = maxCharactersPerPeriod - spentIn(state.db, start);
  const reserve = Math.max(characters, Math.min(QUERY_ALLOWANCE, left));
  if (!trySpend(state.db, start, reserve, maxCharactersPerPeriod)) return false;
  state.queryAllowance = { periodStart: start, remaining: reserve - characters };
  return true;
}

/**
 * The query placed by the serving generation's own provider (while a changed
 * profile reindexes, the old model still places queries for the vectors it
 * made), or why not: never an error, search goes on lexically.
 */
async function placeQuery(state: State, ctx: ActorContext, text: string): Promise<PlacedQuery> {
  const { serving } = live(state.db);
  if (serving === undefined) return { semanticSearch: 'inactive' };
  const degraded = (code: string): PlacedQuery => {
    ctx.log.warn({ event: 'embedding.query-degraded', code }, 'embedding.query-degraded');
    return { semanticSearch: 'degraded' };
  };
  const endpoint = endpointOf(state, serving);
  if (endpoint === null) return degraded('E_EMBED_NOT_DECLARED');
  try {
    const p = await provider(state, ctx, endpoint);
    if (p.health().state === 'open') return degraded('E_EMBED_CIRCUIT_OPEN');
    const query = text.slice(0, maxInput(state, p));
    if (!spendOnQuery(state, characterCount(query))) return degraded('E_BUDGET_SPENT');
    const signal =
      ctx.deadline === null ? state.abort.signal : AbortSignal.any([state.abort.signal, AbortSignal.timeout(Math.max(1, ctx.deadline - Date.now()))]);
    const [vector] = await p.embed([query], signal);
    return { semanticSearch: 'available', generation: serving.id, vector: vector! };
  } catch (err) {
    if (err instanceof AppError) return degraded(err.code);
    throw err;
  }
}

/** Whether `placeQuery` could answer `available` now, as far as is known without a call (a spent period is found by the call). */
function readiness(state: State): Readiness {
  const { serving } = live(state.db);
  if (serving === undefined) return { canPlaceQuery: false };
  const endpoint = endpointOf(state, serving);
  if (endpoint === null) return { canPlaceQuery: false };
  return { canPlaceQuery: state.built.get(endpointKey(endpoint))?.health().state !== 'open' };
}

export default defineActor({
  name: 'embedding',
  config: EmbeddingConfig,
  messages: Msg,
  init(config, ctx) {
    const db = openSlice(config.store, { checkpoints: 'background' });
    const state: State = {
      config,
      db,
      providers: new Map(),
      built: new Map(),
      passing: false,
      again: false,
      timer: null,
      nextPassAt: null,
      waitingFor: null,
      cursors: new Map(),
      queryAllowance: { periodStart: -1, remaining: 0 },
      abort: new AbortController(),
    };
    ctx.defer(async () => {
      state.abort.abort();
      state.timer?.cancel();
      await Promise.all([...state.built.values()].map((p) => p.close()));
      db.close();
    });
    // Nothing to do until an activation; otherwise resume (the first pass waits a turn, so "just started" shows no next pass).
    const work = targets(state);
    // The serving provider is built at once, so the first search after a restart does not wait for it.
    for (const { endpoint } of work) void provider(state, ctx, endpoint).catch(() => undefined);
    if (work.length > 0 && config.backfill.enabled) state.timer = ctx.schedule({ type: 'embedding.pass' }, 0);
    if (config.declared !== null) void provider(state, ctx, config.declared).catch(() => undefined);
    return state;
  },
  handle(state, msg: Msg, ctx) {
    switch (msg.type) {
      case 'embedding.status':
        return status(state);
      case 'embedding.readiness':
        return readiness(state);
      case 'embedding.forecast':
        return forecast(state);
      case 'embedding.activate':
        return activate(state, ctx);
      case 'embedding.cancel-reindex':
        return cancelReindex(state, ctx);
      case 'embedding.place-query':
        return later(placeQuery(state, ctx, msg.text));
      case 'embedding.derived':
        if (targets(state).length > 0) schedule(state, ctx, ARRIVAL_DELAY_MS);
        return undefined;
      case 'embedding.pass':
        return later(pass(state, ctx));
    }
  },
  stop(state) {
    state.abort.abort();
    state.timer?.cancel();
  },
});
