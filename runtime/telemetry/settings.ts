/**
 * The effective telemetry settings: what the SDK installs (sdk.ts, and
 * host-sdk.ts in every actor thread), resolved once at startup from the
 * `Telemetry` section and the `OTEL_*` environment
 * (config/telemetry-settings.ts). Plain data, so it crosses into host
 * threads in their `workerData`, parsed again there.
 *
 * Importable from every layer; loads zod only.
 */
import { z } from 'zod';

export const OtlpProtocol = z.enum(['http/protobuf', 'http/json']);
export type OtlpProtocol = z.infer<typeof OtlpProtocol>;

/** An OTLP/HTTP destination: the whole URL (`…/v1/metrics`, `…/v1/traces`) and its encoding. */
export const OtlpTarget = z.strictObject({ url: z.url(), protocol: OtlpProtocol });
export type OtlpTarget = z.infer<typeof OtlpTarget>;

export const TelemetrySettings = z.strictObject({
  serviceName: z.string().min(1),
  metrics: z.strictObject({
    /** The scrape listener's address; null: no Prometheus exporter. */
    prometheus: z.strictObject({ host: z.string().min(1), port: z.number().int().min(0).max(65535) }).nullable(),
    /** OTLP push; null: none. */
    otlp: OtlpTarget.extend({ intervalMs: z.number().int().positive() }).nullable(),
  }),
  traces: z.strictObject({
    /** OTLP push of spans; null: no tracer provider is installed. */
    otlp: OtlpTarget.nullable(),
  }),
});
export type TelemetrySettings = z.infer<typeof TelemetrySettings>;

/** Whether any metric exporter is configured. */
export function exportsMetrics(settings: TelemetrySettings): boolean {
  return settings.metrics.prometheus !== null || settings.metrics.otlp !== null;
}
