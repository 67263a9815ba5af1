/**
 * Entry of the export thread (export-thread.ts): each request is a body the
 * main thread already serialised, sent by OpenTelemetry's node:http export
 * delegate for its signal and URL (retries, compression, headers, agent and
 * certificates from the OTLP variables, its own timeout), whose serialiser
 * passes the bytes through. The main thread's exporter keeps the figures of
 * its own exports, so this one counts nothing.
 */
import { parentPort } from 'node:worker_threads';
import { ExportResultCode } from '@opentelemetry/core';
import type { IOtlpExportDelegate } from '@opentelemetry/otlp-exporter-base';
import { convertLegacyHttpOptions, createOtlpHttpExportDelegate } from '@opentelemetry/otlp-exporter-base/node-http';
import type { ExportAnswer, ExportRequest } from './export-thread.ts';

const port = parentPort!;
const delegates = new Map<string, IOtlpExportDelegate<Uint8Array>>();
const BYTES = { serializeRequest: (body: Uint8Array) => body, deserializeResponse: () => ({}) };

function delegateFor(r: ExportRequest): IOtlpExportDelegate<Uint8Array> {
  const key = `${r.signal} ${r.contentType} ${r.url}`;
  let delegate = delegates.get(key);
  if (delegate === undefined) {
    const path = r.signal === 'METRICS' ? 'v1/metrics' : 'v1/traces';
    const options = convertLegacyHttpOptions({ url: r.url }, r.signal, path, { 'Content-Type': r.contentType });
    const counter = { name: r.signal === 'METRICS' ? ('metric_data_point' as const) : ('span' as const), countItems: () => 0 };
    delegate = createOtlpHttpExportDelegate(options, BYTES, 'mailcairn_export_thread', counter, undefined);
    delegates.set(key, delegate);
  }
  return delegate;
}

/** A network error's code (`ECONNREFUSED`) or an HTTP status, as the main thread's diagnostics classify it. */
function codeOf(error: Error | undefined): string | undefined {
  const code = (error as { code?: unknown } | undefined)?.code;
  return code === undefined || code === null ? undefined : String(code);
}

port.on('message', (request: ExportRequest) => {
  delegateFor(request).export(request.data, (result) => {
    const answer: ExportAnswer =
      result.code === ExportResultCode.SUCCESS
        ? { id: request.id, ok: true }
        : { id: request.id, ok: false, message: result.error?.message ?? 'export failed', code: codeOf(result.error) };
    port.postMessage(answer);
  });
});
