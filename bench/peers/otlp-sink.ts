/**
 * A loopback OTLP/HTTP receiver for benchmarks: it accepts every export
 * (`POST …/v1/traces`, `…/v1/metrics`), answers 200 with an empty export
 * response in the request's encoding (a zero-length protobuf message, or
 * `{}`), and counts what arrived per signal: requests, bytes and, for
 * traces, spans. Nothing is kept. It runs in the bench process (like the
 * OAuth provider of auth-overhead): an export arrives a few times a second,
 * so it adds little to the client's event loop and nothing to the daemon's
 * CPU accounting, which is what is measured.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

export type SignalTally = { requests: number; bytes: number; spans: number };
export type OtlpSink = {
  /** The base URL an exporter is given (`/v1/traces`, `/v1/metrics` are appended to it). */
  readonly endpoint: string;
  readonly traces: SignalTally;
  readonly metrics: SignalTally;
  /** Requests to any other path (answered 404): a misdirected exporter. */
  readonly other: number;
  stop(): Promise<void>;
};

/** Reads one base-128 varint at `at`; its value and the offset after it. */
function varint(buf: Uint8Array, at: number): [number, number] {
  let value = 0;
  let scale = 1;
  for (let i = at; i < buf.length; i++) {
    const byte = buf[i]!;
    value += (byte & 0x7f) * scale;
    if ((byte & 0x80) === 0) return [value, i + 1];
    scale *= 128;
  }
  throw new Error('truncated varint');
}

/** The length-delimited fields numbered `field` of a protobuf message, as byte ranges; other fields are skipped. */
function lengthDelimited(buf: Uint8Array, field: number, start = 0, end = buf.length): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  let at = start;
  while (at < end) {
    const [key, next] = varint(buf, at);
    at = next;
    const wire = key & 7;
    if (wire === 0) at = varint(buf, at)[1];
    else if (wire === 1) at += 8;
    else if (wire === 5) at += 4;
    else if (wire === 2) {
      const [length, body] = varint(buf, at);
      if (key >>> 3 === field) out.push([body, body + length]);
      at = body + length;
    } else throw new Error(`unexpected wire type ${wire}`);
  }
  return out;
}

/** Spans of an ExportTraceServiceRequest: resource_spans (1) → scope_spans (2) → spans (2). */
function protobufSpans(buf: Uint8Array): number {
  let spans = 0;
  for (const [rs, rsEnd] of lengthDelimited(buf, 1)) {
    for (const [ss, ssEnd] of lengthDelimited(buf, 2, rs, rsEnd)) spans += lengthDelimited(buf, 2, ss, ssEnd).length;
  }
  return spans;
}

function jsonSpans(text: string): number {
  const request = JSON.parse(text) as { resourceSpans?: Array<{ scopeSpans?: Array<{ spans?: unknown[] }> }> };
  return (request.resourceSpans ?? []).reduce((n, rs) => n + (rs.scopeSpans ?? []).reduce((m, ss) => m + (ss.spans?.length ?? 0), 0), 0);
}

async function body(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks);
  return req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw;
}

export async function startOtlpSink(): Promise<OtlpSink> {
  const traces: SignalTally = { requests: 0, bytes: 0, spans: 0 };
  const metrics: SignalTally = { requests: 0, bytes: 0, spans: 0 };
  let other = 0;
  const server = createServer((req, res) => {
    void (async () => {
      const path = (req.url ?? '').split('?')[0]!;
      const tally = req.method === 'POST' ? (path.endsWith('/v1/traces') ? traces : path.endsWith('/v1/metrics') ? metrics : null) : null;
      const payload = await body(req);
      if (tally === null) {
        other++;
        res.writeHead(404).end();
        return;
      }
      const json = (req.headers['content-type'] ?? '').startsWith('application/json');
      tally.requests++;
      tally.bytes += payload.length;
      if (tally === traces) tally.spans += json ? jsonSpans(payload.toString('utf8')) : protobufSpans(payload);
      if (json) res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      else res.writeHead(200, { 'content-type': 'application/x-protobuf', 'content-length': '0' }).end();
    })().catch(() => {
      if (!res.headersSent) res.writeHead(400).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    traces,
    metrics,
    get other() {
      return other;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
