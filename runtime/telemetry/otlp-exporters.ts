/**
 * The OTLP/HTTP exporters, JSON or protobuf as the settings say.
 *
 * `@opentelemetry/exporter-{metrics,trace}-otlp-http` 0.223 send JSON only
 * (their Node exporters pass `JsonMetricsSerializer` / `JsonTraceSerializer`);
 * protobuf is what the separate `-otlp-proto` packages add, each a subclass
 * that passes the protobuf serializer of `@opentelemetry/otlp-transformer`
 * to the same HTTP delegate of `@opentelemetry/otlp-exporter-base`. Rather
 * than two more packages, both encodings are built here the same way from
 * those two (already installed with the HTTP exporters, now declared
 * dependencies). The exporters still read the OTLP variables this build does
 * not resolve itself (`OTEL_EXPORTER_OTLP_HEADERS`, `_TIMEOUT`,
 * `_COMPRESSION`, certificates); the URL is always given, so theirs is unused.
 *
 * `via`: the main thread's exporters hand each serialised body to the export
 * thread (export-thread.ts), which sends it; without it (an actor host
 * thread) the exporter sends from its own thread.
 *
 * Loaded only by sdk.ts and host-sdk.ts, themselves loaded only when
 * telemetry is on; each exporter's package is loaded when it is used.
 */
import type { IExporterTransport, IOtlpExportDelegate } from '@opentelemetry/otlp-exporter-base';
import type { IExporterMetricsHelper, ISerializer } from '@opentelemetry/otlp-transformer';
import type { PushMetricExporter } from '@opentelemetry/sdk-metrics';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { ExportSignal, ExportThread } from './export-thread.ts';
import type { OtlpTarget } from './settings.ts';

const CONTENT_TYPE = { 'http/json': 'application/json', 'http/protobuf': 'application/x-protobuf' } as const;

/** The export delegate of one signal: OpenTelemetry's node:http one, or one whose requests the export thread sends. */
async function delegate<Internal, Response>(
  target: OtlpTarget,
  signal: ExportSignal,
  serializer: ISerializer<Internal, Response>,
  component: string,
  helper: IExporterMetricsHelper<Internal>,
  via: ExportThread | undefined,
): Promise<IOtlpExportDelegate<Internal>> {
  const [{ convertLegacyHttpOptions, createOtlpHttpExportDelegate, createOtlpHttpExporterMetrics }, { createOtlpNetworkExportDelegate }] = await Promise.all([
    import('@opentelemetry/otlp-exporter-base/node-http'),
    import('@opentelemetry/otlp-exporter-base'),
  ]);
  const contentType = CONTENT_TYPE[target.protocol];
  const options = convertLegacyHttpOptions({ url: target.url }, signal, signal === 'METRICS' ? 'v1/metrics' : 'v1/traces', { 'Content-Type': contentType });
  if (via === undefined) return createOtlpHttpExportDelegate(options, serializer, component, helper, undefined);
  const transport: IExporterTransport = via.transport(signal, target.url, contentType);
  return createOtlpNetworkExportDelegate(options, serializer, createOtlpHttpExporterMetrics(component, helper, target.url, undefined), transport);
}

export async function otlpMetricExporter(target: OtlpTarget, via?: ExportThread): Promise<PushMetricExporter> {
  // The base class (aggregation and temporality choices) is this package's in both encodings.
  const [{ OTLPMetricExporterBase }, transformer] = await Promise.all([
    import('@opentelemetry/exporter-metrics-otlp-http'),
    import('@opentelemetry/otlp-transformer'),
  ]);
  const serializer = target.protocol === 'http/json' ? transformer.JsonMetricsSerializer : transformer.ProtobufMetricsSerializer;
  return new OTLPMetricExporterBase(await delegate(target, 'METRICS', serializer, 'otlp_http_metric_exporter', transformer.MetricsExporterMetricsHelper, via));
}

export async function otlpSpanExporter(target: OtlpTarget, via?: ExportThread): Promise<SpanExporter> {
  const [{ OTLPExporterBase }, transformer] = await Promise.all([import('@opentelemetry/otlp-exporter-base'), import('@opentelemetry/otlp-transformer')]);
  const serializer = target.protocol === 'http/json' ? transformer.JsonTraceSerializer : transformer.ProtobufTraceSerializer;
  return new OTLPExporterBase(await delegate(target, 'TRACES', serializer, 'otlp_http_span_exporter', transformer.TraceExporterMetricsHelper, via));
}
