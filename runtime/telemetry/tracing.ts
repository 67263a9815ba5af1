/**
 * Spans through `@opentelemetry/api`, and the trace context that crosses a
 * thread in an envelope (`Meta.trace`, a W3C `traceparent`). With telemetry
 * off the API's tracer and propagator are no-ops: `inSpan` runs the work with
 * a non-recording span, `traceCarrier()` is undefined and nothing is sent.
 * The SDK (installed by the composition root only when `Telemetry` asks for
 * it, runtime/telemetry/sdk.ts) makes them real in every thread.
 *
 * A span name and its attributes follow the catalogue's rule
 * (catalogue.ts): templates, configured identifiers and codes only.
 *
 * Importable from every layer.
 */
import {
  type Attributes,
  type Context,
  context,
  ProxyTracerProvider,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  type TracerProvider,
  trace,
} from '@opentelemetry/api';
import type { Askable, Protocol } from '../ref.ts';
import { SCOPE } from './instruments.ts';

export { SpanKind };

let made: { provider: TracerProvider; tracer: Tracer } | null = null;

/**
 * The tracer of the provider installed now, kept while it is the one: the
 * API's `getTracer` makes a ProxyTracer on every call with none installed,
 * and the SDK's builds a key and looks it up, for every span.
 */
export function tracer(): Tracer {
  const global = trace.getTracerProvider();
  const provider = global instanceof ProxyTracerProvider ? global.getDelegate() : global;
  if (made === null || made.provider !== provider) made = { provider, tracer: provider.getTracer(SCOPE) };
  return made.tracer;
}

export type SpanOptions = { kind?: SpanKind; attributes?: Attributes; parent?: Context };

/**
 * Runs `work` inside a new span (a child of `parent`, else of the active
 * context), ends it, and marks it failed when `work` throws: the span records
 * the error's class and code (AppError), never its message, which may name
 * mail. The span is active for `work`'s synchronous start only
 * (sync-context.ts); what `work` starts after an await takes the span's
 * context, its second argument, as its parent.
 */
export function inSpan<T>(name: string, options: SpanOptions, work: (span: Span, traced: Context) => Promise<T>): Promise<T> {
  const parent = options.parent ?? context.active();
  const span = tracer().startSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, ...(options.attributes ? { attributes: options.attributes } : {}) }, parent);
  const traced = trace.setSpan(parent, span);
  return context.with(traced, () => settleSpan(span, () => work(span, traced)));
}

/** Runs `work` (at once: its synchronous start stays inside the caller's `with`) and ends `span` when it settles. */
async function settleSpan<T>(span: Span, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    markFailed(span, err);
    throw err;
  } finally {
    span.end();
  }
}

/** Marks a span failed with the error's class and code only. */
export function markFailed(span: Span, err: unknown): void {
  const code = typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string' ? err.code : undefined;
  const type = code ?? (err instanceof Error ? err.constructor.name : 'Error');
  span.setAttribute('error.type', type);
  span.setStatus({ code: SpanStatusCode.ERROR });
}

/** The active trace context as a W3C `traceparent`, for an envelope's `meta.trace`; undefined when nothing is traced. */
export function traceCarrier(active: Context = context.active()): string | undefined {
  const carrier: Record<string, string> = {};
  propagation.inject(active, carrier);
  return carrier.traceparent;
}

/** The context an envelope's `meta.trace` names (the active one when it names none). */
export function contextFromCarrier(traceparent: string | undefined): Context {
  if (traceparent === undefined) return context.active();
  return propagation.extract(context.active(), { traceparent });
}

/** Whether `traced` holds a span being recorded: only then does a send open a span of its own. */
export function isRecorded(traced: Context | undefined): traced is Context {
  return traced !== undefined && trace.getSpan(traced)?.isRecording() === true;
}

/** The trace id of the active span, when one is recorded (in the synchronous stretch of a `with` only: sync-context.ts). */
export function activeTraceId(): string | undefined {
  return traceIdOf(context.active());
}

/** The trace id of the span `traced` holds, when it is recorded (an undiagnosed failure's log line carries it). */
export function traceIdOf(traced: Context | undefined): string | undefined {
  const span = traced === undefined ? undefined : trace.getSpan(traced);
  return span?.isRecording() ? span.spanContext().traceId : undefined;
}

/**
 * Runs `work` outside any trace: what it sends at once opens no span, even
 * inside the synchronous stretch of a traced `with` (a probe whose span
 * would tell an operator nothing: docs/operations.md "Traces").
 */
export function untraced<T>(work: () => T): T {
  return context.with(ROOT_CONTEXT, work);
}

/**
 * `target`, its asks part of `parent`'s trace (the parent of their `ask
 * <kind>` spans: actor-spans.ts): how a request hands its trace to
 * the asks its handler makes after an await. `target` itself when `parent`
 * records nothing (telemetry off: nothing is allocated).
 */
export function askingWithin<P extends Protocol>(target: Askable<P>, parent: Context | undefined): Askable<P> {
  if (!isRecorded(parent)) return target;
  return {
    id: target.id,
    ask: (msg, options) => target.ask(msg, { ...options, parent }),
  };
}
