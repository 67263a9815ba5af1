/**
 * The OTLP/HTTP exporters, JSON or protobuf as the settings say.
 *
 * `@opentelemetry/exporter-{metrics,trace}-otlp-http` 0.223 send JSON only
 * (their Node exporters pass `JsonMetricsSerializer` / `JsonTraceSerializer`);
 * protobuf is what the separate `-otlp-proto` packages add, each a subclass
 * that passes the protobuf serializer of `@opentelemetry/otlp-transformer`
 * to the same HTTP delegate of `@opentelemetry/otlp-exporter-base`. Rather
 * than two more packages, the protobuf exporters here are built the same way
 * from those two (already installed with the HTTP exporters, now declared
 * dependencies). The exporters still read the OTLP variables this build does
 * not resolve itself (`OTEL_EXPORTER_OTLP_HEADERS`, `_TIMEOUT`,
 * `_COMPRESSION`, certificates); the URL is always given, so theirs is unused.
 *
 * Loaded only by sdk.ts and host-sdk.ts, themselves loaded only when
 * telemetry is on; each exporter's package is loaded when it is used.
 */
import type { PushMetricExporter } from '@opentelemetry/sdk-metrics';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { OtlpTarget } from './settings.ts';

const PROTOBUF = { 'Content-Type': 'application/x-protobuf' };

export async function otlpMetricExporter(target: OtlpTarget): Promise<PushMetricExporter> {
  // The base class (aggregation and temporality choices) is this package's in both encodings.
  const { OTLPMetricExporter, OTLPMetricExporterBase } = await import('@opentelemetry/exporter-metrics-otlp-http');
  if (target.protocol === 'http/json') return new OTLPMetricExporter({ url: target.url });
  const [{ convertLegacyHttpOptions, createOtlpHttpExportDelegate }, { MetricsExporterMetricsHelper, ProtobufMetricsSerializer }] = await Promise.all([
    import('@opentelemetry/otlp-exporter-base/node-http'),
    import('@opentelemetry/otlp-transformer'),
  ]);
  const options = convertLegacyHttpOptions({ url: target.url }, 'METRICS', 'v1/metrics', PROTOBUF);
  return new OTLPMetricExporterBase(
    createOtlpHttpExportDelegate(options, ProtobufMetricsSerializer, 'otlp_http_metric_exporter', MetricsExporterMetricsHelper, undefined),
  );
}

export async function otlpSpanExporter(target: OtlpTarget): Promise<SpanExporter> {
  if (target.protocol === 'http/json') {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
    return new OTLPTraceExporter({ url: target.url });
  }
  const [{ OTLPExporterBase }, { convertLegacyHttpOptions, createOtlpHttpExportDelegate }, { ProtobufTraceSerializer, TraceExporterMetricsHelper }] =
    await Promise.all([
      import('@opentelemetry/otlp-exporter-base'),
      import('@opentelemetry/otlp-exporter-base/node-http'),
      import('@opentelemetry/otlp-transformer'),
    ]);
  const options = convertLegacyHttpOptions({ url: target.url }, 'TRACES', 'v1/traces', PROTOBUF);
  return new OTLPExporterBase(createOtlpHttpExportDelegate(options, ProtobufTraceSerializer, 'otlp_http_span_exporter', TraceExporterMetricsHelper, undefined));
}
