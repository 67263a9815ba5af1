/**
 * The request pipeline every HTTP listener is built from (MCP listener,
 * administrative listener; the attachment route runs inside the MCP one).
 * Each listener puts the stages in its own order (the MCP listener judges
 * the credential before the limiter so a key picks its bucket; the
 * administrative one limits first, one bucket for all) and answers
 * refusals in its own shape (empty bodies and Bearer challenges on MCP,
 * RFC 9457 problem documents on the administrative surface); what is here
 * is written once:
 *
 * - `createListener`: the node:http server, its `ExchangeResponse`, the
 *   host guard (a `Host` that may not be served is an empty 403 before
 *   anything else: http/host-guard.ts), the route lookup (an unknown path
 *   is an empty 404 before any credential is looked at; a route is matched
 *   with its template, what telemetry names it by) and the one answer to a
 *   handler's failure (an empty 500, or the connection cut when an answer
 *   was begun); each exchange is measured and traced
 *   (pipeline/exchange-telemetry.ts);
 * - `admit`: request timeout (504, written once, the exchange abandoned
 *   after it) → the surface's limiter, token bucket then concurrency (429)
 *   → the permit released when the response closes or times out;
 * - `admitCredential`: the credential judgement answered (401 empty with
 *   the challenge, 403 for a token refused by scope or subject);
 * - `readBody`/`readJson` (pipeline/request-body.ts): the one body reader,
 *   with a 413 that reaches the client, and JSON bounded in depth
 *   (`MAX_JSON_DEPTH`, pipeline/json-depth.ts) before it is parsed;
 * - the answers shared by the stages. Refusals carry no body and name
 *   nothing.
 *
 * Imported by the listeners and the routes they run.
 */
import type { Context } from '@opentelemetry/api';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Codes } from '../runtime/errors.ts';
import type { Judgement } from './auth/authenticate.ts';
import { answerTokenRefusal, unauthorizedChallenge } from './auth/oauth/challenge.ts';
import type { Principal } from './auth/principal.ts';
import type { HostGuard } from './host-guard.ts';
import { answerTooMany, type PartitionKey, type RateLimiter } from './limits/rate-limiter.ts';
import { httpServer } from './listen.ts';
import { withRequestTimeout, type RequestTimeoutSettings } from './limits/request-timeout.ts';
import type { ExchangeResponse } from './pipeline/exchange-response.ts';
import { observeExchange, type TelemetrySurface } from './pipeline/exchange-telemetry.ts';

export { ExchangeResponse } from './pipeline/exchange-response.ts';
export { readBody, readJson, type BodyRead, type JsonRead } from './pipeline/request-body.ts';
export { MAX_JSON_DEPTH } from './pipeline/json-depth.ts';
export type { TelemetrySurface } from './pipeline/exchange-telemetry.ts';

/** A route's handler, run once the listener matched the path. */
/** `trace`: the exchange's span's context, the parent of what the handler starts (pipeline/exchange-telemetry.ts). */
export type Handler = (req: IncomingMessage, res: ExchangeResponse, trace: Context) => Promise<void>;

/** A handler for what was answered while routing (e.g. the metadata document). */
export const ANSWERED: Handler = async () => {};

/**
 * What a path was routed to: the handler, and the route's template, which
 * names the exchange in metrics, spans and the failure's log line
 * (`/attachments/{capability}`, `/api/admin/outbox/{id}`: never the path
 * sent). Null template: the handler answers a path no route matches (the
 * administrative surface judges the credential before its 404).
 */
export type Routed = { readonly template: string | null; readonly handler: Handler };

export type ListenerOptions = {
  /** The `mailcairn.surface` of the exchanges' metrics. */
  surface: TelemetrySurface;
  /** Which `Host` may be served (http/host-guard.ts), judged before routing: an empty 403 otherwise. Absent: every one. */
  hosts?: HostGuard;
  /** The handler of a path and its template, or null: an empty 404 (no credential looked at, nothing spent). */
  route(req: IncomingMessage, res: ExchangeResponse, path: string): Routed | null;
  /**
   * Logs a handler's failure by the route's template only (a path may carry
   * a capability), with the trace id of the exchange's span when one is
   * recorded (the exported span carries the same).
   */
  failed(err: unknown, failure: { route: string | null; traceId: string | undefined }): void;
};

/** What a surface answers, whatever carries it: a clear-text listener (`createListener`) or a TLS one (http/tls/secure-server.ts). */
export type SurfaceHandler = (req: IncomingMessage, res: ExchangeResponse) => void;

