/**
 * The OpenTelemetry SDK of the main thread, installed by the composition
 * root (service/app.ts) before anything records, and loaded by it with a
 * dynamic `import()` only when `Telemetry` asks for it: with telemetry off
 * no SDK or exporter module is loaded and every instrument is the API's
 * no-op (instruments.ts).
 *
 * - metrics: a MeterProvider with, as configured, a Prometheus reader (its
 *   own server never started: `scrape` answers GET /metrics on a listener
 *   the service opens beside the others, service/listeners.ts) and a
 *   periodic OTLP/HTTP reader; durations in seconds get the semantic
 *   conventions' bucket boundaries;
 * - traces: sdk-tracing.ts;
 * - what either pushes over OTLP is sent by the export thread
 *   (export-thread.ts), never through node:http on this thread, whose
 *   listeners' hot path would pay for it;
 * - OpenTelemetry's own warnings and errors go to our log, rate-limited
 *   (diagnostics.ts).
 *
 * `shutdown` exports what is buffered (a last push, the pending spans) and
 * puts the API's no-op providers back, so a later start in the same process
 * installs afresh.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { diag, metrics } from '@opentelemetry/api';
import type { IMetricReader, MetricProducer, ViewOptions } from '@opentelemetry/sdk-metrics';
import type { Logger } from '../log.ts';
import { METRICS } from './catalogue.ts';
import { routeDiagnostics } from './diagnostics.ts';
import { SCOPE, useOwnHistograms } from './instruments.ts';
import { otlpMetricExporter } from './otlp-exporters.ts';
import { installTracing, type InstalledTracing, telemetryResource } from './sdk-tracing.ts';
import type { TelemetrySettings } from './settings.ts';

export type ScrapeHandler = (request: IncomingMessage, response: ServerResponse) => void;

export type InstalledTelemetry = {
  /** Answers a Prometheus scrape with the text exposition; null without Prometheus. */
  readonly scrape: ScrapeHandler | null;
  /** Exports what is buffered and uninstalls; never throws (a failure is logged). */
  shutdown(): Promise<void>;
};

/** Bucket boundaries of durations in seconds (OpenTelemetry's HTTP semantic conventions), widened for minute-long runs. */
export const SECONDS_BOUNDARIES = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 30, 60, 120, 300];

/** How long the last export may take at shutdown, inside the stop deadline. */
const EXPORT_TIMEOUT_MS = 5_000;

function secondsViews(AggregationType: typeof import('@opentelemetry/sdk-metrics').AggregationType): ViewOptions[] {
  return Object.values(METRICS)
    .filter((def) => def.kind === 'histogram' && def.unit === 's')
    .map((def) => ({
      instrumentName: def.name,
      aggregation: { type: AggregationType.EXPLICIT_BUCKET_HISTOGRAM, options: { boundaries: SECONDS_BOUNDARIES } },
    }));
}

/**
 * @example const telemetry = await installTelemetry(settings, { log, version }); teardown.push(() => telemetry.shutdown());
 */
export async function installTelemetry(
  settings: TelemetrySettings,
  options: { log: Logger; version: string; readers?: readonly IMetricReader[] },
): Promise<InstalledTelemetry> {
  const { log } = options;
  routeDiagnostics(log);
  const resource = telemetryResource(settings.serviceName, options.version);
  const exportThread = settings.traces.otlp !== null || settings.metrics.otlp !== null ? new (await import('./export-thread.ts')).ExportThread() : undefined;
  const tracing: InstalledTracing | null = settings.traces.otlp === null ? null : await installTracing(settings.traces.otlp, resource, undefined, exportThread);

  let scrape: ScrapeHandler | null = null;
  let meterProvider: { shutdown(options?: { timeoutMillis?: number }): Promise<void> } | null = null;
  const { prometheus, otlp } = settings.metrics;
  if (prometheus !== null || otlp !== null || (options.readers?.length ?? 0) > 0) {
    const { MeterProvider, PeriodicExportingMetricReader, AggregationType } = await import('@opentelemetry/sdk-metrics');
    const { ValueType } = await import('@opentelemetry/api');
    const readers: IMetricReader[] = [...(options.readers ?? [])];
    // Readers made here collect the histograms the service aggregates itself (own-histograms.ts); a reader
    // handed in was made without their producer, so with one the SDK keeps recording them.
    const own =
      readers.length === 0
        ? new (await import('./own-histograms.ts')).OwnHistograms({
            resource,
            scope: { name: SCOPE },
            boundaries: () => SECONDS_BOUNDARIES,
            valueType: ValueType.DOUBLE,
          })
        : null;
    const bindings: Array<() => void> = [];
    const producersFor = (reader: () => IMetricReader): { metricProducers?: MetricProducer[] } => {
      if (own === null) return {};
      const producer = own.producer();
      bindings.push(() => own.bind(producer, reader()));
      return { metricProducers: [producer] };
    };
    if (prometheus !== null) {
      const { PrometheusExporter } = await import('@opentelemetry/exporter-prometheus');
      const exporter: InstanceType<typeof PrometheusExporter> = new PrometheusExporter({ preventServerStart: true, ...producersFor(() => exporter) });
      scrape = (request, response) => exporter.getMetricsRequestHandler(request, response);
      readers.push(exporter);
    }
    if (otlp !== null) {
      const reader: InstanceType<typeof PeriodicExportingMetricReader> = new PeriodicExportingMetricReader({
        exporter: await otlpMetricExporter(otlp, exportThread),
        exportIntervalMillis: otlp.intervalMs,
        // The reader refuses a timeout longer than its interval.
        exportTimeoutMillis: Math.min(otlp.intervalMs, 30_000),
        ...producersFor(() => reader),
      });
      readers.push(reader);
    }
    for (const bind of bindings) bind();
    const provider = new MeterProvider({ resource, readers, views: secondsViews(AggregationType) });
    metrics.setGlobalMeterProvider(provider);
    if (own !== null) useOwnHistograms({ provider, histogram: (def) => own.histogram(def) });
    meterProvider = provider;
  }
  log.info(
    {
      event: 'telemetry.installed',
      prometheus: prometheus !== null,
      metricsOtlp: otlp?.protocol ?? null,
      tracesOtlp: settings.traces.otlp?.protocol ?? null,
    },
    'telemetry.installed',
  );

  return {
    scrape,
    shutdown: async () => {
      const results = await Promise.allSettled([
        meterProvider?.shutdown({ timeoutMillis: EXPORT_TIMEOUT_MS }).finally(() => {
          metrics.disable();
          useOwnHistograms(null);
        }),
        tracing?.shutdown(),
      ]);
      for (const result of results) {
        if (result.status === 'rejected') log.warn({ event: 'telemetry.shutdown-failed', kind: 'other' }, 'telemetry.shutdown-failed');
      }
      // After the last exports: they were sent through it.
      await exportThread?.close();
      diag.disable();
    },
  };
}
