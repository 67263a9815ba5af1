/**
 * The instruments of the catalogue (catalogue.ts), looked up through
 * `@opentelemetry/api` at use. The API has no proxy meter: an instrument made
 * before the composition root installs its MeterProvider would record
 * nothing forever (the refusal counter once did). So nothing here is made at
 * import: `counter('authorizationRefusals')` asks the global provider each
 * time and keeps the instrument only while that provider is the one
 * installed. With telemetry off the provider is the API's no-op one and a
 * measurement costs a map lookup.
 *
 * Observable gauges (kind `gauge`) are registered by the one module that
 * observes them (runtime/telemetry/store-gauges.ts), not here. Observed
 * counters and up-down counters (`observed-counter`, `observed-updown`) are
 * given a callback once (`observeAtCollection`), kept here and registered on
 * the meter of every provider installed after, as `currentMeter` finds it.
 *
 * Importable from every layer.
 */
import {
  type Attributes,
  type Counter,
  type Gauge,
  type Histogram,
  type Meter,
  type MeterProvider,
  metrics,
  type ObservableCallback,
  type UpDownCounter,
} from '@opentelemetry/api';
import { METRICS, type MetricDefinition, type MetricKey } from './catalogue.ts';

/** The instrumentation scope every Mailcairn instrument and span belongs to. */
export const SCOPE = 'mailcairn';

type KeysOf<K> = { [P in MetricKey]: (typeof METRICS)[P]['kind'] extends K ? P : never }[MetricKey];
export type CounterKey = KeysOf<'counter'>;
export type HistogramKey = KeysOf<'histogram'>;
export type ObservedKey = KeysOf<'observed-counter' | 'observed-updown'>;

type Observer = { readonly def: MetricDefinition; readonly callback: ObservableCallback };
const observers: Observer[] = [];

let provider: MeterProvider | null = null;
let meter: Meter | null = null;
const made = new Map<string, Counter | UpDownCounter | Histogram | Gauge>();

/** Histograms the service aggregates itself (own-histograms.ts), for the provider they were made with. */
type OwnHistogramSource = { readonly provider: MeterProvider; histogram(def: MetricDefinition): Histogram };
let own: OwnHistogramSource | null = null;

/**
 * Has `histogram` and forwarded histogram points use `source` rather than
 * the SDK's instruments while `source.provider` is the one installed
 * (sdk.ts, whose readers collect them); null: the SDK's again.
 */
export function useOwnHistograms(source: OwnHistogramSource | null): void {
  own = source;
  made.clear();
}

/** The meter of the provider installed now; the cache is dropped when the provider changes. */
export function currentMeter(): Meter {
  const installed = metrics.getMeterProvider();
  if (installed !== provider || meter === null) {
    provider = installed;
    meter = installed.getMeter(SCOPE);
    made.clear();
    for (const o of observers) register(meter, o);
  }
  return meter;
}

function register(m: Meter, o: Observer): void {
  const made =
    o.def.kind === 'observed-counter' ? m.createObservableCounter(o.def.name, options(o.def)) : m.createObservableUpDownCounter(o.def.name, options(o.def));
  made.addCallback(o.callback);
}

/**
 * Has `callback` observe an observed counter or up-down counter at every
 * collection, on the provider installed now and on every one installed
 * later (for the life of the process: the figures it reads are the
 * process's). With telemetry off the meter is the API's no-op one, which
 * never calls it.
 */
export function observeAtCollection(key: ObservedKey, callback: ObservableCallback): void {
  const o: Observer = { def: METRICS[key], callback };
  observers.push(o);
  if (meter !== null && metrics.getMeterProvider() === provider) register(meter, o);
  else currentMeter();
}

function instrument<T extends Counter | UpDownCounter | Histogram | Gauge>(def: MetricDefinition, make: (m: Meter, def: MetricDefinition) => T): T {
  const m = currentMeter();
  const existing = made.get(def.name);
  if (existing !== undefined) return existing as T;
  const created = make(m, def);
  made.set(def.name, created);
  return created;
}

const options = (def: MetricDefinition) => ({ description: def.description, unit: def.unit });

export function counter(key: CounterKey): Counter {
  const def = METRICS[key];
  return instrument(def, (m) => m.createCounter(def.name, options(def)));
}

export function histogram(key: HistogramKey): Histogram {
  return instrument(METRICS[key], makeHistogram);
}

function makeHistogram(m: Meter, def: MetricDefinition): Histogram {
  return own !== null && own.provider === provider ? own.histogram(def) : m.createHistogram(def.name, options(def));
}

/**
 * Records one value into the instrument a definition names, whatever its
 * kind: how a measurement forwarded from an actor thread is recorded
 * (forwarded.ts). A `gauge` here is the synchronous gauge an actor thread
 * can set; observable gauges are registered where they are observed.
 */
export function recordInto(def: MetricDefinition, value: number, attributes: Attributes): void {
  switch (def.kind) {
    case 'counter':
      return instrument<Counter>(def, (m) => m.createCounter(def.name, options(def))).add(value, attributes);
    case 'updown':
      return instrument<UpDownCounter>(def, (m) => m.createUpDownCounter(def.name, options(def))).add(value, attributes);
    case 'histogram':
      return instrument<Histogram>(def, makeHistogram).record(value, attributes);
    case 'gauge':
      return instrument<Gauge>(def, (m) => m.createGauge(def.name, options(def))).record(value, attributes);
    case 'observed-counter':
    case 'observed-updown':
      // Observed on the main thread at collection; nothing of it is forwarded.
      return;
  }
}
