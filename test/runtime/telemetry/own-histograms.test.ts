/**
 * The histograms the service aggregates itself (runtime/telemetry/own-histograms.ts):
 * a reader given their producer collects the series the SDK's own histogram
 * would have exported for the same points (labels in any order, the seconds
 * boundaries, count, sum, min, max, negative and NaN values dropped), as
 * totals for a cumulative reader and per interval for a delta one, with the
 * SDK's cardinality limit and overflow series.
 */
import { ValueType } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AggregationTemporality,
  AggregationType,
  type DataPoint,
  type Histogram,
  MeterProvider,
  MetricReader,
  type MetricReaderOptions,
} from '@opentelemetry/sdk-metrics';
import t from 'tap';
import { METRICS } from '../../../runtime/telemetry/catalogue.ts';
import { CARDINALITY_LIMIT, OwnHistograms } from '../../../runtime/telemetry/own-histograms.ts';
import { SECONDS_BOUNDARIES } from '../../../runtime/telemetry/sdk.ts';

class CollectingReader extends MetricReader {
  constructor(options?: MetricReaderOptions) {
    super(options);
  }
  protected override onShutdown(): Promise<void> {
    return Promise.resolve();
  }
  protected override onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
}

const def = METRICS.httpServerDuration;
const resource = resourceFromAttributes({ 'service.name': 'test' });

/** Our histograms behind a reader of the given temporality, the reader's provider recording nothing of its own. */
function ownBehind(temporality: AggregationTemporality) {
  const own = new OwnHistograms({ resource, scope: { name: 'mailcairn' }, boundaries: () => SECONDS_BOUNDARIES, valueType: ValueType.DOUBLE });
  const producer = own.producer();
  const reader = new CollectingReader({ metricProducers: [producer], aggregationTemporalitySelector: () => temporality });
  own.bind(producer, reader);
  const provider = new MeterProvider({ resource, readers: [reader] });
  return { histogram: own.histogram(def), reader, provider };
}

/** The SDK's own histogram, configured as sdk.ts configures it. */
function sdkHistogram(temporality: AggregationTemporality) {
  const reader = new CollectingReader({ aggregationTemporalitySelector: () => temporality });
  const provider = new MeterProvider({
    resource,
    readers: [reader],
    views: [{ instrumentName: def.name, aggregation: { type: AggregationType.EXPLICIT_BUCKET_HISTOGRAM, options: { boundaries: SECONDS_BOUNDARIES } } }],
  });
  return { histogram: provider.getMeter('mailcairn').createHistogram(def.name, { unit: def.unit, description: def.description }), reader, provider };
}

async function collected(reader: MetricReader) {
  const { resourceMetrics } = await reader.collect();
  return resourceMetrics.scopeMetrics.flatMap((s) =>
    s.metrics.map((m) => ({
      scope: s.scope.name,
      name: m.descriptor.name,
      unit: m.descriptor.unit,
      description: m.descriptor.description,
      temporality: m.aggregationTemporality,
      dataPointType: m.dataPointType,
      points: (m.dataPoints as DataPoint<Histogram>[])
        .map((p) => ({ attributes: p.attributes, count: p.value.count, sum: p.value.sum, min: p.value.min, max: p.value.max, buckets: p.value.buckets }))
        .sort((a, b) => JSON.stringify(a.attributes).localeCompare(JSON.stringify(b.attributes))),
    })),
  );
}

function recordSome(h: { record(value: number, attributes?: Record<string, string | number>): void }, values: readonly number[]): void {
  for (const v of values) {
    h.record(v, { 'mailcairn.surface': 'mcp', 'http.request.method': 'POST', 'http.route': '/mcp', 'http.response.status_code': 200 });
    // The same label set in another order: the same series.
    h.record(v * 2, { 'http.route': '/mcp', 'http.response.status_code': 200, 'mailcairn.surface': 'mcp', 'http.request.method': 'POST' });
    h.record(v, { 'mailcairn.surface': 'health', 'http.request.method': 'GET' });
    // A frozen set (found by its identity): still the series of its labels.
    h.record(v, FROZEN);
  }
}

const FROZEN = Object.freeze({ 'http.request.method': 'GET', 'mailcairn.surface': 'health' });

// Below, on and above boundaries, past the last, and the two the SDK drops.
const VALUES = [0.0004, 0.005, 0.0051, 0.3, 2.5, 400, -1, Number.NaN];

t.test('a cumulative reader gets the series the SDK exported for the same points', async (t) => {
  const ours = ownBehind(AggregationTemporality.CUMULATIVE);
  const sdk = sdkHistogram(AggregationTemporality.CUMULATIVE);
  recordSome(ours.histogram, VALUES);
  recordSome(sdk.histogram, VALUES);
  const expected = await collected(sdk.reader);
  t.equal(expected[0]?.points.length, 2, 'two series');
  t.same(await collected(ours.reader), expected);
  recordSome(ours.histogram, [0.01]);
  recordSome(sdk.histogram, [0.01]);
  t.same(await collected(ours.reader), await collected(sdk.reader), 'and totals at the next collection');
  await Promise.all([ours.provider.shutdown(), sdk.provider.shutdown()]);
});

t.test('a delta reader gets what was recorded since its last collection', async (t) => {
  const ours = ownBehind(AggregationTemporality.DELTA);
  const sdk = sdkHistogram(AggregationTemporality.DELTA);
  recordSome(ours.histogram, VALUES);
  recordSome(sdk.histogram, VALUES);
  t.same(await collected(ours.reader), await collected(sdk.reader), 'the first interval');
  t.same(await collected(ours.reader), [], 'nothing recorded: no series');
  ours.histogram.record(0.02, { 'mailcairn.surface': 'health', 'http.request.method': 'GET' });
  ours.histogram.record(0.03, { 'mailcairn.surface': 'health', 'http.request.method': 'GET' });
  const [metric] = await collected(ours.reader);
  t.same(
    metric?.points.map(({ count, min, max }) => ({ count, min, max })),
    [{ count: 2, min: 0.02, max: 0.03 }],
    'only the series recorded since, its extremes those of the interval',
  );
  await Promise.all([ours.provider.shutdown(), sdk.provider.shutdown()]);
});

t.test('past the cardinality limit, points count in the overflow series, as the SDK counts them', async (t) => {
  const ours = ownBehind(AggregationTemporality.CUMULATIVE);
  const sdk = sdkHistogram(AggregationTemporality.CUMULATIVE);
  for (let i = 0; i < CARDINALITY_LIMIT + 10; i++) {
    ours.histogram.record(0.1, { 'http.route': `/r${i}` });
    sdk.histogram.record(0.1, { 'http.route': `/r${i}` });
  }
  const [metric] = await collected(ours.reader);
  t.equal(metric?.points.length, CARDINALITY_LIMIT);
  t.equal(metric?.points.find((p) => p.attributes['otel.metric.overflow'] === true)?.count, 11, 'the rest in one series');
  t.same([metric], await collected(sdk.reader));
  await Promise.all([ours.provider.shutdown(), sdk.provider.shutdown()]);
});
