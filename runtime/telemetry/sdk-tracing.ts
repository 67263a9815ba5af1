/**
 * What every thread with telemetry on installs for traces: the resource
 * (`service.name`, `service.version`), a tracer provider whose spans go in
 * batches to the OTLP/HTTP exporter, the synchronous context manager
 * (sync-context.ts: a parent that must outlive an await is carried
 * explicitly) and the W3C trace-context propagator
 * (`traceCarrier()` / `contextFromCarrier()` in tracing.ts). The main thread
 * (sdk.ts) and each actor host thread (host-sdk.ts) call it with the same
 * settings, so a host thread's spans go straight from that thread.
 *
 * Loaded only when telemetry is on.
 */
import { context, propagation, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { defaultResource, type Resource, resourceFromAttributes } from '@opentelemetry/resources';
import type { ExportThread } from './export-thread.ts';
import { otlpSpanExporter } from './otlp-exporters.ts';
import type { OtlpTarget } from './settings.ts';
import { SynchronousContextManager } from './sync-context.ts';

export function telemetryResource(serviceName: string, version: string): Resource {
  return defaultResource().merge(resourceFromAttributes({ 'service.name': serviceName, 'service.version': version }));
}

export type InstalledTracing = { flush(): Promise<void>; shutdown(): Promise<void> };

/**
 * Installs the global tracer provider, context manager and propagator;
 * `shutdown` exports what is buffered and puts the API's no-ops back.
 * `scheduledDelayMillis`: how long a span may wait in the batch (the SDK's
 * 5 s, or OTEL_BSP_SCHEDULE_DELAY, when not given). `via`: the export thread
 * that sends the spans (the main thread's; otlp-exporters.ts).
 */
export async function installTracing(target: OtlpTarget, resource: Resource, scheduledDelayMillis?: number, via?: ExportThread): Promise<InstalledTracing> {
  const [{ BasicTracerProvider, BatchSpanProcessor }, exporter] = await Promise.all([import('@opentelemetry/sdk-trace-base'), otlpSpanExporter(target, via)]);
  const processor = new BatchSpanProcessor(exporter, scheduledDelayMillis === undefined ? {} : { scheduledDelayMillis });
  const provider = new BasicTracerProvider({ resource, spanProcessors: [processor] });
  // Not AsyncLocalStorage: on Node 20 it hooks every promise of the thread (most of what traces cost a call).
  context.setGlobalContextManager(new SynchronousContextManager());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  return {
    flush: () => provider.forceFlush(),
    shutdown: async () => {
      try {
        await provider.shutdown();
      } finally {
        trace.disable();
        propagation.disable();
        context.disable();
      }
    },
  };
}
