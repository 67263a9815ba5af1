/**
 * The embedding provider for the OpenAI-compatible API: `POST /v1/embeddings`
 * with `{ model, input: [...] }`, which Ollama, llama.cpp's server, vLLM and
 * hosted APIs answer. Over undici, with its own connection pool.
 *
 * Address: `embeddingsUrl` below. Each request has a deadline
 * (`requestTimeoutMs`, from `Embeddings:RequestTimeout`). A 429, a 408, a 5xx,
 * a cut connection or a deadline passed is retried with exponential backoff
 * and jitter, or after the delay `Retry-After` asks for; at most
 * `maxAttempts` requests and `maxTotalWaitMs` of waiting per call, and a
 * `Retry-After` longer than `maxRetryAfterMs` ends the call at once (we
 * neither wait that long nor ask sooner than told). 401/403, another 4xx and
 * an answer we cannot use are never retried. Calls pass through a circuit
 * (runtime/circuit.ts) that opens after repeated failed calls; `health()` reports it.
 *
 * The API key is a secret reference read at each call (rotation needs no
 * restart) and sent only as `Authorization: Bearer`. Errors and log lines
 * carry classes, statuses and counts only: never the input, the key or the
 * provider's response body (see `provider.ts`).
 *
 * Importable from `actors/embedding/` only.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { Dispatcher } from 'undici';
import { readCapped, TOO_LARGE } from '../../runtime/http-retry/read-capped.ts';
import { z } from 'zod';
import { type Clock, mathRandom, type Random, systemClock } from '../../runtime/clock.ts';
import type { Logger } from '../../runtime/log.ts';
import { readSecret } from '../../runtime/secret-ref.ts';
import { backoffDelay, type BackoffPolicy } from '../../runtime/supervisor/backoff.ts';
import { Circuit, type CircuitPolicy, DEFAULT_CIRCUIT } from '../../runtime/circuit.ts';
import { type EmbeddingFailureCode, type EmbeddingProvider, embeddingFailure, type FailureClass } from './provider.ts';
import { retryAfterMs } from '../../runtime/http-retry/retry-after.ts';
import { LazyAgent } from '../../runtime/http-retry/undici.ts';

/** Waits `ms`, rejecting when `signal` aborts; injected so tests neither wait nor depend on timers. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

export type RetryPolicy = {
  /** Requests per call, the first included. */
  readonly maxAttempts: number;
  /** First backoff delay; it doubles per retry, ±20 % jitter. */
  readonly baseMs: number;
  readonly maxMs: number;
  /** Longest `Retry-After` honoured; a longer one ends the call (rate-limited). */
  readonly maxRetryAfterMs: number;
  /** Waiting between attempts of one call, at most. */
  readonly maxTotalWaitMs: number;
};

export const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 3, baseMs: 500, maxMs: 8_000, maxRetryAfterMs: 30_000, maxTotalWaitMs: 30_000 };

export type OpenAiCompatibleOptions = {
  /** `Embeddings:BaseAddress`. */
  baseAddress: string;
  model: string;
  /** Length every returned vector must have. */
  dimensions: number;
  /** `Embeddings:ApiKey`, a secret reference; no Authorization header without one. */
  apiKeyRef?: string | undefined;
  /** Deadline of one request, connection to last byte. */
  requestTimeoutMs: number;
  retry?: Partial<RetryPolicy>;
  circuit?: Partial<CircuitPolicy>;
  clock?: Clock;
  random?: Random;
  sleep?: Sleep;
  log?: Logger;
  /** Where `env:` and `systemd:` references are read (default `process.env`). */
  env?: NodeJS.ProcessEnv;
};

/**
 * Where the embeddings are asked for. Trailing slashes are dropped; a base
 * whose path already ends in `/v1` gets `/embeddings`, any other gets
 * `/v1/embeddings` (so `http://host:11434`, `http://host:11434/v1` and
 * `https://gateway.example/openai/v1/` all work). A query string is kept.
 */
export function embeddingsUrl(baseAddress: string): URL {
  const url = new URL(baseAddress);
  const path = url.pathname.replace(/\/+$/, '');
  url.pathname = /\/v1$/.test(path) ? `${path}/embeddings` : `${path}/v1/embeddings`;
  url.hash = '';
  return url;
}

/** The part of the answer we use; other fields (`object`, `model`, `usage`) vary by server and are ignored. */
const EmbeddingsAnswer = z.object({
  data: z.array(z.object({ index: z.number().int().nonnegative(), embedding: z.array(z.number()) })),
});

