/**
 * Telemetry in an actor host thread, installed by host-main.ts only when the
 * service's settings (in the thread's `workerData`) turn it on; loaded with
 * a dynamic `import()`, so a thread with telemetry off loads none of it.
 *
 * - traces: a tracer provider of the thread's own (sdk-tracing.ts), whose
 *   spans go straight to the OTLP receiver from this thread; a span begun
 *   here joins the trace an envelope's `meta.trace` carries;
 * - metrics: the forwarding MeterProvider (forwarding-meter.ts): what an
 *   actor records is sent to the main thread about every second, and before
 *   an actor's end is reported, as a `measurements` envelope.
 */
import { metrics } from '@opentelemetry/api';
import type { Logger } from '../log.ts';
import type { FromHost } from '../protocol/envelope.ts';
import { version } from '../version.ts';
import { routeDiagnostics } from './diagnostics.ts';
import { ForwardingMeterProvider } from './forwarding-meter.ts';
import { installTracing, telemetryResource } from './sdk-tracing.ts';
import { exportsMetrics, type TelemetrySettings } from './settings.ts';

export const FORWARD_INTERVAL_MS = 1_000;

/** A host thread's spans wait at most this long in their batch: a thread may end soon after its actor stops. */
const HOST_SPAN_DELAY_MS = 1_000;

export type HostTelemetry = {
  /** Sends what was recorded since the last batch (synchronously), and starts exporting the buffered spans. */
  flush(): void;
};

export async function installHostTelemetry(settings: TelemetrySettings, options: { log: Logger; post: (envelope: FromHost) => void }): Promise<HostTelemetry> {
  const { log, post } = options;
  routeDiagnostics(log);
  const resource = telemetryResource(settings.serviceName, version);
  const tracing = settings.traces.otlp === null ? null : await installTracing(settings.traces.otlp, resource, HOST_SPAN_DELAY_MS);
  const forwarding = exportsMetrics(settings) ? new ForwardingMeterProvider() : null;
  if (forwarding !== null) metrics.setGlobalMeterProvider(forwarding);
  let droppedLogged = 0;
  const flush = (): void => {
    if (forwarding === null) return;
    const batch = forwarding.drain();
    if (batch.length > 0) post({ kind: 'measurements', batch });
    const dropped = forwarding.dropped();
    if (dropped > droppedLogged) {
      log.warn({ event: 'telemetry.measurements-dropped', count: dropped - droppedLogged }, 'telemetry.measurements-dropped');
      droppedLogged = dropped;
    }
  };
  if (forwarding !== null) setInterval(flush, FORWARD_INTERVAL_MS).unref();
  return {
    flush: () => {
      flush();
      // A failed export is reported through diag (diagnostics.ts).
      tracing?.flush().catch(() => {});
    },
  };
}
