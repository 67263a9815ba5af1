/**
 * The main thread's side of metrics recorded in actor threads: each
 * forwarded measurement is recorded into the instrument of the same name
 * in the catalogue (catalogue.ts), through the instruments of instruments.ts,
 * so it reaches whatever the SDK exports. A name the catalogue does not
 * hold is dropped, and logged once per name (a build where a thread and the
 * catalogue disagree). With telemetry off no thread forwards anything.
 *
 * Importable from runtime/ (the supervisor calls it); loads the API only.
 */
import type { Logger } from '../log.ts';
import type { Measurement } from '../protocol/envelope.ts';
import { definitionNamed } from './catalogue.ts';
import { recordInto } from './instruments.ts';

const unknownLogged = new Set<string>();

/** Records a batch an actor thread forwarded (`{ kind: 'measurements' }`). */
export function recordForwarded(batch: readonly Measurement[], log: Logger): void {
  for (const [name, value, attributes] of batch) {
    const def = definitionNamed(name);
    if (def !== undefined) {
      recordInto(def, value, attributes);
    } else if (!unknownLogged.has(name)) {
      unknownLogged.add(name);
      // The name is the build's own (code, not data): safe to log.
      log.warn({ event: 'telemetry.unknown-metric', metric: name }, 'telemetry.unknown-metric');
    }
  }
}
