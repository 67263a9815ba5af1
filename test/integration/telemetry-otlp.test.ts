/**
 * Issue 31: traces pushed over OTLP/HTTP to a loopback receiver that decodes
 * the official payloads (test/helpers/otlp-receiver.ts), once in each
 * protocol: `http/protobuf` written in `Telemetry:Traces:Otlp:Protocol`, and
 * `http/json` from OTEL_EXPORTER_OTLP_PROTOCOL (no key written, so the
 * standard variable applies). Against the real `mailcairnd` mirroring a
 * private Dovecot account, through the official MCP client:
 * - the exporter spoke the protocol asked for, and every request decoded;
 * - the resource names the service as configured (key, or OTEL_SERVICE_NAME);
 * - `search_emails` is a `POST /mcp` server span with `tools/call
 *   search_emails` inside it, and the actor work it asked for crosses the
 *   thread boundary: a `handle <actor>` span whose parent is the `ask
 *   <actor>` span, in the same trace, under the tool's span;
 * - an undiagnosed failure (the contacts actor crashing on a real SQLite
 *   error, telemetry-daemon.ts `fault`) is answered 54001 with a trace id,
 *   the daemon's error log line `mcp.tool-failed` carries the same id, and
 *   it is the trace id of exported spans: the failed `tools/call
 *   create_contact`, marked as an error.
 */
import t, { type Test } from 'tap';
import { ancestors, inTrace, type OtlpReceiver, type ReceivedSpan, SpanKindNumber, StatusCodeNumber, startOtlpReceiver } from '../helpers/otlp-receiver.ts';
import { CONTACT, QUERY_TEXT, startTelemetryDaemon } from '../helpers/telemetry-daemon.ts';

t.setTimeout(300_000);

type Case = { protocol: 'protobuf' | 'json'; serviceName: string; traces: (receiver: OtlpReceiver) => Record<string, unknown>; env: Record<string, string> };

const CASES: Case[] = [
  {
    protocol: 'protobuf',
    serviceName: 'mailcairn-e2e-protobuf',
    traces: (receiver) => ({ Otlp: { Enabled: true, Endpoint: receiver.url, Protocol: 'http/protobuf' } }),
    env: {},
  },
  {
    protocol: 'json',
    serviceName: 'mailcairn-e2e-json',
    traces: (receiver) => ({ Otlp: { Enabled: true, Endpoint: receiver.url } }),
    env: { OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_SERVICE_NAME: 'mailcairn-e2e-json' },
  },
];

const named = (spans: readonly ReceivedSpan[], name: string) => spans.filter((s) => s.name === name);
const isActorPair = (spans: readonly ReceivedSpan[], handle: ReceivedSpan): boolean => {
  const actor = handle.name.slice('handle '.length);
  const parent = spans.find((s) => s.spanId === handle.parentSpanId && s.traceId === handle.traceId);
  return parent?.name === `ask ${actor}`;
};

for (const c of CASES) {
  t.test(`traces over OTLP/HTTP, ${c.protocol}`, async (t: Test) => {
    const receiver = await startOtlpReceiver();
    t.teardown(() => receiver.close());
    const served = await startTelemetryDaemon(t, {
      telemetry: {
        Enabled: true,
        ...(c.protocol === 'protobuf' ? { ServiceName: c.serviceName } : {}),
        Metrics: { Prometheus: { Enabled: false }, Otlp: { Enabled: false } },
        Traces: c.traces(receiver),
      },
      // Exported within a fraction of a second rather than the SDK's 5 s batch delay.
      env: { OTEL_BSP_SCHEDULE_DELAY: '200', ...c.env },
      fault: 'asserted-contacts',
      counts: { inbox: 10, archive: 3 },
    });
    await served.waitMirrored();
    const agent = await served.mcp('agent');

    const search = await agent.call('search_emails', { queryText: QUERY_TEXT });
    t.notOk(search.isError, 'search_emails answered');
    const failed = await agent.call('create_contact', { name: CONTACT.name, addresses: [{ address: CONTACT.address }] });
    t.match(failed, { isError: true, structuredContent: { code: 54001, traceId: /^[0-9a-f]{32}$/ } }, 'an undiagnosed failure, with a W3C trace id');
    const traceId = (failed.structuredContent as { traceId: string }).traceId;

    const spans = await receiver.waitForSpans(
      (all) =>
        named(all, 'tools/call search_emails').some((tool) => inTrace(all, tool.traceId).some((s) => s.name === 'handle mail-query' && isActorPair(all, s))) &&
        named(all, 'tools/call create_contact').some((s) => s.traceId === traceId),
      60_000,
      'the search with its actor spans, and the failed create_contact',
    );

    await t.test('the exporter spoke the protocol asked for, and the resource names the service', async (t) => {
      const requests = receiver.requests().filter((r) => r.signal === 'traces');
      t.ok(requests.length > 0);
      t.same([...new Set(requests.map((r) => r.encoding))], [c.protocol], `every trace export was ${c.protocol}`);
      t.same(receiver.refused(), [], 'every request decoded');
      t.same([...new Set(spans.map((s) => s.resource['service.name']))], [c.serviceName], 'service.name from the configuration or OTEL_SERVICE_NAME');
    });

    await t.test('the request, the tool call and the actor ask, across the thread boundary', async (t) => {
      const tool = named(spans, 'tools/call search_emails').find((s) =>
        inTrace(spans, s.traceId).some((h) => h.name === 'handle mail-query' && isActorPair(spans, h)),
      )!;
      const trace = inTrace(spans, tool.traceId);
      const server = ancestors(spans, tool).find((s) => s.name === 'POST /mcp');
      t.ok(server, 'tools/call search_emails is inside the POST /mcp span of its request');
      t.equal(server?.kind, SpanKindNumber.server, 'POST /mcp is a server span');
      t.equal(server?.attributes['http.route'], '/mcp');

      const handles = trace.filter((s) => s.name.startsWith('handle ') && isActorPair(spans, s));
      t.ok(handles.length >= 1, `handled in an actor thread: ${handles.map((s) => s.name).join(', ')}`);
      t.ok(
        handles.some((s) => s.name === 'handle mail-query'),
        'the query ran in a pool thread, which exported its own span',
      );
      for (const handle of handles) {
        const ask = trace.find((s) => s.spanId === handle.parentSpanId)!;
        t.equal(ask.name, `ask ${handle.name.slice('handle '.length)}`, `${handle.name}: its parent is the ask`);
        t.equal(handle.traceId, ask.traceId, `${handle.name}: one trace across the thread boundary`);
        t.ok(
          ancestors(spans, ask).some((s) => s.spanId === tool.spanId),
          `${ask.name}: asked within the tool call`,
        );
      }
    });

    await t.test("an undiagnosed failure's error log line carries the trace id of exported spans", async (t) => {
      const line = served.daemon.lines().find((l) => l.event === 'mcp.tool-failed' && l.tool === 'create_contact');
      t.match(line, { level: 50, traceId }, 'the error line names the trace id the caller was given');
      const trace = inTrace(spans, traceId);
      const tool = trace.find((s) => s.name === 'tools/call create_contact');
      t.ok(tool, 'the failed tool call was exported under that trace id');
      t.equal(tool?.status.code, StatusCodeNumber.error, 'and marked as an error');
      t.ok(
        trace.some((s) => s.name === 'POST /mcp'),
        'with its request span',
      );
    });

    // A clean stop flushes the rest and exits 0.
    t.match(await served.stop(), { code: 0 }, 'the daemon stopped cleanly with the exporter on');
  });
}
