/**
 * The catalogue's histograms aggregated by the service itself rather than by
 * the SDK's per-record path, and handed to each metric reader at collection
 * through a `MetricProducer` (sdk.ts gives every reader its own).
 *
 * Why: an SDK record sorts and JSON-encodes its label set to find its series
 * (`hashAttributes`), then walks the storages of every view and reader: 5–7 µs
 * a point in the daemon, two or three points per MCP call
 * (docs/performance.md "Telemetry"). Here a point given a frozen label set
 * (label-sets.ts: what records per request) finds its series by the set's
 * identity; another by a key built from the labels as given (their insertion
 * order, no sort, no JSON), mapped once to the series of the sorted label
 * set, so two orders of one set are one series. The bucket is found by a walk
 * from the smallest boundary (durations of calls fall in the first ones).
 *
 * What is exported is what the SDK's explicit-bucket histogram exported:
 * the same names, units, descriptions, labels and boundaries; count, sum,
 * min and max; a negative or NaN value dropped; at most CARDINALITY_LIMIT
 * series per metric, the rest counted under `otel.metric.overflow` = true.
 * Each reader gets the temporality it prefers for histograms: cumulative
 * (Prometheus; OTLP by default) the totals since the series began; delta
 * (OTLP with `OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE`) what was
 * recorded since that reader's last collection, series with nothing new left
 * out, min and max those of the interval.
 *
 * Loaded by sdk.ts only (it loads the SDK); instruments.ts hands these out
 * while the provider they were made for is installed.
 */
import type { Attributes, Histogram, HrTime } from '@opentelemetry/api';
import { hrTime } from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import {
  AggregationTemporality,
  type CollectionResult,
  DataPointType,
  type DataPoint,
  type Histogram as HistogramValue,
  type HistogramMetricData,
  type IMetricReader,
  InstrumentType,
  type MetricProducer,
} from '@opentelemetry/sdk-metrics';
import type { MetricDefinition } from './catalogue.ts';

/** The SDK's default per metric stream: the last series is the overflow one. */
export const CARDINALITY_LIMIT = 2000;

const OVERFLOW: Attributes = Object.freeze({ 'otel.metric.overflow': true });

/** The last totals a delta reader was given, and the extremes since. */
type Window = { count: number; sum: number; counts: number[]; min: number; max: number };

class Series {
  readonly counts: number[];
  count = 0;
  sum = 0;
  min = Number.POSITIVE_INFINITY;
  max = Number.NEGATIVE_INFINITY;
  /** One per delta reader, in the order they were bound. */
  readonly windows: Window[] = [];
  readonly attributes: Attributes;
  readonly startTime: HrTime;

  constructor(attributes: Attributes, startTime: HrTime, buckets: number, deltaReaders: number) {
    this.attributes = attributes;
    this.startTime = startTime;
    this.counts = new Array<number>(buckets).fill(0);
    for (let i = 0; i < deltaReaders; i++) this.windows.push(emptyWindow(buckets));
  }
}

const emptyWindow = (buckets: number): Window => ({
  count: 0,
  sum: 0,
  counts: new Array<number>(buckets).fill(0),
  min: Number.POSITIVE_INFINITY,
  max: Number.NEGATIVE_INFINITY,
});

/** One histogram of the catalogue: its series by label set. */
class OwnHistogram implements Histogram {
  /** By a frozen label set itself (label-sets.ts): it cannot change, so it is its own key. */
  private readonly byFrozen = new WeakMap<Attributes, Series>();
  /** By the labels' key in the order a caller gives them. */
  private readonly byGiven = new Map<string, Series>();
  /** By the labels' key in sorted order: one per exported series. */
  private readonly bySorted = new Map<string, Series>();
  private overflow: Series | null = null;
  readonly def: MetricDefinition;
  readonly boundaries: readonly number[];
  private readonly owner: OwnHistograms;

  constructor(def: MetricDefinition, boundaries: readonly number[], owner: OwnHistograms) {
    this.def = def;
    this.boundaries = boundaries;
    this.owner = owner;
  }

