/**
 * One call to the declared chat endpoint: `POST {base}/v1/chat/completions`
 * in the OpenAI wire format, which Ollama, llama.cpp's server, vLLM and
 * hosted APIs answer. The conversation (what to send, when to stop) is the
 * run's; this module sends one request and classifies what came back, over
 * undici with its own connection pool.
 *
 * Time: a call is bounded by the endpoint's `Deadline` AND the caller's
 * signal (the MCP request deadline), whichever ends first. The deadline
 * bounds the whole call, retries included: a 429, a 408, a 5xx or a cut
 * connection is retried with backoff (or after the delay `Retry-After` asks
 * for) only while the wait leaves the next attempt some of the deadline.
 *
 * Errors (one classifier, `statusFailure`/`transportFailure`/`replyOf`):
 * - 401/403 → E_LLM_CREDENTIAL_REFUSED (71001), never retried;
 * - no answer in time, a refused or cut connection, a 5xx or 429 after the
 *   retries, another 4xx → E_LLM_NO_ANSWER (72001);
 * - a 2xx that is not JSON, has no choice, or whose message has neither
 *   text nor tool calls → E_LLM_NO_TEXT (73001);
 * - the caller's signal ended the call → E_LLM_NO_ANSWER with
 *   `details.cause: 'caller-deadline'` (runtime/errors.ts has no code for a
 *   passed request deadline), so the run can tell its own deadline apart.
 * Tool call arguments that are not JSON are returned as they came: what to
 * do with them is the run's decision, not a failure of the call.
 *
 * The API key is a secret reference read at each call (rotation needs no
 * restart) and sent only as `Authorization: Bearer`. Error messages and
 * details carry classes, statuses and counts only: never the provider's
 * body, the messages sent or the key.
 *
 * Importable from `actors/answering/` only.
 */
import type { Context } from '@opentelemetry/api';
import { setTimeout as delay } from 'node:timers/promises';
import type { Dispatcher } from 'undici';
import { readCapped, TOO_LARGE } from '../../runtime/http-retry/read-capped.ts';
import { z } from 'zod';
import { mathRandom, type Random } from '../../runtime/clock.ts';
import { AppError, type Code, type ErrorDetails } from '../../runtime/errors.ts';
import { retryAfterMs } from '../../runtime/http-retry/retry-after.ts';
import { LazyAgent } from '../../runtime/http-retry/undici.ts';
import { readSecret } from '../../runtime/secret-ref.ts';
import { backoffDelay, type BackoffPolicy } from '../../runtime/supervisor/backoff.ts';
import { genAiSpans, recordTokenUsage, type Span } from '../../runtime/telemetry/gen-ai.ts';

// ---------------------------------------------------------------- our side of the wire

export type ChatToolCall = { id: string; name: string; arguments: string };

export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  /** A turn of the model, sent back as the conversation goes on; `toolCalls` as the reply gave them. */
  | { role: 'assistant'; content: string | null; toolCalls?: ChatToolCall[] }
  /** The result of one tool call, answering the call of that id. */
  | { role: 'tool'; toolCallId: string; content: string };

/** A function offered to the model; `parameters` is a JSON schema object. */
export type ChatTool = { name: string; description: string; parameters: Record<string, unknown> };

export type ChatRequest = { messages: ChatMessage[]; tools?: ChatTool[]; toolChoice?: 'auto' | 'none' };

export type ChatReply = {
  /** The model's text; null when it gave none (or only white space). */
  text: string | null;
  /** Calls the model asks for; `arguments` is the JSON string as given, parsed by the run. */
  toolCalls: ChatToolCall[];
  finishReason: string | null;
};

/** Waits `ms`, rejecting when `signal` aborts; injectable so tests can count waits. */
export type Sleep = (ms: number, signal: AbortSignal) => Promise<void>;

export type ChatRetryPolicy = {
  /** Requests per call, the first included. */
  readonly maxAttempts: number;
  /** First backoff delay; it doubles per retry, ±20 % jitter. */
  readonly baseMs: number;
  readonly maxMs: number;
};

