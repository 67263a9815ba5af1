/**
 * An in-process OpenTelemetry SDK for tests that read what was measured: a
 * real `MeterProvider` (@opentelemetry/sdk-metrics) installed as the global
 * one, with a reader the test collects from when it wants, as a Prometheus
 * scrape would. Installed before the code under test looks its instruments
 * up (runtime/telemetry/instruments.ts does so at use); at teardown the
 * global provider is disabled again and the SDK shut down.
 */
import { metrics } from '@opentelemetry/api';
import { DataPointType, MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';

/** One data point as collected: a counter's sum or a gauge's value, or a histogram's count and sum. */
export type Point = {
  name: string;
  attributes: Record<string, unknown>;
  value: number;
  /** Histograms only. */
  count?: number;
};

class CollectOnDemand extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

export type MetricsReader = {
  /** Every point of every metric, read now (observable callbacks run). */
  collect(): Promise<Point[]>;
  /** The points of one metric, read now. */
  points(name: string): Promise<Point[]>;
};

export function installMetricsReader(t: { teardown(fn: () => unknown): void }): MetricsReader {
  const reader = new CollectOnDemand();
  const provider = new MeterProvider({ readers: [reader] });
  metrics.disable();
  if (!metrics.setGlobalMeterProvider(provider)) throw new Error('another global MeterProvider is installed');
  t.teardown(async () => {
    metrics.disable();
    await provider.shutdown();
  });
  const collect = async (): Promise<Point[]> => {
    const { resourceMetrics, errors } = await reader.collect();
    if (errors.length > 0) throw errors[0];
    return resourceMetrics.scopeMetrics.flatMap((scope) =>
      scope.metrics.flatMap((metric) =>
        metric.dataPoints.map((dp): Point => {
          const base = { name: metric.descriptor.name, attributes: { ...dp.attributes } };
          if (metric.dataPointType === DataPointType.HISTOGRAM || metric.dataPointType === DataPointType.EXPONENTIAL_HISTOGRAM) {
            const h = dp.value as { count: number; sum?: number };
            return { ...base, value: h.sum ?? 0, count: h.count };
          }
          return { ...base, value: dp.value as number };
        }),
      ),
    );
  };
  return { collect, points: async (name) => (await collect()).filter((p) => p.name === name) };
}
