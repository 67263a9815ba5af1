/**
 * `Telemetry`: OpenTelemetry metrics (a Prometheus scrape listener, OTLP/HTTP
 * push) and traces (OTLP/HTTP push). Only `Enabled` has a default: every
 * other key is optional, because a key left out falls back to the standard
 * `OTEL_*` environment variable and then to OpenTelemetry's own default
 * (config/telemetry-settings.ts resolves them, docs/operations.md
 * "Telemetry" lists the precedence). With `Enabled` false nothing is read.
 */
import { z } from 'zod';
import { bindAddress, choice, flag, httpUrl, port, text } from './fields.ts';
import { timeSpan } from './time-span.ts';

const PROTOCOLS = ['http/protobuf', 'http/json'] as const;

const endpoint = (signal: string, variable: string) =>
  httpUrl(
    `Base URL of the OTLP/HTTP receiver of ${signal} (/v1/${signal} is appended); absent: ${variable}, else OTEL_EXPORTER_OTLP_ENDPOINT, else http://localhost:4318`,
    {
      plain: true,
    },
  ).optional();

const protocol = (variable: string) => choice(PROTOCOLS, `OTLP encoding; absent: ${variable}, else OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf`).optional();

const Prometheus = z
  .strictObject({
    Enabled: flag('Whether a Prometheus scrape listener serves GET /metrics; absent: whether OTEL_METRICS_EXPORTER lists prometheus').optional(),
    Host: bindAddress('Address of the scrape listener; absent: OTEL_EXPORTER_PROMETHEUS_HOST, else 127.0.0.1').optional(),
    Port: port('Port of the scrape listener; absent: OTEL_EXPORTER_PROMETHEUS_PORT, else 9464').optional(),
  })
  .meta({ description: 'Prometheus scrape listener of the metrics (a listener of its own)' });

const MetricsOtlp = z
  .strictObject({
    Enabled: flag('Whether metrics are pushed over OTLP/HTTP; absent: whether OTEL_METRICS_EXPORTER lists otlp (its default)').optional(),
    Endpoint: endpoint('metrics', 'OTEL_EXPORTER_OTLP_METRICS_ENDPOINT (used as the whole URL)'),
    Protocol: protocol('OTEL_EXPORTER_OTLP_METRICS_PROTOCOL'),
    ExportInterval: timeSpan(
      '00:00:00.100',
      '01:00:00',
      'Time between two pushes; absent: OTEL_METRIC_EXPORT_INTERVAL (milliseconds), else 00:01:00',
    ).optional(),
  })
  .meta({ description: 'OTLP/HTTP push of the metrics' });

const TracesOtlp = z
  .strictObject({
    Enabled: flag('Whether spans are pushed over OTLP/HTTP; absent: whether OTEL_TRACES_EXPORTER is otlp (its default)').optional(),
    Endpoint: endpoint('traces', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as the whole URL)'),
    Protocol: protocol('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'),
  })
  .meta({ description: 'OTLP/HTTP push of the spans' });

export const Telemetry = z
  .strictObject({
    Enabled: flag('Whether traces and metrics are exported; false: no OpenTelemetry SDK is loaded and OTEL_* variables are ignored').default(false),
    ServiceName: text('service.name of exported telemetry; absent: OTEL_SERVICE_NAME, else mailcairn', 128).optional(),
    Metrics: z
      .strictObject({ Prometheus: Prometheus.prefault({}), Otlp: MetricsOtlp.prefault({}) })
      .meta({ description: 'Where metrics go' })
      .prefault({}),
    Traces: z
      .strictObject({ Otlp: TracesOtlp.prefault({}) })
      .meta({ description: 'Where spans go' })
      .prefault({}),
  })
  .meta({ description: 'OpenTelemetry metrics and traces; a key left out falls back to its OTEL_* environment variable' });

export type TelemetrySection = z.infer<typeof Telemetry>;
export const OTLP_PROTOCOLS = PROTOCOLS;
