/**
 * The MeterProvider of an actor host thread with telemetry on: instruments
 * of the `@opentelemetry/api` interfaces that record into a buffer instead
 * of an SDK, drained to the main thread as a `measurements` envelope about
 * every second (host-sdk.ts), where the real instrument of the same name
 * records them (forwarded.ts). One SDK (one Prometheus endpoint, one OTLP
 * stream) then holds every thread's metrics.
 *
 * Within a period, counter and up-down counter values of one series are
 * summed and a gauge keeps its last value; every histogram value is kept,
 * as buckets need each. The buffer holds at most MAX_SERIES entries per
 * period; beyond, values are dropped and counted (`dropped()`).
 *
 * Observable instruments are not forwarded: a callback would have to run on
 * the main thread's collection, which cannot reach this thread's state. They
 * are the API's no-ops here; what is observed is observed on the main thread
 * (the store gauges). Importable from runtime/host only; loads the API only.
 */
import {
  type Attributes,
  type Counter,
  createNoopMeter,
  type Gauge,
  type Histogram,
  type Meter,
  type MeterProvider,
  type UpDownCounter,
} from '@opentelemetry/api';
import type { Measurement } from '../protocol/envelope.ts';

export const MAX_SERIES = 10_000;

type Labels = Measurement[2];

/** Only primitive label values cross (the catalogue's labels are identifiers and codes); others are left out. */
function labelsOf(attributes: Attributes | undefined): Labels {
  const labels: Labels = {};
  if (attributes === undefined) return labels;
  for (const [key, value] of Object.entries(attributes)) {
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') labels[key] = value;
  }
  return labels;
}

class MeasurementBuffer {
  private readonly sums = new Map<string, Measurement>();
  private values: Measurement[] = [];
  private droppedCount = 0;

  private get size(): number {
    return this.sums.size + this.values.length;
  }

  /** Sums (counters) or replaces (gauges) the value of one series. */
  merge(name: string, value: number, attributes: Attributes | undefined, how: 'sum' | 'last'): void {
    const labels = labelsOf(attributes);
    const key = `${how}\u0000${name}\u0000${JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : 1)))}`;
    const entry = this.sums.get(key);
    if (entry !== undefined) entry[1] = how === 'sum' ? entry[1] + value : value;
    else if (this.size < MAX_SERIES) this.sums.set(key, [name, value, labels]);
    else this.droppedCount += 1;
  }

  append(name: string, value: number, attributes: Attributes | undefined): void {
    if (this.size < MAX_SERIES) this.values.push([name, value, labelsOf(attributes)]);
    else this.droppedCount += 1;
  }

  drain(): Measurement[] {
    const batch = [...this.sums.values(), ...this.values];
    this.sums.clear();
    this.values = [];
    return batch;
  }

  get dropped(): number {
    return this.droppedCount;
  }
}

const noop = createNoopMeter();

class ForwardingMeter implements Meter {
  private readonly buffer: MeasurementBuffer;

  constructor(buffer: MeasurementBuffer) {
    this.buffer = buffer;
  }

  createCounter(name: string): Counter {
    return { add: (value, attributes) => this.buffer.merge(name, value, attributes, 'sum') };
  }

  createUpDownCounter(name: string): UpDownCounter {
    return { add: (value, attributes) => this.buffer.merge(name, value, attributes, 'sum') };
  }

  createHistogram(name: string): Histogram {
    return { record: (value, attributes) => this.buffer.append(name, value, attributes) };
  }

  createGauge(name: string): Gauge {
    return { record: (value, attributes) => this.buffer.merge(name, value, attributes, 'last') };
  }

  createObservableGauge: Meter['createObservableGauge'] = (name, options) => noop.createObservableGauge(name, options);
  createObservableCounter: Meter['createObservableCounter'] = (name, options) => noop.createObservableCounter(name, options);
  createObservableUpDownCounter: Meter['createObservableUpDownCounter'] = (name, options) => noop.createObservableUpDownCounter(name, options);
  addBatchObservableCallback: Meter['addBatchObservableCallback'] = () => {};
  removeBatchObservableCallback: Meter['removeBatchObservableCallback'] = () => {};
}

export class ForwardingMeterProvider implements MeterProvider {
  private readonly buffer = new MeasurementBuffer();
  /** One meter whatever the scope: the scope is the main thread's (`mailcairn`) once forwarded. */
  private readonly meter = new ForwardingMeter(this.buffer);

  getMeter(): Meter {
    return this.meter;
  }

  /** The measurements of the period, emptying the buffer. */
  drain(): Measurement[] {
    return this.buffer.drain();
  }

  /** Values dropped because the buffer was full, since the thread started. */
  dropped(): number {
    return this.buffer.dropped;
  }
}
