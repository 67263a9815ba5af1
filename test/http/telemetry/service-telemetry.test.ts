/**
 * Issue 31: what the HTTP surfaces of a real service export, read back from
 * an OpenTelemetry SDK installed in this process (test/helpers/telemetry-sdk.ts)
 * while the service mirrors a private Dovecot holding one message with an
 * attachment. Asked through the SDK's MCP client and undici:
 *
 * - every answered request is one `http.server.request.duration` point
 *   labelled with its surface, method, route TEMPLATE and status, and one
 *   SERVER span `<METHOD> <template>`; a real capability and an outbox id
 *   sent in paths appear in no label, attribute or span name, and neither
 *   do the message's subject and addresses;
 * - a caller's `traceparent` is the request span's parent, and the tool
 *   call's span is the request span's child;
 * - `service.authorization.refusals` counts a refused tool call and a
 *   refused admin route exactly once each, with surface, target and
 *   permission; a listing that withholds tools counts nothing;
 * - `mcp.server.operation.duration` records tool calls by tool and outcome;
 * - the rate limiters' metrics record (looked up at use, not at import).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { SpanKind } from '@opentelemetry/api';
import t, { type Test } from 'tap';
import { request } from 'undici';
// Loaded before the SDK is installed, as a service that starts telemetry late would have them: an
// instrument any of them made at import would come from the API's no-op meter and record nothing.
import '../../../http/admin/admin-listener.ts';
import '../../../http/auth/principal.ts';
import '../../../http/limits/rate-limiter.ts';
import '../../../http/mcp/mcp-listener.ts';
import { newKeyRing } from '../../../runtime/keyring/keyring.ts';
import { startDovecot } from '../../harness/dovecot.ts';
import { appendMessages } from '../../harness/place-mail.ts';
import { tempDir } from '../../helpers/daemon.ts';
import { until } from '../../helpers/log-capture.ts';
import { reservePort } from '../../helpers/ports.ts';
import { startSyncService } from '../../helpers/sync-service.ts';
import { type HistogramValue, installTelemetrySdk, type TelemetrySdk } from '../../helpers/telemetry-sdk.ts';

t.setTimeout(240_000);

const tag = randomUUID().slice(0, 8);
const SUBJECT = `Quarterly numbers ${tag}`;
const SENDER = `dana.${tag}@example.org`;
const KEY_AGENT = `mc_${randomUUID().replaceAll('-', '')}`;
const KEY_READ_ONLY_AGENT = `mc_${randomUUID().replaceAll('-', '')}`;
const KEY_OPERATOR = `mc_${randomUUID().replaceAll('-', '')}`;
const KEY_READER = `mc_${randomUUID().replaceAll('-', '')}`;
/** An outbox id sent in a path: it must be named nowhere but by the template. */
const OUTBOX_ID = `o${randomBytes(6).toString('hex')}`;

type Json = Record<string, any>;

function messageWithAttachment(): string {
  const boundary = `b-${randomUUID()}`;
  return [
    `From: Dana <${SENDER}>`,
    'To: Pat <pat@example.org>',
    `Subject: ${SUBJECT}`,
    `Message-ID: <${randomUUID()}@example.org>`,
    'Date: Mon, 02 Jun 2025 10:00:00 +0000',
    'MIME-Version: 1.0',
    `Content-Type: multipart/mixed; boundary="${boundary}"`,
    '',
    `--${boundary}`,
    'Content-Type: text/plain; charset=utf-8',
    '',
    'See the attachment.',
    `--${boundary}`,
    'Content-Type: application/pdf; name="report.pdf"',
    'Content-Disposition: attachment; filename="report.pdf"',
    'Content-Transfer-Encoding: base64',
    '',
    Buffer.from('%PDF-1.4 a report '.repeat(40)).toString('base64'),
    `--${boundary}--`,
    '',
  ].join('\r\n');
}

type Setup = { sdk: TelemetrySdk; mcp: string; admin: string; health: string };