  record(value: number, attributes?: Attributes): void {
    // The SDK drops these too (a negative value with a warning).
    if (!(value >= 0)) return;
    const series = this.seriesOf(attributes);
    series.count += 1;
    series.sum += value;
    if (value < series.min) series.min = value;
    if (value > series.max) series.max = value;
    const b = this.boundaries;
    let i = 0;
    while (i < b.length && (b[i] as number) < value) i++;
    (series.counts[i] as number) += 1;
    for (const w of series.windows) {
      if (value < w.min) w.min = value;
      if (value > w.max) w.max = value;
    }
  }

  private seriesOf(attributes: Attributes | undefined): Series {
    if (attributes !== undefined) {
      const frozen = this.byFrozen.get(attributes);
      if (frozen !== undefined) return frozen;
      if (Object.isFrozen(attributes)) {
        const series = this.byKey(attributes);
        this.byFrozen.set(attributes, series);
        return series;
      }
    }
    return this.byKey(attributes);
  }

  private byKey(attributes: Attributes | undefined): Series {
    let key = '';
    if (attributes !== undefined) {
      for (const name in attributes) {
        const v = attributes[name];
        if (v !== undefined) key += typeof v === 'object' ? `${name}\u0000${JSON.stringify(v)}\u0001` : `${name}\u0000${v}\u0001`;
      }
    }
    const known = this.byGiven.get(key);
    if (known !== undefined) return known;
    const series = this.sortedSeries(attributes ?? {});
    // Bounded: each exported series has a few orders at most; past the bound a new order is just not remembered.
    if (this.byGiven.size < 4 * CARDINALITY_LIMIT) this.byGiven.set(key, series);
    return series;
  }

  private sortedSeries(attributes: Attributes): Series {
    const names = Object.keys(attributes)
      .filter((name) => attributes[name] !== undefined)
      .sort();
    const key = JSON.stringify(names.map((name) => [name, attributes[name]]));
    const known = this.bySorted.get(key);
    if (known !== undefined) return known;
    if (this.bySorted.size >= CARDINALITY_LIMIT - 1) {
      this.overflow ??= this.newSeries(OVERFLOW);
      return this.overflow;
    }
    const copy: Attributes = {};
    for (const name of names) copy[name] = attributes[name];
    const series = this.newSeries(copy);
    this.bySorted.set(key, series);
    return series;
  }

  private newSeries(attributes: Attributes): Series {
    return new Series(attributes, hrTime(), this.boundaries.length + 1, this.owner.deltaReaders);
  }

  /** Every series, the overflow one last. */
  *series(): Iterable<Series> {
    yield* this.bySorted.values();
    if (this.overflow !== null) yield this.overflow;
  }
}

/** A reader's producer: the histograms as that reader wants them. */
class Producer implements MetricProducer {
  /** Set by `OwnHistograms.bind` once the reader exists (a reader takes its producers when it is made). */
  temporality: AggregationTemporality = AggregationTemporality.CUMULATIVE;
  /** This reader's window in each series, when it reads deltas. */
  window = -1;
  private lastCollection: HrTime;
  private readonly owner: OwnHistograms;
  private readonly resource: Resource;

  constructor(owner: OwnHistograms, resource: Resource) {
    this.owner = owner;
    this.resource = resource;
    this.lastCollection = hrTime();
  }

  collect(): Promise<CollectionResult> {
    const now = hrTime();
    const metrics: HistogramMetricData[] = [];
    for (const histogram of this.owner.histograms()) {
      const dataPoints: DataPoint<HistogramValue>[] = [];
      for (const series of histogram.series()) {
        const point = this.window < 0 ? cumulative(series, histogram.boundaries, now) : this.delta(series, histogram.boundaries, now);
        if (point !== null) dataPoints.push(point);
      }
      if (dataPoints.length === 0) continue;
      const { def } = histogram;
      metrics.push({
        descriptor: { name: def.name, description: def.description, unit: def.unit, valueType: this.owner.valueType },
        aggregationTemporality: this.temporality,
        dataPointType: DataPointType.HISTOGRAM,
        dataPoints,
      });
    }
    this.lastCollection = now;
    return Promise.resolve({ resourceMetrics: { resource: this.resource, scopeMetrics: [{ scope: this.owner.scope, metrics }] }, errors: [] });
  }