export const DEFAULT_CHAT_RETRY: ChatRetryPolicy = { maxAttempts: 3, baseMs: 500, maxMs: 8_000 };

export type ChatClientOptions = {
  /** `Answering:Endpoints:n:BaseAddress`. */
  baseAddress: string;
  model: string;
  /** `ApiKey`, a secret reference; no Authorization header without one. */
  apiKeyRef: string | null;
  /** The endpoint's `Deadline`: one whole call, retries included. */
  deadlineMs: number;
  /** Where `env:` and `systemd:` references are read (default `process.env`). */
  env?: NodeJS.ProcessEnv;
  retry?: Partial<ChatRetryPolicy>;
  sleep?: Sleep;
  random?: Random;
};

export type ChatClient = {
  /** `parent`: the trace the call is part of (its `chat <model>` span's parent); absent, the active context. */
  complete(request: ChatRequest, signal: AbortSignal, parent?: Context): Promise<ChatReply>;
  close(): Promise<void>;
};

/**
 * Where completions are asked for: trailing slashes dropped; a base whose
 * path ends in `/v1` gets `/chat/completions`, any other gets
 * `/v1/chat/completions` (the rule of the embeddings address). A query string
 * is kept.
 */
export function chatCompletionsUrl(baseAddress: string): URL {
  const url = new URL(baseAddress);
  const path = url.pathname.replace(/\/+$/, '');
  url.pathname = /\/v1$/.test(path) ? `${path}/chat/completions` : `${path}/v1/chat/completions`;
  url.hash = '';
  return url;
}

// ---------------------------------------------------------------- the wire

type WireMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: WireToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };
type WireToolCall = { id: string; type: 'function'; function: { name: string; arguments: string } };

function wireMessage(message: ChatMessage): WireMessage {
  switch (message.role) {
    case 'system':
    case 'user':
      return { role: message.role, content: message.content };
    case 'assistant': {
      const calls = message.toolCalls ?? [];
      if (calls.length === 0) return { role: 'assistant', content: message.content ?? '' };
      return {
        role: 'assistant',
        content: message.content,
        tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })),
      };
    }
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId, content: message.content };
  }
}

function wireBody(model: string, req: ChatRequest): string {
  return JSON.stringify({
    model,
    messages: req.messages.map(wireMessage),
    ...(req.tools === undefined || req.tools.length === 0
      ? {}
      : { tools: req.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } })) }),
    ...(req.toolChoice === undefined ? {} : { tool_choice: req.toolChoice }),
    stream: false,
  });
}

/**
 * The part of the answer we use. Servers differ at the edges: some omit a
 * call's id or `type`, some give `arguments` as an object, some give
 * `content` as text parts; all of those are read. Other fields vary and are
 * ignored.
 */
const WireReply = z.object({
  choices: z
    .array(
      z.object({
        message: z.object({
          content: z.union([z.string(), z.array(z.object({ type: z.string(), text: z.string().optional() })), z.null()]).optional(),
          tool_calls: z
            .array(
              z.object({
                id: z.string().optional(),
                function: z.object({ name: z.string().min(1), arguments: z.union([z.string(), z.record(z.string(), z.unknown())]).optional() }),
              }),
            )
            .nullable()
            .optional(),
        }),
        finish_reason: z.string().nullable().optional(),
      }),
    )
    .min(1),
  /** Read leniently (usageOf): a server's odd `usage` must not cost the answer. */
  usage: z.unknown().optional(),
});

/** Token counts, when the server reports them (`usage.prompt_tokens`, `usage.completion_tokens`); for the call's span only. */
type Usage = { input?: number; output?: number };

function usageOf(usage: unknown): Usage {
  if (typeof usage !== 'object' || usage === null) return {};
  const count = (v: unknown): number | undefined => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : undefined);
  const { prompt_tokens, completion_tokens } = usage as { prompt_tokens?: unknown; completion_tokens?: unknown };
  const input = count(prompt_tokens);
  const output = count(completion_tokens);
  return { ...(input !== undefined ? { input } : {}), ...(output !== undefined ? { output } : {}) };
}

