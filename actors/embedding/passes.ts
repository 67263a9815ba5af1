/**
 * Embedding work, in passes of at most `EmbeddingBackfill:BatchSize`
 * messages. Each pass first takes mail newer than any seen (arrivals: the
 * derivation writer tells `embedding.derived`), then continues the sweep of
 * the whole store (the backfill, when enabled), for each generation that
 * takes vectors, serving first. A pass spends before it sends (spend.ts);
 * when the period's characters are used, or the provider fails, work waits
 * (`waitingFor`) until the rollover or the next interval. One timer: a
 * later wish never postpones an earlier pass.
 */
import type { ActorContext } from '../../runtime/actor.ts';
import { lastMessageId, periodStart, unembeddedSegment } from '../../runtime/store/mailbox/embedding-work.ts';
import { type Generation, purgeRetiredVectors, vectorsOfTexts, writeVectors } from '../../runtime/store/mailbox/vectors.ts';
import { RecentWork } from '../../runtime/work-progress.ts';
import { maxInput, providerFailed, providerFor, targets } from './endpoints.ts';
import { live, promoteIfComplete } from './generations.ts';
import type { EmbeddingStatus } from './protocol.ts';
import type { EmbeddingProvider } from './provider.ts';
import { hashKey, textHash } from './repeats.ts';
import { spendOnCall } from './spend.ts';
import type { Cursor, EmbeddingState } from './state.ts';

/** An arrival waits this long for others of the same burst before its pass runs. */
const ARRIVAL_DELAY_MS = 1_000;
/** Retired vectors deleted per purge step. */
const PURGE_ROWS = 5_000;

export function schedulePass(state: EmbeddingState, ctx: ActorContext, delayMs: number): void {
  const at = Date.now() + delayMs;
  if (state.timer !== null && state.nextPassAt !== null && state.nextPassAt <= at) return;
  state.timer?.cancel();
  state.nextPassAt = at;
  state.timer = ctx.schedule({ type: 'embedding.pass' }, delayMs);
}

/** New mail was derived: a pass soon, when anything takes vectors. */
export function arrivalsDerived(state: EmbeddingState, ctx: ActorContext): void {
  if (targets(state).length > 0) schedulePass(state, ctx, ARRIVAL_DELAY_MS);
}

function cursorOf(state: EmbeddingState, generationId: number): Cursor {
  let cursor = state.cursors.get(generationId);
  if (cursor === undefined) {
    // With the backfill off only mail newer than now is embedded.
    cursor = { sweep: 0, fresh: lastMessageId(state.db) };
    state.cursors.set(generationId, cursor);
  }
  return cursor;
}

/**
 * One pass: arrivals first, then the sweep, at most BatchSize messages in
 * all. Then decides when the next one runs.
 */
export async function pass(state: EmbeddingState, ctx: ActorContext): Promise<void> {
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
  let reused = 0;
  let waiting: EmbeddingStatus['waitingFor'] = null;
  let more = false;
  try {
    // A retired generation's vectors go in bounded steps, one per pass, passes following one another while any remain.
    if (purgeRetiredVectors(state.db, PURGE_ROWS).remain) more = true;
    eachGeneration: for (const { generation, endpoint } of targets(state)) {
      const p = await providerFor(state, ctx, endpoint).catch((err: unknown) => providerFailed(ctx, err));
      if (p === null) {
        waiting = 'provider';
        continue;
      }
      const maxCharacters = maxInput(state, p);
      const cursor = cursorOf(state, generation.id);
      for (const lane of state.config.backfill.enabled ? (['fresh', 'sweep'] as const) : (['fresh'] as const)) {
        while (budget > 0) {
          const segment = unembeddedSegment(state.db, generation.id, {
            afterMessageId: cursor[lane],
            maxMessages: budget,
            maxCharacters,
            passagesPerMessage: endpoint.passagesPerMessage,
          });
          if (segment.lastMessageId === null) {
            if (lane === 'sweep') {
              cursor.sweep = 0;
              if (generation.state === 'building') promoteIfComplete(state, ctx, generation, endpoint.passagesPerMessage);
            }
            break;
          }
          const messages = new Set(segment.passages.map((x) => x.messageId)).size;
          const segmentStarted = Date.now();
          const done = await embedPassages(state, ctx, generation, segment.passages, p, endpoint.batchSize);
          embedded += done.written;
          reused += done.reused;
          if (done.outcome === 'gone') continue eachGeneration;
          if (done.outcome !== 'done') {
            waiting = done.outcome;
            break eachGeneration;
          }
          recentWork(state, generation.id).add({ from: segmentStarted, to: Date.now(), count: messages });
          cursor[lane] = segment.lastMessageId;
          budget -= messages;
        }
        if (budget === 0) more = true;
      }
    }
  } finally {
    state.passing = false;
    if (embedded > 0) ctx.log.info({ event: 'embedding.pass', passages: embedded, reused, ms: Date.now() - started }, 'embedding.pass');
    if (waiting !== state.waitingFor && waiting === 'spend') ctx.log.info({ event: 'embedding.spend-exhausted' }, 'embedding.spend-exhausted');
    state.waitingFor = waiting;
    next(state, ctx, more);
  }
}