async function setup(t: Test): Promise<Setup> {
  // Installed before the service starts, as the composition root would: what the listeners look up at use records here.
  const sdk = installTelemetrySdk(t);
  const dir = tempDir(t);
  const dovecot = await startDovecot({ users: [{ user: 'pat', password: 'pw-pat' }] });
  t.teardown(() => dovecot.stop());
  await appendMessages(dovecot, 'pat', 'INBOX', [{ raw: messageWithAttachment() }]);
  const secret = (name: string, value: string): string => {
    writeFileSync(join(dir, name), value, { mode: 0o600 });
    return `file:${join(dir, name)}`;
  };
  const keyRingFile = join(dir, 'keyring.json');
  writeFileSync(keyRingFile, newKeyRing(), { mode: 0o600 });
  const mcpPort = await reservePort();
  const sync = await startSyncService(dir, dovecot, [{ id: 'pat', user: 'pat', folders: [{ Alias: 'inbox' }] }], {
    McpEndpoint: {
      Enabled: true,
      BindAddress: '127.0.0.1',
      Port: mcpPort,
      Authentication: [
        { ApiKey: { Name: 'agent', SecretReference: secret('agent.key', KEY_AGENT), Lifetime: 'NoLimit' } },
        {
          ApiKey: { Name: 'read-only-agent', SecretReference: secret('read-only.key', KEY_READ_ONLY_AGENT), Lifetime: 'NoLimit' },
          Permissions: ['service.mail.read'],
        },
      ],
    },
    AdminEndpoint: {
      Enabled: true,
      BindAddress: '127.0.0.1',
      Port: 0,
      Authentication: [
        { ApiKey: { Name: 'operator', SecretReference: secret('operator.key', KEY_OPERATOR), Lifetime: 'NoLimit' } },
        { ApiKey: { Name: 'reader', SecretReference: secret('reader.key', KEY_READER), Lifetime: 'NoLimit' }, Permissions: ['service.admin.read'] },
      ],
    },
    Deployment: { PublicBaseAddress: `http://127.0.0.1:${mcpPort}` },
    DataEncryption: { KeyRing: `file:${keyRingFile}` },
    MailSynchronization: { Enabled: true, Interval: '01:00:00' },
  });
  t.teardown(() => sync.service.stop());
  await sync.syncNow('pat', 60_000);
  return {
    sdk,
    mcp: `http://127.0.0.1:${mcpPort}`,
    admin: `http://127.0.0.1:${sync.service.admin!.port}`,
    health: `http://127.0.0.1:${sync.service.health!.port}`,
  };
}

