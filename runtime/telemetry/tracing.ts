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
import { type Attributes, type Context, context, propagation, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { SCOPE } from './instruments.ts';

export { SpanKind };

export function tracer() {
  return trace.getTracer(SCOPE);
}

export type SpanOptions = { kind?: SpanKind; attributes?: Attributes; parent?: Context };

/**
 * Runs `work` inside a new span (a child of the active one, or of `parent`),
 * ends it, and marks it failed when `work` throws: the span records the
 * error's class and code (AppError), never its message, which may name mail.
 */
export async function inSpan<T>(name: string, options: SpanOptions, work: (span: Span) => Promise<T>): Promise<T> {
  const parent = options.parent ?? context.active();
  return tracer().startActiveSpan(
    name,
    { kind: options.kind ?? SpanKind.INTERNAL, ...(options.attributes ? { attributes: options.attributes } : {}) },
    parent,
    async (span) => {
      try {
        return await work(span);
      } catch (err) {
        markFailed(span, err);
        throw err;
      } finally {
        span.end();
      }
    },
  );
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

/** The trace id of the active span, when one is recorded (an undiagnosed failure's log line carries it). */
export function activeTraceId(): string | undefined {
  const span = trace.getActiveSpan();
  const id = span?.spanContext().traceId;
  return id !== undefined && span?.isRecording() ? id : undefined;
}