type Outcome =
  | { ok: true; vectors: Float32Array[] }
  | {
      ok: false;
      code: EmbeddingFailureCode;
      failure: FailureClass;
      retry: boolean;
      status?: number;
      retryAfterMs?: number;
      /** For `malformed`: what was wrong, as a class. */
      reason?: string;
    };

const RESET_CODES = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);
const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT', 'ETIMEDOUT']);

export class OpenAiCompatible implements EmbeddingProvider {
  readonly id: string;
  private readonly url: URL;
  private readonly options: OpenAiCompatibleOptions;
  private readonly retry: RetryPolicy;
  private readonly backoff: BackoffPolicy;
  private readonly circuit: Circuit;
  private readonly clock: Clock;
  private readonly random: Random;
  private readonly sleep: Sleep;
  private readonly agent: LazyAgent;
  private closed = false;

  constructor(options: OpenAiCompatibleOptions) {
    this.options = options;
    this.url = embeddingsUrl(options.baseAddress);
    this.id = `openai-compatible:${options.model}`;
    this.retry = { ...DEFAULT_RETRY, ...options.retry };
    this.backoff = { baseMs: this.retry.baseMs, factor: 2, maxMs: this.retry.maxMs, jitter: 0.2, stableAfterMs: 0 };
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? mathRandom;
    this.sleep = options.sleep ?? ((ms, signal) => delay(ms, undefined, signal ? { signal } : {}));
    this.circuit = new Circuit({ ...DEFAULT_CIRCUIT, ...options.circuit }, this.clock);
    // Our own pool: its sockets close with the provider, and a deadline bounds connecting too.
    this.agent = new LazyAgent({ connect: { timeout: options.requestTimeoutMs } });
  }

  health() {
    return this.circuit.health();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.agent.destroy();
  }

  async embed(texts: readonly string[], signal?: AbortSignal): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    if (this.closed) throw embeddingFailure('E_EMBED_UNAVAILABLE', { failure: 'closed', attempts: 0 });
    const apiKey = this.options.apiKeyRef === undefined ? undefined : readSecret(this.options.apiKeyRef, this.options.env, 'Embeddings:ApiKey');
    if (!this.circuit.admit()) {
      throw embeddingFailure('E_EMBED_CIRCUIT_OPEN', { failure: this.circuit.health().lastFailure, attempts: 0 });
    }
    let outcome: Outcome;
    let attempts: number;
    try {
      ({ outcome, attempts } = await this.attempts(texts, apiKey, signal));
    } catch (err) {
      this.circuit.released();
      throw err;
    }
    if (outcome.ok) {
      if (this.circuit.succeeded() === 'closed') this.options.log?.info({ event: 'embedding.circuit-closed', provider: this.id }, 'embedding.circuit-closed');
      return outcome.vectors;
    }
    // A refused request (bad input, too long) and a caller that gave up say nothing about the provider's health.
    if (outcome.code === 'E_EMBED_BAD_REQUEST' || outcome.failure === 'aborted') this.circuit.released();
    else if (this.circuit.failed(outcome.failure) === 'opened') {
      const { consecutiveFailures } = this.circuit.health();
      this.options.log?.warn(
        { event: 'embedding.circuit-opened', provider: this.id, failure: outcome.failure, failures: consecutiveFailures },
        'embedding.circuit-opened',
      );
    }
    throw embeddingFailure(outcome.code, {
      failure: outcome.failure,
      attempts,
      ...(outcome.status === undefined ? {} : { status: outcome.status }),
      ...(outcome.retryAfterMs === undefined ? {} : { retryAfterMs: outcome.retryAfterMs }),
      ...(outcome.reason === undefined ? {} : { reason: outcome.reason }),
    });
  }

  /** Requests until one succeeds, one fails for good, or the retry budget is spent. */
  private async attempts(texts: readonly string[], apiKey: string | undefined, signal?: AbortSignal): Promise<{ outcome: Outcome; attempts: number }> {
    let waited = 0;
    for (let attempt = 1; ; attempt++) {
      const outcome = await this.attempt(texts, apiKey, signal);
      if (outcome.ok || !outcome.retry || attempt >= this.retry.maxAttempts) return { outcome, attempts: attempt };
      const asked = outcome.retryAfterMs;
      if (asked !== undefined && asked > this.retry.maxRetryAfterMs) return { outcome, attempts: attempt };
      const wait = asked ?? backoffDelay(this.backoff, attempt, this.random);
      if (waited + wait > this.retry.maxTotalWaitMs) return { outcome, attempts: attempt };
      this.options.log?.info(
        { event: 'embedding.retry', provider: this.id, attempt, failure: outcome.failure, delayMs: wait, retryAfter: asked !== undefined },
        'embedding.retry',
      );
      try {
        await this.sleep(wait, signal);
      } catch {
        return { outcome: { ok: false, code: 'E_EMBED_UNAVAILABLE', failure: 'aborted', retry: false }, attempts: attempt };
      }
      waited += wait;
    }
  }

  /** One request, classified. Never throws. */
  private async attempt(texts: readonly string[], apiKey: string | undefined, signal?: AbortSignal): Promise<Outcome> {
    if (signal?.aborted) return { ok: false, code: 'E_EMBED_UNAVAILABLE', failure: 'aborted', retry: false };
    const deadline = AbortSignal.timeout(this.options.requestTimeoutMs);
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
    if (apiKey !== undefined) headers.authorization = `Bearer ${apiKey}`;
    let res: Dispatcher.ResponseData;
    try {
      const { agent, request } = await this.agent.get();
      res = await request(this.url, {
        method: 'POST',
        headers,
        body: JSON.stringify({ model: this.options.model, input: texts }),
        dispatcher: agent,
        signal: signal ? AbortSignal.any([signal, deadline]) : deadline,
        headersTimeout: this.options.requestTimeoutMs,
        bodyTimeout: this.options.requestTimeoutMs,
      });
    } catch (err) {
      return transportFailure(err, signal, deadline);
    }
    const status = res.statusCode;
    if (status < 200 || status >= 300) {
      // The body is the provider's words (it may echo our input): drained unread.
      await res.body.dump().catch(() => undefined);
      return statusFailure(status, retryAfterMs(res.headers['retry-after'], this.clock.now()));
    }
    let text: string;
    try {
      text = await readCapped(res.body, answerLimit(texts.length, this.options.dimensions));
    } catch (err) {
      if (err === TOO_LARGE) return malformed('too-large');
      return transportFailure(err, signal, deadline);
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      return malformed('not-json');
    }
    return this.vectorsOf(json, texts.length);
  }

  /** The vectors in input order, or `malformed` when the answer is not one vector of the declared length per input. */
  private vectorsOf(json: unknown, count: number): Outcome {
    const parsed = EmbeddingsAnswer.safeParse(json);
    if (!parsed.success) return malformed('shape');
    const { data } = parsed.data;
    if (data.length !== count) return malformed('count');
    const vectors: Float32Array[] = new Array(count);
    for (const item of data) {
      if (item.index >= count || vectors[item.index] !== undefined) return malformed('index');
      if (item.embedding.length !== this.options.dimensions) return malformed('dimensions');
      vectors[item.index] = Float32Array.from(item.embedding);
    }
    return { ok: true, vectors };
  }
}

