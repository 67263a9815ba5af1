/**
 * A loopback OTLP/HTTP receiver for tests: what an operator's collector
 * would be, reduced to recording what arrives. It accepts `POST /v1/traces`
 * and `POST /v1/metrics` in both encodings the specification defines,
 * `application/x-protobuf` and `application/json` (gzip or not), answers the
 * empty success the exporters expect, and keeps the spans and metric points
 * decoded, with the resource they came from.
 *
 * @opentelemetry/otlp-transformer only serializes (no request decoder is
 * exported), so decoding is ours:
 * - JSON: the OTLP JSON mapping (lowerCamelCase fields, trace and span ids as
 *   hex, 64-bit integers as decimal strings or numbers, enums as numbers).
 * - Protobuf: a reader of the wire format (varint, fixed64, length-delimited,
 *   fixed32) and the fields the tests read, by the field numbers of
 *   opentelemetry-proto (collector/trace/v1, trace/v1, metrics/v1,
 *   common/v1, resource/v1); every other field is skipped by its wire type.
 * test/harness-selftest/otlp-receiver.test.ts checks both against payloads
 * the SDK itself produced.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

/** An attribute value (OTLP AnyValue); 64-bit integers as numbers, bytes as hex. */
export type AttributeValue = string | number | boolean | null | AttributeValue[] | { [key: string]: AttributeValue };
export type Attributes = Record<string, AttributeValue>;

