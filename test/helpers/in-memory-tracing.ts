/**
 * An in-process OpenTelemetry trace SDK for tests, in the thread that calls
 * it: a tracer provider exporting to memory, the AsyncLocalStorage context
 * manager and the W3C propagator, set as the API's globals (what the
 * service's SDK does with an OTLP exporter). `reset` puts the no-op globals
 * back, so a later test sees telemetry off again.
 *
 * Spans are returned as plain data (`FinishedSpan`), so a host thread can
 * answer them over an ask.
 */
import { context, propagation, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';

export type FinishedSpan = {
  name: string;
  /** SpanKind as a number (api: INTERNAL 0, SERVER 1, CLIENT 2, PRODUCER 3, CONSUMER 4). */
  kind: number;
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  attributes: Record<string, unknown>;
  failed: boolean;
  durationMs: number;
};

export type InMemoryTracing = { finished(): FinishedSpan[]; reset(): void };

export function installInMemoryTracing(): InMemoryTracing {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const manager = new AsyncLocalStorageContextManager().enable();
  if (
    !trace.setGlobalTracerProvider(provider) ||
    !context.setGlobalContextManager(manager) ||
    !propagation.setGlobalPropagator(new W3CTraceContextPropagator())
  )
    throw new Error('a tracer provider, context manager or propagator was installed already (a test did not reset)');
  return {
    finished: () => exporter.getFinishedSpans().map(finishedSpan),
    reset: () => {
      trace.disable();
      context.disable();
      propagation.disable();
      manager.disable();
    },
  };
}

function finishedSpan(span: ReadableSpan): FinishedSpan {
  return {
    name: span.name,
    kind: span.kind,
    traceId: span.spanContext().traceId,
    spanId: span.spanContext().spanId,
    parentSpanId: span.parentSpanContext?.spanId ?? null,
    attributes: { ...span.attributes },
    failed: span.status.code === SpanStatusCode.ERROR,
    durationMs: span.duration[0] * 1_000 + span.duration[1] / 1e6,
  };
}
