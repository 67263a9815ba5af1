/**
 * What one HTTP exchange records, on every listener (MCP, administrative,
 * health; clear text or TLS, HTTP/1.1 or HTTP/2):
 *
 * - a SERVER span `<METHOD> <route template>` (`HTTP <template>` for a method
 *   outside the known set; the method alone while no route matched), child
 *   of the caller's W3C `traceparent` when one is sent, with
 *   `http.request.method`, `http.route`, `http.response.status_code` and
 *   `url.scheme`; its context is handed to the handler (`context`), which
 *   names it as the parent of the tool calls and asks it makes: the active
 *   context lasts only for the synchronous start of `run`
 *   (runtime/telemetry/sync-context.ts);
 * - one `http.server.request.duration` point when the response finishes or
 *   closes, labelled with the surface, the method, the template and the
 *   status (absent when the exchange closed before an answer was begun).
 *
 * Only a template names the route (`/attachments/{capability}`,
 * `/api/admin/outbox/{id}`): a path may carry a capability or an id. A path
 * that matched no route has no `http.route` at all. Never the path, the
 * query, a header or the URL.
 *
 * With telemetry off the API's no-ops stand behind every call here: a
 * non-recording span and a measurement nobody reads.
 *
 * Imported by http/pipeline.ts, the health listener and the redirect listener.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerResponse } from 'node:http2';
import { performance } from 'node:perf_hooks';
import type { TLSSocket } from 'node:tls';
import { type Attributes, type Context, context, propagation, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { histogram } from '../../runtime/telemetry/instruments.ts';
import { LabelSets } from '../../runtime/telemetry/label-sets.ts';
import { markFailed, tracer } from '../../runtime/telemetry/tracing.ts';

/** Which surface a listener serves: the `mailcairn.surface` label. */
export type TelemetrySurface = 'mcp' | 'admin' | 'health';

/** The methods named as sent (RFC 9110 and PATCH); anything else is `_OTHER`, as OpenTelemetry's HTTP conventions say. */
const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH']);

export function normalisedMethod(method: string | undefined): string {
  return method !== undefined && KNOWN_METHODS.has(method) ? method : '_OTHER';
}

export type ObservedExchange = {
  /** Names the route template the listener matched; null: none (no `http.route`). */
  routed(template: string | null): void;
  /** The exchange's span's context: the parent the handler names for what it starts after an await. */
  readonly context: Context;
  /** Runs `work` (the route lookup and the handler's synchronous start) with the exchange's span active. */
  run<T>(work: () => T): T;
  /** A handler's failure: the span is marked failed (class and code only); the trace id its log line carries, when traced. */
  failed(err: unknown): string | undefined;
};

type Response = ServerResponse | Http2ServerResponse;

/** The span's attributes at its start. */
const START_ATTRIBUTES = new LabelSets<readonly [string, 'http' | 'https']>(([method, scheme]) => ({ 'http.request.method': method, 'url.scheme': scheme }));

/** The duration's labels: surface, method, template (null: none matched), status (undefined: nothing answered). */
const DURATION_LABELS = new LabelSets<readonly [TelemetrySurface, string, string | null, number | undefined]>(([surface, method, route, status]) => {
  const labels: Attributes = { 'mailcairn.surface': surface, 'http.request.method': method };
  if (route !== null) labels['http.route'] = route;
  if (status !== undefined) labels['http.response.status_code'] = status;
  return labels;
});

export function observeExchange(req: IncomingMessage, res: Response, surface: TelemetrySurface): ObservedExchange {
  const started = performance.now();
  const method = normalisedMethod(req.method);
  // The caller's trace, when it sent one (propagation reads `traceparent` from the headers; a no-op with telemetry off).
  const parent = propagation.extract(ROOT_CONTEXT, req.headers);
  const span = tracer().startSpan(
    method === '_OTHER' ? 'HTTP' : method,
    { kind: SpanKind.SERVER, attributes: START_ATTRIBUTES.of([method, schemeOf(req)]) },
    parent,
  );
  const active = trace.setSpan(parent, span);
  let route: string | null = null;
  let failed = false;
  let ended = false;

  const end = (): void => {
    if (ended) return;
    ended = true;
    // A response closed before its head was sent answered nothing: no status to name.
    const labels = DURATION_LABELS.of([surface, method, route, res.headersSent ? res.statusCode : undefined]);
    histogram('httpServerDuration').record((performance.now() - started) / 1000, labels);
    if (span.isRecording()) {
      if (res.headersSent) span.setAttribute('http.response.status_code', res.statusCode);
      // Server spans fail on 5xx only (a 4xx is the caller's).
      if (res.headersSent && res.statusCode >= 500) {
        if (!failed) span.setAttribute('error.type', String(res.statusCode));
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
    }
    span.end();
  };
  res.once('finish', end);
  res.once('close', end);

  return {
    routed(template) {
      route = template;
      if (template === null) return;
      span.setAttribute('http.route', template);
      span.updateName(`${method === '_OTHER' ? 'HTTP' : method} ${template}`);
    },
    context: active,
    run: (work) => context.with(active, work),
    failed(err) {
      failed = true;
      markFailed(span, err);
      return traceIdOf(span);
    },
  };
}

/** The trace id of a span being recorded; undefined with telemetry off. */
function traceIdOf(span: Span): string | undefined {
  return span.isRecording() ? span.spanContext().traceId : undefined;
}

/** `https` on a TLS socket (HTTP/1.1 or HTTP/2), `http` otherwise: the scheme this listener was asked on, not one a proxy claims. */
function schemeOf(req: IncomingMessage): 'http' | 'https' {
  return (req.socket as TLSSocket | undefined)?.encrypted === true ? 'https' : 'http';
}