/** OTLP's Span.SpanKind. */
export const SpanKindNumber = { unspecified: 0, internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const;
/** OTLP's Status.StatusCode. */
export const StatusCodeNumber = { unset: 0, ok: 1, error: 2 } as const;

export type ReceivedSpan = {
  /** 32 hex digits. */
  traceId: string;
  /** 16 hex digits. */
  spanId: string;
  /** 16 hex digits; undefined for a root span. */
  parentSpanId: string | undefined;
  name: string;
  kind: number;
  attributes: Attributes;
  status: { code: number; message: string };
  events: Array<{ name: string; attributes: Attributes }>;
  resource: Attributes;
  scope: { name: string; version: string };
};

export type ReceivedMetric = {
  name: string;
  unit: string;
  description: string;
  kind: 'gauge' | 'sum' | 'histogram' | 'other';
  /** One per data point: its attributes, and its value (a histogram's: its count). */
  points: Array<{ attributes: Attributes; value: number | undefined }>;
  resource: Attributes;
  scope: { name: string; version: string };
};

export type Encoding = 'protobuf' | 'json';

export type OtlpReceiver = {
  /** Base URL, as `Telemetry:…:Otlp:Endpoint` or OTEL_EXPORTER_OTLP_ENDPOINT take it (`/v1/traces` is appended). */
  url: string;
  spans(): ReceivedSpan[];
  metrics(): ReceivedMetric[];
  /** Every request accepted: its signal and encoding (a test proves which protocol the exporter spoke). */
  requests(): Array<{ signal: 'traces' | 'metrics'; encoding: Encoding; bytes: number }>;
  /** Requests refused (unknown path or content type, a body that did not decode), with the reason. */
  refused(): string[];
  /** Polls until `predicate` holds of the spans received so far; resolves with them, rejects after `timeoutMs`. */
  waitForSpans(predicate: (spans: ReceivedSpan[]) => boolean, timeoutMs?: number, what?: string): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
};

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const metrics: ReceivedMetric[] = [];
  const requests: Array<{ signal: 'traces' | 'metrics'; encoding: Encoding; bytes: number }> = [];
  const refused: string[] = [];

  const server: Server = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req);
      const signal = req.url === '/v1/traces' ? 'traces' : req.url === '/v1/metrics' ? 'metrics' : null;
      const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
      const encoding: Encoding | null = type === 'application/x-protobuf' ? 'protobuf' : type === 'application/json' ? 'json' : null;
      if (req.method !== 'POST' || signal === null || encoding === null) {
        refused.push(`${req.method} ${req.url} (${type || 'no content type'})`);
        res.writeHead(signal === null ? 404 : 415).end();
        return;
      }
      try {
        const raw = req.headers['content-encoding'] === 'gzip' ? gunzipSync(body) : body;
        if (signal === 'traces') spans.push(...decodeTraceRequest(raw, encoding));
        else metrics.push(...decodeMetricsRequest(raw, encoding));
        requests.push({ signal, encoding, bytes: raw.length });
      } catch (e) {
        refused.push(`${req.url} ${encoding}: ${(e as Error).message}`);
        res.writeHead(400).end();
        return;
      }
      // The empty Export*ServiceResponse: full success.
      if (encoding === 'json') res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      else res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    })().catch((e: unknown) => {
      refused.push(`${req.url}: ${(e as Error).message}`);
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    spans: () => [...spans],
    metrics: () => [...metrics],
    requests: () => [...requests],
    refused: () => [...refused],
    async waitForSpans(predicate, timeoutMs = 30_000, what = 'the spans expected') {
      const end = Date.now() + timeoutMs;
      while (!predicate(spans)) {
        if (Date.now() > end) {
          const names = [...new Set(spans.map((s) => s.name))].join(', ');
          throw new Error(
            `timed out after ${timeoutMs} ms waiting for ${what}; ${spans.length} spans received (${names})${refused.length ? `; refused: ${refused.join('; ')}` : ''}`,
          );
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      return [...spans];
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

// ---------------------------------------------------------------------------
// Trees shared by both encodings.

/** ExportTraceServiceRequest → one ReceivedSpan per span, each with its resource and scope. */
export function decodeTraceRequest(body: Uint8Array, encoding: Encoding): ReceivedSpan[] {
  return encoding === 'json' ? traceFromJson(JSON.parse(new TextDecoder().decode(body)) as JsonTraceRequest) : traceFromProtobuf(body);
}

/** ExportMetricsServiceRequest → one ReceivedMetric per metric, each with its resource and scope. */
export function decodeMetricsRequest(body: Uint8Array, encoding: Encoding): ReceivedMetric[] {
  return encoding === 'json' ? metricsFromJson(JSON.parse(new TextDecoder().decode(body)) as JsonMetricsRequest) : metricsFromProtobuf(body);
}

// ---------------------------------------------------------------------------
// JSON (the OTLP JSON mapping).

type JsonAnyValue = {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: string | number;
  doubleValue?: number | string;
  arrayValue?: { values?: JsonAnyValue[] };
  kvlistValue?: { values?: JsonKeyValue[] };
  bytesValue?: string;
};
type JsonKeyValue = { key: string; value?: JsonAnyValue };
type JsonResource = { attributes?: JsonKeyValue[] };
type JsonScope = { name?: string; version?: string };
type JsonSpan = {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind?: number;
  attributes?: JsonKeyValue[];
  events?: Array<{ name: string; attributes?: JsonKeyValue[] }>;
  status?: { code?: number; message?: string };
};
type JsonTraceRequest = { resourceSpans?: Array<{ resource?: JsonResource; scopeSpans?: Array<{ scope?: JsonScope; spans?: JsonSpan[] }> }> };
type JsonNumberPoint = { attributes?: JsonKeyValue[]; asDouble?: number | string; asInt?: string | number };
type JsonHistogramPoint = { attributes?: JsonKeyValue[]; count?: string | number };
type JsonMetric = {
  name: string;
  unit?: string;
  description?: string;
  gauge?: { dataPoints?: JsonNumberPoint[] };
  sum?: { dataPoints?: JsonNumberPoint[] };
  histogram?: { dataPoints?: JsonHistogramPoint[] };
};
type JsonMetricsRequest = {
  resourceMetrics?: Array<{ resource?: JsonResource; scopeMetrics?: Array<{ scope?: JsonScope; metrics?: JsonMetric[] }> }>;
};

function jsonValue(v: JsonAnyValue | undefined): AttributeValue {
  if (v === undefined) return null;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return Number(v.doubleValue);
  if (v.arrayValue !== undefined) return (v.arrayValue.values ?? []).map(jsonValue);
  if (v.kvlistValue !== undefined) return jsonAttributes(v.kvlistValue.values);
  if (v.bytesValue !== undefined) return Buffer.from(v.bytesValue, 'base64').toString('hex');
  return null;
}

function jsonAttributes(list: JsonKeyValue[] | undefined): Attributes {
  return Object.fromEntries((list ?? []).map((kv) => [kv.key, jsonValue(kv.value)]));
}

const jsonScope = (s: JsonScope | undefined) => ({ name: s?.name ?? '', version: s?.version ?? '' });

function traceFromJson(request: JsonTraceRequest): ReceivedSpan[] {
  return (request.resourceSpans ?? []).flatMap((rs) => {
    const resource = jsonAttributes(rs.resource?.attributes);
    return (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map((s) => ({
        traceId: s.traceId.toLowerCase(),
        spanId: s.spanId.toLowerCase(),
        parentSpanId: s.parentSpanId ? s.parentSpanId.toLowerCase() : undefined,
        name: s.name,
        kind: s.kind ?? 0,
        attributes: jsonAttributes(s.attributes),
        status: { code: s.status?.code ?? 0, message: s.status?.message ?? '' },
        events: (s.events ?? []).map((e) => ({ name: e.name, attributes: jsonAttributes(e.attributes) })),
        resource,
        scope: jsonScope(ss.scope),
      })),
    );
  });
}

function metricsFromJson(request: JsonMetricsRequest): ReceivedMetric[] {
  return (request.resourceMetrics ?? []).flatMap((rm) => {
    const resource = jsonAttributes(rm.resource?.attributes);
    return (rm.scopeMetrics ?? []).flatMap((sm) =>
      (sm.metrics ?? []).map((m): ReceivedMetric => {
        const numberPoints = (ps: JsonNumberPoint[] | undefined) =>
          (ps ?? []).map((p) => ({
            attributes: jsonAttributes(p.attributes),
            value: p.asDouble !== undefined ? Number(p.asDouble) : p.asInt !== undefined ? Number(p.asInt) : undefined,
          }));
        const base = { name: m.name, unit: m.unit ?? '', description: m.description ?? '', resource, scope: jsonScope(sm.scope) };
        if (m.gauge) return { ...base, kind: 'gauge', points: numberPoints(m.gauge.dataPoints) };
        if (m.sum) return { ...base, kind: 'sum', points: numberPoints(m.sum.dataPoints) };
        if (m.histogram)
          return {
            ...base,
            kind: 'histogram',
            points: (m.histogram.dataPoints ?? []).map((p) => ({
              attributes: jsonAttributes(p.attributes),
              value: p.count !== undefined ? Number(p.count) : undefined,
            })),
          };
        return { ...base, kind: 'other', points: [] };
      }),
    );
  });
}

// ---------------------------------------------------------------------------
// Protobuf: the wire format, then the OTLP messages by field number.

/** One field as read off the wire: varints as bigint, fixed64/fixed32 and length-delimited as their bytes. */
type WireField = { field: number; wire: 0; value: bigint } | { field: number; wire: 1 | 2 | 5; value: Uint8Array };

function readVarint(buf: Uint8Array, at: { pos: number }): bigint {
  let result = 0n;
  for (let shift = 0n; shift < 70n; shift += 7n) {
    if (at.pos >= buf.length) throw new Error('truncated varint');
    const byte = buf[at.pos++]!;
    result |= BigInt(byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) return result;
  }
  throw new Error('varint longer than 10 bytes');
}

function take(buf: Uint8Array, at: { pos: number }, length: number): Uint8Array {
  if (at.pos + length > buf.length) throw new Error('truncated field');
  const bytes = buf.subarray(at.pos, at.pos + length);
  at.pos += length;
  return bytes;
}

/** The fields of one message, in wire order (a repeated field appears once per element). */
function* fieldsOf(buf: Uint8Array): Generator<WireField> {
  const at = { pos: 0 };
  while (at.pos < buf.length) {
    const tag = readVarint(buf, at);
    const field = Number(tag >> 3n);
    const wire = Number(tag & 7n);
    if (field === 0) throw new Error('field number 0');
    switch (wire) {
      case 0:
        yield { field, wire, value: readVarint(buf, at) };
        break;
      case 1:
        yield { field, wire, value: take(buf, at, 8) };
        break;
      case 2:
        yield { field, wire, value: take(buf, at, Number(readVarint(buf, at))) };
        break;
      case 5:
        yield { field, wire, value: take(buf, at, 4) };
        break;
      default:
        throw new Error(`unsupported wire type ${wire} (field ${field})`);
    }
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });
const view = (b: Uint8Array) => new DataView(b.buffer, b.byteOffset, b.byteLength);
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

function bytesOf(f: WireField, what: string): Uint8Array {
  if (f.wire !== 2) throw new Error(`${what}: expected a length-delimited field, got wire type ${f.wire}`);
  return f.value;
}
function varintOf(f: WireField, what: string): bigint {
  if (f.wire !== 0) throw new Error(`${what}: expected a varint, got wire type ${f.wire}`);
  return f.value;
}
function fixed64Of(f: WireField, what: string): DataView {
  if (f.wire !== 1) throw new Error(`${what}: expected a fixed64, got wire type ${f.wire}`);
  return view(f.value);
}
const stringOf = (f: WireField, what: string) => utf8.decode(bytesOf(f, what));

/** common.v1.AnyValue: 1 string_value, 2 bool_value, 3 int_value (int64), 4 double_value, 5 array_value, 6 kvlist_value, 7 bytes_value. */
function anyValue(buf: Uint8Array): AttributeValue {
  let value: AttributeValue = null;
  for (const f of fieldsOf(buf)) {
    switch (f.field) {
      case 1:
        value = stringOf(f, 'AnyValue.string_value');
        break;
      case 2:
        value = varintOf(f, 'AnyValue.bool_value') !== 0n;
        break;
      case 3:
        value = Number(BigInt.asIntN(64, varintOf(f, 'AnyValue.int_value')));
        break;
      case 4:
        value = fixed64Of(f, 'AnyValue.double_value').getFloat64(0, true);
        break;
      case 5: {
        // ArrayValue: 1 values (repeated AnyValue).
        const values: AttributeValue[] = [];
        for (const g of fieldsOf(bytesOf(f, 'AnyValue.array_value'))) if (g.field === 1) values.push(anyValue(bytesOf(g, 'ArrayValue.values')));
        value = values;
        break;
      }
      case 6: {
        // KeyValueList: 1 values (repeated KeyValue).
        const entries: Attributes = {};
        for (const g of fieldsOf(bytesOf(f, 'AnyValue.kvlist_value'))) if (g.field === 1) addKeyValue(entries, bytesOf(g, 'KeyValueList.values'));
        value = entries;
        break;
      }
      case 7:
        value = hex(bytesOf(f, 'AnyValue.bytes_value'));
        break;
    }
  }
  return value;
}

/** common.v1.KeyValue: 1 key, 2 value (AnyValue). */
function addKeyValue(into: Attributes, buf: Uint8Array): void {
  let key = '';
  let value: AttributeValue = null;
  for (const f of fieldsOf(buf)) {
    if (f.field === 1) key = stringOf(f, 'KeyValue.key');
    else if (f.field === 2) value = anyValue(bytesOf(f, 'KeyValue.value'));
  }
  into[key] = value;
}

/** resource.v1.Resource: 1 attributes (repeated KeyValue). */
function resourceOf(buf: Uint8Array): Attributes {
  const attributes: Attributes = {};
  for (const f of fieldsOf(buf)) if (f.field === 1) addKeyValue(attributes, bytesOf(f, 'Resource.attributes'));
  return attributes;
}

/** common.v1.InstrumentationScope: 1 name, 2 version. */
function scopeOf(buf: Uint8Array): { name: string; version: string } {
  const scope = { name: '', version: '' };
  for (const f of fieldsOf(buf)) {
    if (f.field === 1) scope.name = stringOf(f, 'InstrumentationScope.name');
    else if (f.field === 2) scope.version = stringOf(f, 'InstrumentationScope.version');
  }
  return scope;
}

/**
 * trace.v1.Span: 1 trace_id, 2 span_id, 4 parent_span_id (bytes), 5 name, 6 kind (enum),
 * 9 attributes (repeated KeyValue), 11 events (repeated Span.Event), 15 status (Status).
 */
function spanOf(buf: Uint8Array, resource: Attributes, scope: { name: string; version: string }): ReceivedSpan {
  const span: ReceivedSpan = {
    traceId: '',
    spanId: '',
    parentSpanId: undefined,
    name: '',
    kind: 0,
    attributes: {},
    status: { code: 0, message: '' },
    events: [],
    resource,
    scope,
  };
  for (const f of fieldsOf(buf)) {
    switch (f.field) {
      case 1:
        span.traceId = hex(bytesOf(f, 'Span.trace_id'));
        break;
      case 2:
        span.spanId = hex(bytesOf(f, 'Span.span_id'));
        break;
      case 4: {
        const parent = bytesOf(f, 'Span.parent_span_id');
        span.parentSpanId = parent.length > 0 ? hex(parent) : undefined;
        break;
      }
      case 5:
        span.name = stringOf(f, 'Span.name');
        break;
      case 6:
        span.kind = Number(varintOf(f, 'Span.kind'));
        break;
      case 9:
        addKeyValue(span.attributes, bytesOf(f, 'Span.attributes'));
        break;
      case 11:
        span.events.push(eventOf(bytesOf(f, 'Span.events')));
        break;
      case 15:
        span.status = statusOf(bytesOf(f, 'Span.status'));
        break;
    }
  }
  return span;
}

/** trace.v1.Span.Event: 2 name, 3 attributes. */
function eventOf(buf: Uint8Array): { name: string; attributes: Attributes } {
  const event = { name: '', attributes: {} as Attributes };
  for (const f of fieldsOf(buf)) {
    if (f.field === 2) event.name = stringOf(f, 'Event.name');
    else if (f.field === 3) addKeyValue(event.attributes, bytesOf(f, 'Event.attributes'));
  }
  return event;
}

/** trace.v1.Status: 2 message, 3 code (1 is a retired field). */
function statusOf(buf: Uint8Array): { code: number; message: string } {
  const status = { code: 0, message: '' };
  for (const f of fieldsOf(buf)) {
    if (f.field === 2) status.message = stringOf(f, 'Status.message');
    else if (f.field === 3) status.code = Number(varintOf(f, 'Status.code'));
  }
  return status;
}

/**
 * collector.trace.v1.ExportTraceServiceRequest: 1 resource_spans.
 * ResourceSpans: 1 resource, 2 scope_spans. ScopeSpans: 1 scope, 2 spans.
 */
function traceFromProtobuf(body: Uint8Array): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const rsField of fieldsOf(body)) {
    if (rsField.field !== 1) continue;
    const rs = bytesOf(rsField, 'resource_spans');
    let resource: Attributes = {};
    for (const f of fieldsOf(rs)) if (f.field === 1) resource = resourceOf(bytesOf(f, 'ResourceSpans.resource'));
    for (const ssField of fieldsOf(rs)) {
      if (ssField.field !== 2) continue;
      const ss = bytesOf(ssField, 'ResourceSpans.scope_spans');
      let scope = { name: '', version: '' };
      for (const f of fieldsOf(ss)) if (f.field === 1) scope = scopeOf(bytesOf(f, 'ScopeSpans.scope'));
      for (const f of fieldsOf(ss)) if (f.field === 2) spans.push(spanOf(bytesOf(f, 'ScopeSpans.spans'), resource, scope));
    }
  }
  return spans;
}

/** metrics.v1.NumberDataPoint: 4 as_double (double), 6 as_int (sfixed64), 7 attributes. */
function numberPointOf(buf: Uint8Array): { attributes: Attributes; value: number | undefined } {
  const point: { attributes: Attributes; value: number | undefined } = { attributes: {}, value: undefined };
  for (const f of fieldsOf(buf)) {
    if (f.field === 4) point.value = fixed64Of(f, 'NumberDataPoint.as_double').getFloat64(0, true);
    else if (f.field === 6) point.value = Number(fixed64Of(f, 'NumberDataPoint.as_int').getBigInt64(0, true));
    else if (f.field === 7) addKeyValue(point.attributes, bytesOf(f, 'NumberDataPoint.attributes'));
  }
  return point;
}

/** metrics.v1.HistogramDataPoint: 4 count (fixed64), 9 attributes. */
function histogramPointOf(buf: Uint8Array): { attributes: Attributes; value: number | undefined } {
  const point: { attributes: Attributes; value: number | undefined } = { attributes: {}, value: undefined };
  for (const f of fieldsOf(buf)) {
    if (f.field === 4) point.value = Number(fixed64Of(f, 'HistogramDataPoint.count').getBigUint64(0, true));
    else if (f.field === 9) addKeyValue(point.attributes, bytesOf(f, 'HistogramDataPoint.attributes'));
  }
  return point;
}

/** metrics.v1.Metric: 1 name, 2 description, 3 unit, 5 gauge, 7 sum, 9 histogram (each: 1 data_points). */
function metricOf(buf: Uint8Array, resource: Attributes, scope: { name: string; version: string }): ReceivedMetric {
  const metric: ReceivedMetric = { name: '', unit: '', description: '', kind: 'other', points: [], resource, scope };
  for (const f of fieldsOf(buf)) {
    switch (f.field) {
      case 1:
        metric.name = stringOf(f, 'Metric.name');
        break;
      case 2:
        metric.description = stringOf(f, 'Metric.description');
        break;
      case 3:
        metric.unit = stringOf(f, 'Metric.unit');
        break;
      case 5:
      case 7:
        metric.kind = f.field === 5 ? 'gauge' : 'sum';
        for (const g of fieldsOf(bytesOf(f, 'Metric.data'))) if (g.field === 1) metric.points.push(numberPointOf(bytesOf(g, 'data_points')));
        break;
      case 9:
        metric.kind = 'histogram';
        for (const g of fieldsOf(bytesOf(f, 'Metric.histogram'))) if (g.field === 1) metric.points.push(histogramPointOf(bytesOf(g, 'data_points')));
        break;
    }
  }
  return metric;
}

/**
 * collector.metrics.v1.ExportMetricsServiceRequest: 1 resource_metrics.
 * ResourceMetrics: 1 resource, 2 scope_metrics. ScopeMetrics: 1 scope, 2 metrics.
 */
function metricsFromProtobuf(body: Uint8Array): ReceivedMetric[] {
  const metrics: ReceivedMetric[] = [];
  for (const rmField of fieldsOf(body)) {
    if (rmField.field !== 1) continue;
    const rm = bytesOf(rmField, 'resource_metrics');
    let resource: Attributes = {};
    for (const f of fieldsOf(rm)) if (f.field === 1) resource = resourceOf(bytesOf(f, 'ResourceMetrics.resource'));
    for (const smField of fieldsOf(rm)) {
      if (smField.field !== 2) continue;
      const sm = bytesOf(smField, 'ResourceMetrics.scope_metrics');
      let scope = { name: '', version: '' };
      for (const f of fieldsOf(sm)) if (f.field === 1) scope = scopeOf(bytesOf(f, 'ScopeMetrics.scope'));
      for (const f of fieldsOf(sm)) if (f.field === 2) metrics.push(metricOf(bytesOf(f, 'ScopeMetrics.metrics'), resource, scope));
    }
  }
  return metrics;
}

// ---------------------------------------------------------------------------
// Reading a trace.

/** The spans of one trace. */
export function inTrace(spans: readonly ReceivedSpan[], traceId: string): ReceivedSpan[] {
  return spans.filter((s) => s.traceId === traceId);
}

/** The chain of parents of `span` within what was received, nearest first. */
export function ancestors(spans: readonly ReceivedSpan[], span: ReceivedSpan): ReceivedSpan[] {
  const byId = new Map(inTrace(spans, span.traceId).map((s) => [s.spanId, s]));
  const chain: ReceivedSpan[] = [];
  for (let at = span.parentSpanId; at !== undefined; ) {
    const parent = byId.get(at);
    if (parent === undefined || chain.includes(parent)) break;
    chain.push(parent);
    at = parent.parentSpanId;
  }
  return chain;
}

/** Every string a span exports: its name, its attribute keys and values, its events', its status message, its resource's. */
export function exportedStrings(span: ReceivedSpan): string[] {
  const out: string[] = [span.name, span.status.message];
  const walk = (v: AttributeValue): void => {
    if (typeof v === 'string') out.push(v);
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v !== null && typeof v === 'object')
      for (const [k, inner] of Object.entries(v)) {
        out.push(k);
        walk(inner);
      }
  };
  walk(span.attributes);
  walk(span.resource);
  for (const e of span.events) {
    out.push(e.name);
    walk(e.attributes);
  }
  return out;
}