/** Largest answer read; a chat answer is text and a few calls, far below this. */
const MAX_ANSWER_BYTES = 8 * 1024 * 1024;
/** A retry needs at least this share of the deadline left after its wait, or it would only time out. */
const MIN_ATTEMPT_SHARE = 0.1;

// ---------------------------------------------------------------- outcomes

type Failure = {
  ok: false;
  code: Code;
  /** Class of the failure, for details and logs. */
  failure: string;
  retry: boolean;
  status?: number;
  retryAfterMs?: number;
  reason?: string;
};
type Outcome = { ok: true; reply: ChatReply; usage: Usage } | Failure;

const RESET_CODES = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);
const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT', 'ETIMEDOUT']);

function statusFailure(status: number, retryAfter: number | null): Failure {
  const after = retryAfter === null ? {} : { retryAfterMs: retryAfter };
  if (status === 401 || status === 403) return { ok: false, code: 'E_LLM_CREDENTIAL_REFUSED', failure: 'refused-credential', retry: false, status };
  if (status === 429 || status === 408 || status >= 500)
    return { ok: false, code: 'E_LLM_NO_ANSWER', failure: `http-${status}`, retry: true, status, ...after };
  // Another 4xx (a model the server does not have, a request it will not take) or a 1xx/3xx (redirects are not followed): asking again changes nothing.
  return { ok: false, code: 'E_LLM_NO_ANSWER', failure: `http-${status}`, retry: false, status };
}

function transportFailure(err: unknown, deadline: AbortSignal): Failure {
  const code = (err as { code?: unknown } | null)?.code;
  if (deadline.aborted || (typeof code === 'string' && TIMEOUT_CODES.has(code))) {
    // The deadline bounds the whole call: nothing is left to retry with.
    return { ok: false, code: 'E_LLM_NO_ANSWER', failure: 'timeout', retry: false };
  }
  let failure = 'network';
  if (typeof code === 'string' && RESET_CODES.has(code)) failure = 'reset';
  else if (code === 'ECONNREFUSED') failure = 'refused-connection';
  return { ok: false, code: 'E_LLM_NO_ANSWER', failure, retry: true };
}

function noText(reason: string): Failure {
  return { ok: false, code: 'E_LLM_NO_TEXT', failure: 'no-text', retry: false, reason };
}

/** The reply in a parsed 2xx body, or why it holds none. */
function replyOf(json: unknown): Outcome {
  const parsed = WireReply.safeParse(json);
  if (!parsed.success) {
    const choices = (json as { choices?: unknown } | null)?.choices;
    return noText(Array.isArray(choices) && choices.length > 0 ? 'shape' : 'no-choices');
  }
  const [choice] = parsed.data.choices;
  const { content, tool_calls } = choice!.message;
  const raw = Array.isArray(content) ? content.map((part) => (part.type === 'text' ? (part.text ?? '') : '')).join('') : (content ?? '');
  const text = raw.trim() === '' ? null : raw;
  const toolCalls = (tool_calls ?? []).map((call, index) => ({
    // A server that names no id still needs one echoed back; the index is stable within the turn.
    id: call.id !== undefined && call.id !== '' ? call.id : `call_${index}`,
    name: call.function.name,
    arguments: typeof call.function.arguments === 'string' ? call.function.arguments : JSON.stringify(call.function.arguments ?? {}),
  }));
  if (text === null && toolCalls.length === 0) return noText('empty');
  return { ok: true, reply: { text, toolCalls, finishReason: choice!.finish_reason ?? null }, usage: usageOf(parsed.data.usage) };
}

// ---------------------------------------------------------------- the client

