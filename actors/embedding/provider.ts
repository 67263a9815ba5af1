/**
 * What every embedding provider is to the rest of the embedding actor: texts
 * in, one vector per text out, and a health report. A provider is a client of
 * one configured endpoint and model (`Embeddings` in the configuration):
 * `openai-compatible.ts` (Ollama, llama.cpp's server, vLLM and hosted APIs
 * all speak `/v1/embeddings`), or `local-use-lite.ts`, a model run in
 * process that needs no service.
 *
 * Failures are `AppError`s with one of the `E_EMBED_*` codes of
 * `runtime/errors.ts` (the code is the discriminant, and the error crosses a
 * thread as data). `details.failure` names the class of the last failure. No
 * message, detail or log line carries the input texts, the API key or the
 * provider's response body: a provider echoes its input in its errors, and a
 * passage is mail.
 *
 * Importable from `actors/embedding/` only (not yet wired into the service).
 */
import type { Context } from '@opentelemetry/api';
import { AppError, type Code } from '../../runtime/errors.ts';

/**
 * The class of a failure, for health and logs (never the provider's words):
 * `http-<status>`, `timeout`, `reset` (the connection was cut),
 * `refused-connection`, `network` (any other transport failure), `malformed`,
 * `refused-credential`, `aborted` (the caller gave up), `closed` (called after
 * `close()`).
 */
export type FailureClass = string;

export type ProviderHealth = {
  /**
   * `healthy`: the last call succeeded (or none was made). `failing`: the
   * last call(s) failed but calls still go out (also while a trial call runs
   * after a cool-down). `open`: too many calls in a row failed; calls are
   * refused at once until the cool-down ends.
   */
  readonly state: 'healthy' | 'failing' | 'open';
  /** Epoch ms at which the present state began; null before the first call. */
  readonly since: number | null;
  /** Class of the most recent failure since the last success, or null. */
  readonly lastFailure: FailureClass | null;
  /** Calls that failed in a row. */
  readonly consecutiveFailures: number;
};

/** What a call's texts are: passages of stored mail, or a search query. */
export type EmbeddingUse = 'passages' | 'query';

export type EmbeddingProvider = {
  /** Names the provider kind and model, for logs and health (no address, no key). */
  readonly id: string;
  /**
   * Longest text worth sending, in characters, when the provider has a
   * bound: the caller cuts each text to it before `embed`, so that the
   * characters it counts as sent are the ones embedded. Absent: the caller's
   * default (actors/embedding/actor.ts).
   */
  readonly maxInputCharacters?: number;
  /**
   * One vector per text, in the order given, each of the declared length.
   * One call is one request to the provider (with its retries): batching is
   * the caller's. An empty list answers an empty list without a request.
   * @throws AppError with an `EmbeddingFailureCode`, or `E_CONFIG_SECRET_UNREADABLE` when the API key cannot be read.
   */
  /**
   * `parent`: the trace the call is part of (its `embeddings <model>` span's parent: provider-span.ts).
   * `use`: `query` for a search query, which a provider may run apart from passages (the local model: on a
   * thread of its own, never behind a backfill run); `passages` by default.
   */
  embed(texts: readonly string[], signal?: AbortSignal, parent?: Context, use?: EmbeddingUse): Promise<Float32Array[]>;
  health(): ProviderHealth;
  /** Closes the provider's connections; calls after it fail. */
  close(): Promise<void>;
};

export type EmbeddingFailureCode = Extract<
  Code,
  'E_EMBED_CREDENTIAL_REFUSED' | 'E_EMBED_RATE_LIMITED' | 'E_EMBED_UNAVAILABLE' | 'E_EMBED_MALFORMED' | 'E_EMBED_BAD_REQUEST' | 'E_EMBED_CIRCUIT_OPEN'
>;

/** The error an `embed` call fails with: the code's constant message, and only classes and counts as details. */
export function embeddingFailure(
  code: EmbeddingFailureCode,
  details: { failure: FailureClass | null; attempts: number; status?: number; retryAfterMs?: number; reason?: string },
): AppError {
  const clean: Record<string, string | number | null> = { failure: details.failure, attempts: details.attempts };
  if (details.status !== undefined) clean.status = details.status;
  if (details.retryAfterMs !== undefined) clean.retryAfterMs = details.retryAfterMs;
  if (details.reason !== undefined) clean.reason = details.reason;
  return new AppError(code, { details: clean });
}
