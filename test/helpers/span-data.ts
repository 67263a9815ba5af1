/**
 * An ended span as plain data, so a host or pool thread that runs its own
 * in-process SDK (telemetry-sdk.ts) can answer its spans over an ask, and a
 * test compares them with the main thread's.
 */
import { SpanStatusCode } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';

export type SpanData = {
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

export function spanData(span: ReadableSpan): SpanData {
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