export function createChatClient(options: ChatClientOptions): ChatClient {
  const url = chatCompletionsUrl(options.baseAddress);
  const retry = { ...DEFAULT_CHAT_RETRY, ...options.retry };
  const backoff: BackoffPolicy = { baseMs: retry.baseMs, factor: 2, maxMs: retry.maxMs, jitter: 0.2, stableAfterMs: 0 };
  const random = options.random ?? mathRandom;
  const sleep: Sleep = options.sleep ?? ((ms, signal) => delay(ms, undefined, { signal }));
  // Our own pool: its sockets close with the client, and the deadline bounds connecting too.
  const pool = new LazyAgent({ connect: { timeout: options.deadlineMs } });
  let closed = false;

  async function attempt(body: string, apiKey: string | null, signal: AbortSignal, deadline: AbortSignal): Promise<Outcome> {
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
    if (apiKey !== null) headers.authorization = `Bearer ${apiKey}`;
    let res: Dispatcher.ResponseData;
    try {
      const { agent, request } = await pool.get();
      res = await request(url, {
        method: 'POST',
        headers,
        body,
        dispatcher: agent,
        signal,
        headersTimeout: options.deadlineMs,
        bodyTimeout: options.deadlineMs,
      });
    } catch (err) {
      return transportFailure(err, deadline);
    }
    const status = res.statusCode;
    if (status < 200 || status >= 300) {
      // The body is the provider's words (it may echo the conversation): drained unread.
      await res.body.dump().catch(() => undefined);
      return statusFailure(status, retryAfterMs(res.headers['retry-after'], Date.now()));
    }
    let text: string;
    try {
      text = await readCapped(res.body, MAX_ANSWER_BYTES);
    } catch (err) {
      if (err === TOO_LARGE) return noText('too-large');
      return transportFailure(err, deadline);
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      return noText('not-json');
    }
    return replyOf(json);
  }

  const spans = genAiSpans({ operation: 'chat', model: options.model, provider: 'openai', baseAddress: options.baseAddress });

  async function complete(req: ChatRequest, callerSignal: AbortSignal, span: Span): Promise<ChatReply> {
    if (closed) throw new AppError('E_LLM_NO_ANSWER', { details: { failure: 'closed', attempts: 0 } });
    if (callerSignal.aborted) throw callerDeadline(0);
    const apiKey = options.apiKeyRef === null ? null : readSecret(options.apiKeyRef, options.env, 'Answering:Endpoints:ApiKey');
    const body = wireBody(options.model, req);
    const startedAt = performance.now();
    const deadline = AbortSignal.timeout(options.deadlineMs);
    const signal = AbortSignal.any([callerSignal, deadline]);
    for (let attempts = 1; ; attempts++) {
      const outcome = await attempt(body, apiKey, signal, deadline);
      if (callerSignal.aborted) throw callerDeadline(attempts);
      if (outcome.ok) {
        recordTokenUsage(span, outcome.usage);
        return outcome.reply;
      }
      const remaining = options.deadlineMs - (performance.now() - startedAt);
      const wait = outcome.retryAfterMs ?? backoffDelay(backoff, attempts, random);
      if (!outcome.retry || attempts >= retry.maxAttempts || wait + options.deadlineMs * MIN_ATTEMPT_SHARE > remaining) {
        throw failureError(outcome, attempts);
      }
      try {
        await sleep(wait, signal);
      } catch {
        if (callerSignal.aborted) throw callerDeadline(attempts);
        throw failureError({ ok: false, code: 'E_LLM_NO_ANSWER', failure: 'timeout', retry: false }, attempts);
      }
    }
  }

  return {
    // One `chat <model>` span per call, retries included (runtime/telemetry/gen-ai.ts): never the conversation.
    complete: (req, callerSignal, parent) => spans.run((span) => complete(req, callerSignal, span), parent),
    async close() {
      if (closed) return;
      closed = true;
      await pool.destroy();
    },
  };
}

function failureError(outcome: Failure, attempts: number): AppError {
  const details: ErrorDetails = { failure: outcome.failure, attempts };
  if (outcome.status !== undefined) details.status = outcome.status;
  if (outcome.retryAfterMs !== undefined) details.retryAfterMs = outcome.retryAfterMs;
  if (outcome.reason !== undefined) details.reason = outcome.reason;
  return new AppError(outcome.code, { details });
}

function callerDeadline(attempts: number): AppError {
  return new AppError('E_LLM_NO_ANSWER', {
    message: 'The request deadline passed before the chat provider answered',
    details: { failure: 'aborted', cause: 'caller-deadline', attempts },
  });
}
