/**
 * An OpenTelemetry SDK installed in this process for a test, the way the
 * composition root installs one when `Telemetry` asks for it: a
 * MeterProvider whose points the test collects on demand, a tracer provider
 * that keeps every ended span in memory (always sampled), the service's
 * own synchronous context manager (runtime/telemetry/sync-context.ts: the
 * active context does not follow awaits, so a test sees what the service
 * does) and the W3C `traceparent` propagator,
 * each set as the API's global. What the code under test looks up through
 * `@opentelemetry/api` at use (runtime/telemetry/instruments.ts, tracing.ts)
 * then records here.
 *
 * `uninstall()` (registered as a teardown when a tap test is given) puts the
 * API back to its no-ops: one test's SDK never records another's points.
 * One SDK at a time per process: the API's globals are process-wide.
 */
import { context, metrics, propagation, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { type DataPoint, MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { AlwaysOnSampler, BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { SynchronousContextManager } from '../../runtime/telemetry/sync-context.ts';

/** One exported point: its metric's name and the label set it carries. */
export type MetricPoint = {
  readonly name: string;
  readonly attributes: Readonly<Record<string, unknown>>;
  /** A number for a sum or a gauge; `{ count, sum, … }` for a histogram. */
  readonly value: unknown;
};

/** A histogram point's value. */
export type HistogramValue = { count: number; sum: number; min?: number; max?: number };

export type TelemetrySdk = {
  /** Every point of every metric recorded so far (cumulative, as Prometheus would read it). */
  points(): Promise<MetricPoint[]>;
  /** The points of one metric whose labels include `labels`. */
  pointsOf(name: string, labels?: Readonly<Record<string, unknown>>): Promise<MetricPoint[]>;
  /** The spans ended so far, in the order they ended. */
  spans(): ReadableSpan[];
  /** Forgets the spans ended so far (metrics are cumulative and stay). */
  resetSpans(): void;
  /** Every label, attribute, span name and event of what was exported, as one text, for privacy scans. */
  exportedText(): Promise<string>;
  /** Shuts the SDK down and puts the API's no-ops back. */
  uninstall(): Promise<void>;
};

/** Collects on demand only: no timer, no exporter. */
class CollectingReader extends MetricReader {
  protected override onShutdown(): Promise<void> {
    return Promise.resolve();
  }
  protected override onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
}

export function installTelemetrySdk(t?: { teardown(fn: () => unknown): void }): TelemetrySdk {
  // A global already set (a previous SDK not uninstalled) would make set* fail silently: start clean.
  disableGlobals();
  const reader = new CollectingReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ sampler: new AlwaysOnSampler(), spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const contextManager = new SynchronousContextManager();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(tracerProvider);
  metrics.setGlobalMeterProvider(meterProvider);

  const points = async (): Promise<MetricPoint[]> => {
    const { resourceMetrics } = await reader.collect();
    return resourceMetrics.scopeMetrics.flatMap((scope) =>
      scope.metrics.flatMap((metric) =>
        (metric.dataPoints as DataPoint<unknown>[]).map((point) => ({ name: metric.descriptor.name, attributes: { ...point.attributes }, value: point.value })),
      ),
    );
  };

  let installed = true;
  const sdk: TelemetrySdk = {
    points,
    async pointsOf(name, labels = {}) {
      return (await points()).filter((p) => p.name === name && Object.entries(labels).every(([k, v]) => p.attributes[k] === v));
    },
    spans: () => exporter.getFinishedSpans(),
    resetSpans: () => exporter.reset(),
    async exportedText() {
      const pointText = (await points()).map((p) => `${p.name} ${JSON.stringify(p.attributes)}`);
      const spanText = exporter
        .getFinishedSpans()
        .map((s) => `${s.name} ${JSON.stringify(s.attributes)} ${JSON.stringify(s.events)} ${JSON.stringify(s.status)} ${JSON.stringify(s.links)}`);
      return [...pointText, ...spanText].join('\n');
    },
    async uninstall() {
      if (!installed) return;
      installed = false;
      disableGlobals();
      contextManager.disable();
      await Promise.all([meterProvider.shutdown(), tracerProvider.shutdown()]);
    },
  };
  t?.teardown(() => sdk.uninstall());
  return sdk;
}

function disableGlobals(): void {
  metrics.disable();
  trace.disable();
  context.disable();
  propagation.disable();
}