/** The route lookup and the one answer to a handler's failure, for any server to call. */
export function surfaceHandler(options: ListenerOptions): SurfaceHandler {
  return (req, res) => {
    const exchange = observeExchange(req, res, options.surface);
    exchange.run(() => {
      if (options.hosts !== undefined && !options.hosts.admits(req)) {
        req.resume();
        return answerEmpty(res, Codes.E_HTTP_HOST_REFUSED.status);
      }
      const routed = options.route(req, res, pathOf(req.url));
      if (routed === null) {
        req.resume();
        return answerEmpty(res, Codes.E_HTTP_NO_ROUTE.status);
      }
      exchange.routed(routed.template);
      routed.handler(req, res, exchange.context).catch((err: unknown) => {
        options.failed(err, { route: routed.template, traceId: exchange.failed(err) });
        if (!res.headersSent) answerEmpty(res, Codes.E_INTERNAL.status);
        else res.destroy();
      });
    });
  };
}

/** A clear-text server answering with `handler`, not yet listening. */
export function clearTextServer(handler: SurfaceHandler): Server {
  // Every response is an ExchangeResponse (http/listen.ts `httpServer`), which the handler is typed with.
  return httpServer(handler as (req: IncomingMessage, res: ServerResponse) => void);
}

export function createListener(options: ListenerOptions): Server {
  return clearTextServer(surfaceHandler(options));
}

export type Limits = {
  readonly limiter: RateLimiter;
  readonly timeout: RequestTimeoutSettings;
};

export type Admission = {
  /** What is left of the request timeout for an actor `ask` (every `ask` carries a deadline: docs/actors.md), ending a moment before it. */
  readonly deadlineMs: number;
  /** Whether the request timeout answered 504 (or cut the answer off): write nothing more. */
  timedOut(): boolean;
};

/**
 * The request timeout and the limiter: a permit of the partition, or 429
 * (and null). Past the request timeout the exchange is answered 504 once,
 * abandoned (`ExchangeResponse.abandoned`: whatever the handler still
 * writes is dropped) and its permit released. The queue wait counts toward
 * the timeout.
 */
export async function admit(req: IncomingMessage, res: ExchangeResponse, limits: Limits, partition: PartitionKey): Promise<Admission | null> {
  let release = (): void => {};
  const deadline = withRequestTimeout(res, limits.timeout, () => {
    release();
    res.abandon();
  });
  const lease = await limits.limiter.acquire(partition, { signal: deadline.signal });
  if (!lease.ok) {
    req.resume();
    answerTooMany(res, lease.retryAfterSeconds);
    return null;
  }
  release = lease.release;
  res.once('close', release);
  // Asks end a moment before the request timeout, so a slow ask is answered by the route rather than a bare 504.
  const deadlineMs = deadline.deadline === null ? 60 * 60_000 : Math.max(1_000, deadline.deadline - Date.now() - 250);
  return { deadlineMs, timedOut: deadline.timedOut };
}

/** The principal of an admitted judgement; otherwise answers 401 (empty, with the challenge) or the token's 403, and null. */
export function admitCredential(req: IncomingMessage, res: ServerResponse, judgement: Judgement, metadataUrl: string | undefined): Principal | null {
  if (judgement.kind === 'admitted') return judgement.principal;
  req.resume();
  if (judgement.kind === 'refused') answerUnauthenticated(res, metadataUrl);
  else answerTokenRefusal(res, judgement.refusal, metadataUrl);
  return null;
}

/** The spec's refusal of a credential: empty body and the Bearer challenge. */
export function answerUnauthenticated(res: ServerResponse, metadataUrl?: string): void {
  res.statusCode = Codes.E_HTTP_UNAUTHENTICATED.status;
  res.setHeader('WWW-Authenticate', unauthorizedChallenge(metadataUrl));
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Content-Length', 0);
  res.end();
}

/** An answer with no body and nothing in it, for refusals that name nothing. */
export function answerEmpty(res: ServerResponse, status: number, headers: Record<string, string> = {}): void {
  res.statusCode = status;
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Content-Length', 0);
  res.end();
}

/** The path of a request target, without its query or fragment ('/' when absent). */
export function pathOf(url: string | undefined): string {
  const raw = url ?? '/';
  const end = raw.search(/[?#]/);
  return end === -1 ? raw : raw.slice(0, end);
}