/** The generation's recent segments: whole messages embedded, and when (the status's pace). */
function recentWork(state: EmbeddingState, generationId: number): RecentWork {
  let recent = state.recent.get(generationId);
  if (recent === undefined) {
    recent = new RecentWork();
    state.recent.set(generationId, recent);
  }
  return recent;
}

type SegmentOutcome = 'done' | 'spend' | 'provider' | 'gone';

function stillTakesVectors(state: EmbeddingState, generation: Generation): boolean {
  const current = live(state.db);
  return current.serving?.id === generation.id || current.building?.id === generation.id;
}

/**
 * Embeds passages in provider calls, spending before each; writes each call's
 * vectors in one transaction. A text the generation already has a vector for
 * (repeats.ts) takes it and is neither spent nor sent; of the rest each
 * distinct text is sent once and its repeats in the segment take its vector.
 */
async function embedPassages(
  state: EmbeddingState,
  ctx: ActorContext,
  generation: Generation,
  passages: ReadonlyArray<{ passageId: number; text: string }>,
  p: EmbeddingProvider,
  batchSize: number,
): Promise<{ outcome: SegmentOutcome; written: number /** passages whose text was not sent: repeats */; reused: number }> {
  const keyed = passages.map((x) => {
    const hash = textHash(x.text);
    return { ...x, hash, key: hashKey(hash) };
  });
  const known = vectorsOfTexts(
    state.db,
    generation.id,
    keyed.map((k) => k.hash),
  );
  if (!stillTakesVectors(state, generation)) return { outcome: 'gone', written: 0, reused: 0 };
  let written = writeVectors(
    state.db,
    generation.id,
    keyed.filter((k) => known.has(k.key)).map((k) => ({ passageId: k.passageId, vector: known.get(k.key)!, textHash: k.hash })),
  ).written;
  const repeats = new Map<string, typeof keyed>();
  const firsts: typeof keyed = [];
  for (const k of keyed) {
    if (known.has(k.key)) continue;
    const seen = repeats.get(k.key);
    if (seen !== undefined) seen.push(k);
    else {
      repeats.set(k.key, []);
      firsts.push(k);
    }
  }
  const reused = keyed.length - firsts.length;
  for (let i = 0; i < firsts.length; ) {
    const call = spendOnCall(state, firsts, i, batchSize);
    if (call === null) return { outcome: 'spend', written, reused };
    let vectors: Float32Array[];
    try {
      vectors = await p.embed(
        call.map((c) => c.text),
        state.abort.signal,
      );
    } catch (err) {
      providerFailed(ctx, err);
      return { outcome: 'provider', written, reused };
    }
    // Cancelled or retired while the call ran: its vectors are not written.
    if (!stillTakesVectors(state, generation)) return { outcome: 'gone', written, reused };
    written += writeVectors(
      state.db,
      generation.id,
      call.flatMap((c, k) => [c, ...repeats.get(c.key)!].map((x) => ({ passageId: x.passageId, vector: vectors[k]!, textHash: c.hash }))),
    ).written;
    i += call.length;
  }
  return { outcome: 'done', written, reused };
}

/** When the next pass runs: at the rollover when spent, after an interval when the provider fails, at once while work remains. */
function next(state: EmbeddingState, ctx: ActorContext, more: boolean): void {
  if (state.abort.signal.aborted || targets(state).length === 0) return;
  const { periodMs } = state.config.spend;
  if (state.waitingFor === 'spend') return schedulePass(state, ctx, periodStart(Date.now(), periodMs) + periodMs - Date.now());
  if (state.waitingFor === 'provider') return schedulePass(state, ctx, state.config.backfill.intervalMs);
  if (more || state.again) {
    state.again = false;
    return schedulePass(state, ctx, 0);
  }
  if (state.config.backfill.enabled) schedulePass(state, ctx, state.config.backfill.intervalMs);
}