function malformed(reason: string): Outcome {
  return { ok: false, code: 'E_EMBED_MALFORMED', failure: 'malformed', retry: false, reason };
}

function statusFailure(status: number, retryAfter: number | null): Outcome {
  const after = retryAfter === null ? {} : { retryAfterMs: retryAfter };
  const failure = `http-${status}`;
  if (status === 401 || status === 403) return { ok: false, code: 'E_EMBED_CREDENTIAL_REFUSED', failure: 'refused-credential', retry: false, status };
  if (status === 429) return { ok: false, code: 'E_EMBED_RATE_LIMITED', failure, retry: true, status, ...after };
  if (status === 408 || status >= 500) return { ok: false, code: 'E_EMBED_UNAVAILABLE', failure, retry: true, status, ...after };
  if (status >= 400) return { ok: false, code: 'E_EMBED_BAD_REQUEST', failure, retry: false, status };
  // 1xx/3xx: redirects are not followed; the address is wrong.
  return { ok: false, code: 'E_EMBED_MALFORMED', failure, retry: false, status, reason: 'status' };
}

function transportFailure(err: unknown, signal: AbortSignal | undefined, deadline: AbortSignal): Outcome {
  if (signal?.aborted) return { ok: false, code: 'E_EMBED_UNAVAILABLE', failure: 'aborted', retry: false };
  const code = (err as { code?: unknown } | null)?.code;
  let failure: FailureClass = 'network';
  if (deadline.aborted || (typeof code === 'string' && TIMEOUT_CODES.has(code))) failure = 'timeout';
  else if (typeof code === 'string' && RESET_CODES.has(code)) failure = 'reset';
  else if (code === 'ECONNREFUSED') failure = 'refused-connection';
  return { ok: false, code: 'E_EMBED_UNAVAILABLE', failure, retry: true };
}

/** Largest answer read: about 32 bytes of JSON per number, plus room for the envelope. */
function answerLimit(count: number, dimensions: number): number {
  return count * (dimensions * 32 + 256) + 64 * 1024;
}
