/**
 * The main thread's side of metrics recorded in actor threads: each
 * forwarded measurement is recorded into the instrument of the same name
 * in the catalogue (catalogue.ts), made through the API's current meter,
 * so it reaches whatever the SDK exports. A name the catalogue does not
 * hold is dropped, and logged once per name (a build where a thread and the
 * catalogue disagree). With telemetry off no thread forwards anything.
 *
 * Importable from runtime/ (the supervisor calls it); loads the API only.
 */
import type { Counter, Gauge, Histogram, Meter, UpDownCounter } from '@opentelemetry/api';
import type { Logger } from '../log.ts';
import type { Measurement } from '../protocol/envelope.ts';
import { definitionNamed, type MetricDefinition } from './catalogue.ts';
import { currentMeter } from './instruments.ts';

type Recorder = (value: number, attributes: Measurement[2]) => void;

let meterSeen: Meter | null = null;
const recorders = new Map<string, Recorder>();
const unknownLogged = new Set<string>();

function recorderOf(meter: Meter, def: MetricDefinition): Recorder {
  const options = { description: def.description, unit: def.unit };
  switch (def.kind) {
    case 'counter': {
      const c: Counter = meter.createCounter(def.name, options);
      return (value, attributes) => c.add(value, attributes);
    }
    case 'updown': {
      const u: UpDownCounter = meter.createUpDownCounter(def.name, options);
      return (value, attributes) => u.add(value, attributes);
    }
    case 'histogram': {
      const h: Histogram = meter.createHistogram(def.name, options);
      return (value, attributes) => h.record(value, attributes);
    }
    case 'gauge': {
      const g: Gauge = meter.createGauge(def.name, options);
      return (value, attributes) => g.record(value, attributes);
    }
  }
}

/** Records a batch an actor thread forwarded (`{ kind: 'measurements' }`). */
export function recordForwarded(batch: readonly Measurement[], log: Logger): void {
  const meter = currentMeter();
  if (meter !== meterSeen) {
    meterSeen = meter;
    recorders.clear();
  }
  for (const [name, value, attributes] of batch) {
    let record = recorders.get(name);
    if (record === undefined) {
      const def = definitionNamed(name);
      if (def === undefined) {
        if (!unknownLogged.has(name)) {
          unknownLogged.add(name);
          // The name is the build's own (code, not data): safe to log.
          log.warn({ event: 'telemetry.unknown-metric', metric: name }, 'telemetry.unknown-metric');
        }
        continue;
      }
      record = recorderOf(meter, def);
      recorders.set(name, record);
    }
    record(value, attributes);
  }
}