async function mcpClient(t: Test, base: string, key: string): Promise<Client> {
  const client = new Client({ name: 'telemetry-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  t.teardown(() => client.close());
  return client;
}

async function status(url: string, headers: Record<string, string> = {}, method: 'GET' | 'POST' = 'GET'): Promise<number> {
  const res = await request(url, { method, headers });
  await res.body.dump();
  return res.statusCode;
}

const DURATION = 'http.server.request.duration';
const REFUSALS = 'service.authorization.refusals';

t.test('templates only, a span per request with the caller as parent, refusals counted once', async (t) => {
  const { sdk, mcp, admin, health } = await setup(t);
  const agent = await mcpClient(t, mcp, KEY_AGENT);

  // A real capability, from the tool that issues links.
  const page = (await agent.callTool({ name: 'list_emails', arguments: { accounts: ['pat'], hasAttachments: true, pageSize: 5 } })) as CallToolResult;
  const ids = (page.structuredContent as Json).emails.map((e: Json) => e.storedEmailId);
  const content = (await agent.callTool({ name: 'get_email_content', arguments: { storedEmailIds: ids } })) as CallToolResult;
  const link = String((content.structuredContent as Json).emails[0].attachments[0].downloadUrl);
  const capability = link.split('/attachments/')[1]!;
  t.ok(capability.length > 20, 'a capability was issued');
  // Two searches with no embedding model serving: the first places its query inside the trace, the second outside it.
  for (let i = 0; i < 2; i++) await agent.callTool({ name: 'search_emails', arguments: { queryText: 'anything', resultLimit: 5 } });
  t.equal(await status(link), 200, 'the attachment downloads');
  t.equal(await status(`${mcp}/attachments/${capability.slice(0, -2)}xx`), 404, 'a forged capability is 404');

  // A caller's trace: the request span is its child, the tool call the request span's.
  const callerTrace = randomBytes(16).toString('hex');
  const callerSpan = randomBytes(8).toString('hex');
  const traced = await request(`${mcp}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${KEY_AGENT}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      traceparent: `00-${callerTrace}-${callerSpan}-01`,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'list_accounts', arguments: {} } }),
  });
  t.equal(traced.statusCode, 200);
  await traced.body.dump();

  // Refusals: a listing that withholds tools counts nothing; the withheld tool called, once.
  const readOnly = await mcpClient(t, mcp, KEY_READ_ONLY_AGENT);
  const listed = await readOnly.listTools();
  t.notOk(
    listed.tools.some((tool) => tool.name === 'set_mail_flags'),
    'the read-only grant does not list set_mail_flags',
  );
  t.same(await sdk.pointsOf(REFUSALS), [], 'a listing that withholds tools is no refusal');
  await t.rejects(readOnly.callTool({ name: 'set_mail_flags', arguments: {} }), { code: -32602 }, 'the withheld tool reads as unknown');

  // The admin surface: a route refused by its filter, the same template answered to the operator.
  const outbox = `${admin}/api/admin/outbox/${OUTBOX_ID}`;
  t.equal(await status(outbox, { authorization: `Bearer ${KEY_READER}` }), 403, 'the reader lacks service.admin.audit.read');
  t.equal(await status(outbox, { authorization: `Bearer ${KEY_OPERATOR}` }), 404, 'no such send');
  t.equal(await status(`${admin}/api/admin/no-such-route/${OUTBOX_ID}`, { authorization: `Bearer ${KEY_OPERATOR}` }), 404);
  t.equal(await status(`${mcp}/elsewhere/${OUTBOX_ID}`), 404, 'an unrouted path');
  t.equal(await status(`${health}/readyz`), 200);
  t.equal(await status(`${health}/livez?probe=${OUTBOX_ID}`), 200);

  // Spans end when the response finishes, a moment after the client has read it.
  await until(() => sdk.spans().some((s) => s.name === 'GET /livez'), 10_000, 'the last request span');

  t.test('service.authorization.refusals: once per refusal, with its labels', async (t) => {
    const refusals = await sdk.pointsOf(REFUSALS);
    t.same(
      refusals.map((p) => [p.attributes, p.value]).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
      [
        [{ surface: 'admin', target: 'GET /api/admin/outbox/{id}', permission: 'service.admin.audit.read' }, 1],
        [{ surface: 'mcp', target: 'set_mail_flags', permission: 'service.mail.flags.write' }, 1],
      ],
    );
  });

  t.test('http.server.request.duration: surface, method, template and status', async (t) => {
    const points = await sdk.pointsOf(DURATION);
    const count = (labels: Record<string, unknown>): number =>
      points.filter((p) => Object.entries(labels).every(([k, v]) => p.attributes[k] === v)).reduce((sum, p) => sum + (p.value as HistogramValue).count, 0);
    const mcpPost = { 'mailcairn.surface': 'mcp', 'http.request.method': 'POST', 'http.route': '/mcp' };
    t.ok(count({ ...mcpPost, 'http.response.status_code': 200 }) >= 6, 'the MCP exchanges, by template');
    t.equal(count({ 'mailcairn.surface': 'mcp', 'http.route': '/attachments/{capability}', 'http.response.status_code': 200 }), 1, 'the download');
    t.equal(count({ 'mailcairn.surface': 'mcp', 'http.route': '/attachments/{capability}', 'http.response.status_code': 404 }), 1, 'the forged link');
    const outbox = { 'mailcairn.surface': 'admin', 'http.request.method': 'GET', 'http.route': '/api/admin/outbox/{id}' };
    t.equal(count({ ...outbox, 'http.response.status_code': 403 }), 1);
    t.equal(count({ ...outbox, 'http.response.status_code': 404 }), 1);
    t.equal(count({ 'mailcairn.surface': 'health', 'http.route': '/readyz', 'http.response.status_code': 200 }), 1);
    t.equal(count({ 'mailcairn.surface': 'health', 'http.route': '/livez', 'http.response.status_code': 200 }), 1);
    const unrouted = points.filter((p) => p.attributes['http.route'] === undefined);
    t.same(
      unrouted.map((p) => [p.attributes['mailcairn.surface'], p.attributes['http.response.status_code']]).sort(),
      [
        ['admin', 404],
        ['mcp', 404],
      ],
      'a path no route matches has no http.route',
    );
    for (const point of points) {
      t.same(
        Object.keys(point.attributes).filter((k) => !['mailcairn.surface', 'http.request.method', 'http.route', 'http.response.status_code'].includes(k)),
        [],
        'only the catalogue labels',
      );
    }
    const routes = new Set(points.map((p) => p.attributes['http.route']).filter((r) => r !== undefined));
    t.same([...routes].sort(), ['/api/admin/outbox/{id}', '/attachments/{capability}', '/livez', '/mcp', '/readyz']);
  });

  t.test('spans: a SERVER span per request, named by its template; the caller its parent', async (t) => {
    const spans = sdk.spans();
    // The exchanges' spans: a pool ask's `handle <pool>` is a SERVER span too, recorded on this thread (runtime/pool/handled.ts).
    const server = spans.filter((s) => s.kind === SpanKind.SERVER && !s.name.startsWith('handle '));
    const names = new Set(server.map((s) => s.name));
    // `GET /mcp`: the SDK's client asks for a stream of server messages, answered 405 (the transport is stateless).
    t.same([...names].sort(), ['GET', 'GET /api/admin/outbox/{id}', 'GET /attachments/{capability}', 'GET /livez', 'GET /mcp', 'GET /readyz', 'POST /mcp']);
    const download = server.find((s) => s.name === 'GET /attachments/{capability}' && s.attributes['http.response.status_code'] === 200);
    t.match(download?.attributes, {
      'http.request.method': 'GET',
      'http.route': '/attachments/{capability}',
      'http.response.status_code': 200,
      'url.scheme': 'http',
    });
    for (const span of server) {
      t.same(
        Object.keys(span.attributes).filter((k) => !['http.request.method', 'http.route', 'http.response.status_code', 'url.scheme'].includes(k)),
        [],
        `${span.name}: no url.path, url.full, query or header`,
      );
    }

    const request = server.find((s) => s.spanContext().traceId === callerTrace);
    t.ok(request, "the request span continues the caller's trace");
    t.equal(request?.parentSpanContext?.spanId, callerSpan, "the caller's span is its parent");
    const call = spans.find((s) => s.name === 'tools/call list_accounts' && s.spanContext().traceId === callerTrace);
    t.equal(call?.kind, SpanKind.INTERNAL);
    t.equal(call?.parentSpanContext?.spanId, request?.spanContext().spanId, "the tool call is the request span's child");
    t.match(call?.attributes, { 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': 'list_accounts', 'mailcairn.outcome': 'ok' });
    // Made after the MCP SDK's awaits: only the context the tool call hands its tool context can parent it (sync-context.ts).
    const listing = spans.find((s) => s.name === 'tools/call list_emails');
    const asked = spans.filter((s) => s.name === 'ask mail-query' && s.parentSpanContext?.spanId === listing?.spanContext().spanId);
    t.ok(asked.length >= 1, "the tool's ask of the query pool is a child of its tool call");
    t.ok(
      asked.every((s) => s.spanContext().traceId === listing?.spanContext().traceId),
      'in the same trace',
    );

    // docs/operations.md "Traces": probes and placements that find nothing serving open no spans.
    t.notOk(
      spans.some((s) => s.name === 'ask answering' || s.name === 'handle answering'),
      "the listing's availability probe is asked outside the trace",
    );
    const searches = spans.filter((s) => s.name === 'tools/call search_emails');
    t.equal(searches.length, 2);
    const placed = searches.map((call) => spans.filter((s) => s.name === 'ask embedding' && s.parentSpanContext?.spanId === call.spanContext().spanId).length);
    t.same(placed, [1, 0], 'the first search places its query inside the trace; after an inactive answer, the next outside it');

    const refused = spans.find((s) => s.name === 'tools/call set_mail_flags');
    t.match(refused?.attributes, { 'mailcairn.outcome': 'refused', 'error.type': '-32602' });
  });

  t.test('mcp.server.operation.duration: by tool and outcome', async (t) => {
    const calls = await sdk.pointsOf('mcp.server.operation.duration');
    const of = (tool: string, outcome: string) =>
      calls.find((p) => p.attributes['gen_ai.tool.name'] === tool && p.attributes['mailcairn.outcome'] === outcome)?.value as HistogramValue | undefined;
    t.equal(of('list_accounts', 'ok')?.count, 1);
    t.equal(of('list_emails', 'ok')?.count, 1);
    t.equal(of('get_email_content', 'ok')?.count, 1);
    t.same(calls.find((p) => p.attributes['gen_ai.tool.name'] === 'set_mail_flags')?.attributes, {
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 'set_mail_flags',
      'mailcairn.outcome': 'refused',
      'error.type': '-32602',
    });
  });

  t.test('the rate limiters record through the installed SDK too', async (t) => {
    const acquired = await sdk.pointsOf('service.rate_limiting.requests', { result: 'acquired' });
    t.same(acquired.map((p) => p.attributes.policy).sort(), ['Service:Admin:RateLimiting', 'Service:Mcp:RateLimiting']);
    t.ok(acquired.every((p) => (p.value as number) > 0));
  });

  t.test('no capability, id, subject or address in any label, attribute or span name', async (t) => {
    const exported = await sdk.exportedText();
    t.ok(exported.length > 0);
    for (const [what, value] of [
      ['the capability', capability],
      ['a prefix of the capability', capability.slice(0, 16)],
      ['the outbox id', OUTBOX_ID],
      ['the subject', tag],
      ['the sender', SENDER],
      ['a query string', 'probe='],
      ['a credential', KEY_READER.slice(3, 19)],
    ] as const) {
      t.notOk(exported.includes(value), `${what} is exported nowhere`);
    }
  });
});
