/**
 * The OTLP receiver's decoders against what the SDK really produces: spans
 * made in-process by a BasicTracerProvider (local, never the global one) and
 * captured by an InMemorySpanExporter, metrics collected from a local
 * MeterProvider, serialized by @opentelemetry/otlp-transformer's own
 * Protobuf and JSON serializers, and decoded back: ids, parent links, names,
 * kinds, every attribute type, events, status, resource and scope. Then over
 * HTTP: the real OTLP/HTTP trace exporter (JSON) posting to it, a protobuf
 * body plain and gzipped, and refusals of what is not OTLP.
 */
import { gzipSync } from 'node:zlib';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { JsonMetricsSerializer, JsonTraceSerializer, ProtobufMetricsSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import t, { type Test } from 'tap';
import {
  ancestors,
  decodeMetricsRequest,
  decodeTraceRequest,
  type Encoding,
  exportedStrings,
  type ReceivedSpan,
  SpanKindNumber,
  StatusCodeNumber,
  startOtlpReceiver,
} from '../helpers/otlp-receiver.ts';

t.setTimeout(60_000);

const resource = resourceFromAttributes({ 'service.name': 'mailcairn-selftest', 'service.instance.id': 'instance-1' });

/** Three spans of one trace (server → ask → handle, the handle across a remote boundary as an actor thread sees it) and one of another. */
function producedSpans(): ReadableSpan[] {
  const memory = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ resource, spanProcessors: [new SimpleSpanProcessor(memory)] });
  const tracer = provider.getTracer('mailcairn', '1.2.3');
  const server = tracer.startSpan('POST /mcp', {
    kind: SpanKind.SERVER,
    attributes: { 'http.route': '/mcp', 'http.response.status_code': 200, 'mailcairn.large': 2 ** 40, ok: true, ratio: 0.25, tags: ['a', 'b'], negative: -7 },
  });
  const ask = tracer.startSpan('ask embedding', { kind: SpanKind.CLIENT }, trace.setSpan(ROOT_CONTEXT, server));
  // What crosses a thread: only the span context (a traceparent), so the child is made under a remote parent.
  const remote = trace.setSpanContext(ROOT_CONTEXT, { ...ask.spanContext(), isRemote: true });
  const handle = tracer.startSpan('handle embedding', { kind: SpanKind.SERVER }, remote);
  handle.addEvent('step', { 'mailcairn.step': 'placed', count: 3 });
  handle.setStatus({ code: SpanStatusCode.ERROR, message: 'E_INTERNAL' });
  handle.end();
  ask.end();
  server.end();
  tracer.startSpan('lonely', { kind: SpanKind.INTERNAL }).end();
  return memory.getFinishedSpans();
}

function checkDecoded(t: Test, produced: ReadableSpan[], decoded: ReceivedSpan[], encoding: Encoding): void {
  t.equal(decoded.length, produced.length, `${encoding}: every span`);
  for (const original of produced) {
    const got = decoded.find((s) => s.spanId === original.spanContext().spanId);
    if (!got) {
      t.fail(`${encoding}: ${original.name} missing`);
      continue;
    }
    t.equal(got.traceId, original.spanContext().traceId, `${encoding}: ${original.name} trace id`);
    t.equal(got.parentSpanId, original.parentSpanContext?.spanId, `${encoding}: ${original.name} parent`);
    t.equal(got.name, original.name);
    t.equal(got.kind, original.kind + 1, `${encoding}: ${original.name} kind (OTLP numbers from 1)`);
    t.same(got.resource, { ...resource.attributes }, `${encoding}: resource`);
    t.same(got.scope, { name: 'mailcairn', version: '1.2.3' });
  }
  const byName = Object.fromEntries(decoded.map((s) => [s.name, s]));
  t.same(
    byName['POST /mcp']!.attributes,
    { 'http.route': '/mcp', 'http.response.status_code': 200, 'mailcairn.large': 2 ** 40, ok: true, ratio: 0.25, tags: ['a', 'b'], negative: -7 },
    `${encoding}: string, int, large int, negative int, bool, double and array attributes`,
  );
  t.equal(byName['POST /mcp']!.kind, SpanKindNumber.server);
  t.equal(byName['POST /mcp']!.parentSpanId, undefined, `${encoding}: a root has no parent`);
  t.same(byName['handle embedding']!.status, { code: StatusCodeNumber.error, message: 'E_INTERNAL' });
  t.same(byName['handle embedding']!.events, [{ name: 'step', attributes: { 'mailcairn.step': 'placed', count: 3 } }]);
  t.same(byName.lonely!.status, { code: StatusCodeNumber.unset, message: '' });
  t.same(
    ancestors(decoded, byName['handle embedding']!).map((s) => s.name),
    ['ask embedding', 'POST /mcp'],
    `${encoding}: the chain of parents across the remote boundary`,
  );
  t.ok(exportedStrings(byName['handle embedding']!).includes('placed'), 'exportedStrings reaches event attributes');
  t.ok(exportedStrings(byName['handle embedding']!).includes('mailcairn-selftest'), 'and the resource');
}