  private delta(series: Series, boundaries: readonly number[], now: HrTime): DataPoint<HistogramValue> | null {
    const w = series.windows[this.window] as Window;
    const count = series.count - w.count;
    if (count === 0) return null;
    const counts = series.counts.map((c, i) => c - (w.counts[i] as number));
    const point: DataPoint<HistogramValue> = {
      attributes: series.attributes,
      // A series begun since the last collection starts when it began.
      startTime: earlier(this.lastCollection, series.startTime) ? series.startTime : this.lastCollection,
      endTime: now,
      value: { buckets: { boundaries: [...boundaries], counts }, count, sum: series.sum - w.sum, min: w.min, max: w.max },
    };
    series.windows[this.window] = {
      count: series.count,
      sum: series.sum,
      counts: [...series.counts],
      min: Number.POSITIVE_INFINITY,
      max: Number.NEGATIVE_INFINITY,
    };
    return point;
  }
}

function cumulative(series: Series, boundaries: readonly number[], now: HrTime): DataPoint<HistogramValue> | null {
  if (series.count === 0) return null;
  return {
    attributes: series.attributes,
    startTime: series.startTime,
    endTime: now,
    value: { buckets: { boundaries: [...boundaries], counts: [...series.counts] }, count: series.count, sum: series.sum, min: series.min, max: series.max },
  };
}

const earlier = (a: HrTime, b: HrTime): boolean => a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);

/**
 * The histograms of one MeterProvider's life, and the producers of its readers.
 *
 * @example
 * const own = new OwnHistograms({ resource, scope: { name: SCOPE }, boundaries: () => SECONDS_BOUNDARIES, valueType: ValueType.DOUBLE });
 * const producer = own.producer();
 * const reader = new PeriodicExportingMetricReader({ exporter, metricProducers: [producer] });
 * own.bind(producer, reader);
 */
export class OwnHistograms {
  private readonly made = new Map<string, OwnHistogram>();
  private readonly producers: Producer[] = [];
  deltaReaders = 0;
  readonly scope: { name: string };
  readonly valueType: HistogramMetricData['descriptor']['valueType'];
  private readonly resource: Resource;
  private readonly boundariesOf: (def: MetricDefinition) => readonly number[];

  constructor(options: {
    resource: Resource;
    scope: { name: string };
    boundaries: (def: MetricDefinition) => readonly number[];
    valueType: HistogramMetricData['descriptor']['valueType'];
  }) {
    this.resource = options.resource;
    this.scope = options.scope;
    this.boundariesOf = options.boundaries;
    this.valueType = options.valueType;
  }

  /** The histogram a definition names, made on first use. */
  histogram(def: MetricDefinition): Histogram {
    let made = this.made.get(def.name);
    if (made === undefined) {
      made = new OwnHistogram(def, Object.freeze([...this.boundariesOf(def)]), this);
      this.made.set(def.name, made);
    }
    return made;
  }

  histograms(): Iterable<OwnHistogram> {
    return this.made.values();
  }

  /** A producer for one reader, to give it when it is made; `bind` it to the reader after, before anything records. */
  producer(): MetricProducer {
    const p = new Producer(this, this.resource);
    this.producers.push(p);
    return p;
  }

  /** Reads the reader's temporality for histograms; a delta reader gets a window in every series. */
  bind(producer: MetricProducer, reader: IMetricReader): void {
    const p = producer as Producer;
    p.temporality = reader.selectAggregationTemporality?.(InstrumentType.HISTOGRAM) ?? AggregationTemporality.CUMULATIVE;
    if (p.temporality !== AggregationTemporality.DELTA || p.window >= 0) return;
    p.window = this.deltaReaders;
    this.deltaReaders += 1;
    for (const h of this.made.values()) for (const s of h.series()) s.windows.push(emptyWindow(s.counts.length));
  }
}