t.test('spans serialized by otlp-transformer decode back, protobuf and JSON', async (t) => {
  const produced = producedSpans();
  t.equal(produced.length, 4);
  checkDecoded(t, produced, decodeTraceRequest(ProtobufTraceSerializer.serializeRequest(produced)!, 'protobuf'), 'protobuf');
  checkDecoded(t, produced, decodeTraceRequest(JsonTraceSerializer.serializeRequest(produced)!, 'json'), 'json');
  t.throws(() => decodeTraceRequest(Uint8Array.from([0x0a, 0x05, 0x01]), 'protobuf'), /truncated/, 'a truncated body is refused, not misread');
});

class CollectingReader extends MetricReader {
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
}

t.test('metrics serialized by otlp-transformer decode back, protobuf and JSON', async (t) => {
  const reader = new CollectingReader();
  const provider = new MeterProvider({ resource, readers: [reader] });
  t.teardown(() => provider.shutdown());
  const meter = provider.getMeter('mailcairn');
  meter.createCounter('service.authorization.refusals', { unit: '{refusal}' }).add(2, { surface: 'mcp', target: 'create_contact' });
  meter.createObservableGauge('mailcairn.mailbox.messages').addCallback((r) => r.observe(41.5, { 'mailcairn.folder': 'inbox' }));
  const h = meter.createHistogram('http.server.request.duration', { unit: 's' });
  h.record(0.1, { 'http.route': '/mcp' });
  h.record(0.2, { 'http.route': '/mcp' });
  const { resourceMetrics } = await reader.collect();
  for (const [encoding, body] of [
    ['protobuf', ProtobufMetricsSerializer.serializeRequest(resourceMetrics)!],
    ['json', JsonMetricsSerializer.serializeRequest(resourceMetrics)!],
  ] as const) {
    const byName = Object.fromEntries(decodeMetricsRequest(body, encoding).map((m) => [m.name, m]));
    t.match(
      byName['service.authorization.refusals'],
      { kind: 'sum', unit: '{refusal}', points: [{ attributes: { surface: 'mcp', target: 'create_contact' }, value: 2 }] },
      encoding,
    );
    t.match(byName['mailcairn.mailbox.messages'], { kind: 'gauge', points: [{ attributes: { 'mailcairn.folder': 'inbox' }, value: 41.5 }] }, encoding);
    t.match(byName['http.server.request.duration'], { kind: 'histogram', unit: 's', points: [{ attributes: { 'http.route': '/mcp' }, value: 2 }] }, encoding);
    t.same(byName['mailcairn.mailbox.messages']!.resource, { ...resource.attributes });
  }
});

t.test('over HTTP: the real OTLP/HTTP exporter, protobuf plain and gzipped, refusals', async (t) => {
  const receiver = await startOtlpReceiver();
  t.teardown(() => receiver.close());
  const produced = producedSpans();

  const exporter = new OTLPTraceExporter({ url: `${receiver.url}/v1/traces` });
  const result = await new Promise<{ code: number; error?: Error }>((resolve) => exporter.export(produced, resolve));
  t.equal(result.code, 0, 'the exporter was told success');
  await exporter.shutdown();
  await receiver.waitForSpans((s) => s.length === 4, 10_000);

  const body = ProtobufTraceSerializer.serializeRequest(produced)!;
  const post = (path: string, type: string, payload: Uint8Array, headers: Record<string, string> = {}) =>
    fetch(`${receiver.url}${path}`, { method: 'POST', headers: { 'content-type': type, ...headers }, body: payload });
  const plain = await post('/v1/traces', 'application/x-protobuf', body);
  t.equal(plain.status, 200);
  t.equal((await plain.arrayBuffer()).byteLength, 0, 'the empty protobuf response');
  t.equal((await post('/v1/traces', 'application/x-protobuf', gzipSync(body), { 'content-encoding': 'gzip' })).status, 200);
  t.equal(receiver.spans().length, 12);
  t.same(
    receiver.requests().map((r) => [r.signal, r.encoding]),
    [
      ['traces', 'json'],
      ['traces', 'protobuf'],
      ['traces', 'protobuf'],
    ],
  );

  t.equal((await post('/v1/logs', 'application/x-protobuf', body)).status, 404);
  t.equal((await post('/v1/traces', 'text/plain', body)).status, 415);
  t.equal((await post('/v1/traces', 'application/x-protobuf', Uint8Array.from([0x0a, 0x7f]))).status, 400);
  t.equal(receiver.refused().length, 3);
  t.equal(receiver.spans().length, 12, 'nothing refused was recorded');
  await t.rejects(
    receiver.waitForSpans((s) => s.length > 12, 200, 'more spans'),
    /timed out after 200 ms waiting for more spans; 12 spans received/,
  );
});
