/**
 * What each listener's exchanges export (http/pipeline/exchange-telemetry.ts),
 * read back from an in-process SDK (test/helpers/telemetry-sdk.ts), over real
 * listeners on loopback: the pipeline's (clear text, and TLS with HTTP/1.1 and
 * HTTP/2), the health listener, the MCP and administrative listeners.
 *
 * - the span and the point name the route's template; a method outside the
 *   known set is `_OTHER`; an unmatched path has no `http.route`;
 * - a caller's `traceparent` is the span's parent and a span the handler
 *   starts is its child;
 * - an undiagnosed failure's log line carries the trace id of the exported
 *   span (the pipeline's empty 500, the admin route's 500, the attachment
 *   route's, the MCP tool's 54001, whose answer names the same id);
 * - the administrative use case's refusal counts once.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect as connectHttp2 } from 'node:http2';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import t, { type Test } from 'tap';
import { Agent, request } from 'undici';
import { validateConfig } from '../../../config/load.ts';
import type { Config } from '../../../config/schema.ts';
import { createAdminListener } from '../../../http/admin/admin-listener.ts';
import { defineRoute } from '../../../http/admin/route.ts';
import { serveAttachment } from '../../../http/attachments/attachment-route.ts';
import type { Authenticate } from '../../../http/auth/authenticate.ts';
import { createHealthServer } from '../../../http/health/health-server.ts';
import { close, listen } from '../../../http/listen.ts';
import { createMcpListener } from '../../../http/mcp/mcp-listener.ts';
import { answerEmpty, createListener, type Handler, surfaceHandler } from '../../../http/pipeline.ts';
import { createTlsServer } from '../../../http/tls/secure-server.ts';
import { AppError } from '../../../runtime/errors.ts';
import { newKeyRing } from '../../../runtime/keyring/keyring.ts';
import { inSpan } from '../../../runtime/telemetry/tracing.ts';
import { chainOf, createCa, issue } from '../../harness/test-ca.ts';
import { tempDir } from '../../helpers/daemon.ts';
import { captureLog, until } from '../../helpers/log-capture.ts';
import { type HistogramValue, installTelemetrySdk, type TelemetrySdk } from '../../helpers/telemetry-sdk.ts';

t.setTimeout(60_000);

const DURATION = 'http.server.request.duration';

async function open(t: Test, server: Server): Promise<string> {
  const address = await listen(server, 'Test', '127.0.0.1', 0);
  t.teardown(() => close(server));
  return `http://127.0.0.1:${address.port}`;
}

async function ask(url: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<{ status: number; body: string }> {
  const res = await request(url, { method: (options.method ?? 'GET') as 'GET', headers: options.headers ?? {}, body: options.body });
  return { status: res.statusCode, body: await res.body.text() };
}

/** The spans ended so far, once `count` SERVER spans have (a span ends when the response finishes, just after the client read it). */
async function serverSpans(sdk: TelemetrySdk, count: number) {
  await until(() => sdk.spans().filter((s) => s.kind === SpanKind.SERVER).length >= count, 5_000, `${count} server spans`);
  return sdk.spans().filter((s) => s.kind === SpanKind.SERVER);
}

/**
 * The pipeline with one templated route whose handler starts a span of its
 * own after an await (so only the context the pipeline hands it can parent
 * it: the active one does not follow awaits), one that answers nothing but a throw.
 */
function pipelineListener(failures: Array<{ route: string | null; traceId: string | undefined }>): Server {
  const things: Handler = async (_req, res, trace) => {
    await new Promise((resolve) => setImmediate(resolve));
    await inSpan('child work', { parent: trace }, async () => {});
    res.end('ok');
  };
  const broken: Handler = async () => {
    throw new Error('broken handler');
  };
  return createListener({
    surface: 'admin',
    route: (_req, _res, path) =>
      /^\/things\/[^/]+$/.test(path) ? { template: '/things/{id}', handler: things } : path === '/broken' ? { template: '/broken', handler: broken } : null,
    failed: (_err, failure) => failures.push(failure),
  });
}

t.test('the pipeline: template, method, status; the caller as parent and the handler inside the span', async (t) => {
  const sdk = installTelemetrySdk(t);
  const failures: Array<{ route: string | null; traceId: string | undefined }> = [];
  const base = await open(t, pipelineListener(failures));
  const trace = randomBytes(16).toString('hex');
  const parent = randomBytes(8).toString('hex');

  t.equal((await ask(`${base}/things/secret-42?q=secret-query`, { headers: { traceparent: `00-${trace}-${parent}-01` } })).status, 200);
  t.equal((await ask(`${base}/things/secret-43`, { method: 'PROPFIND' })).status, 200);
  t.equal((await ask(`${base}/secret-44/elsewhere`)).status, 404);
  t.equal((await ask(`${base}/broken`, { method: 'POST', body: 'x' })).status, 500);

  const spans = await serverSpans(sdk, 4);
  t.same(spans.map((s) => s.name).sort(), ['GET', 'GET /things/{id}', 'HTTP /things/{id}', 'POST /broken']);
  const traced = spans.find((s) => s.name === 'GET /things/{id}')!;
  t.same(traced.attributes, { 'http.request.method': 'GET', 'url.scheme': 'http', 'http.route': '/things/{id}', 'http.response.status_code': 200 });
  t.equal(traced.spanContext().traceId, trace, "the caller's trace");
  t.equal(traced.parentSpanContext?.spanId, parent, "the caller's span is the parent");
  const child = sdk.spans().find((s) => s.name === 'child work' && s.spanContext().traceId === trace);
  t.equal(child?.parentSpanContext?.spanId, traced.spanContext().spanId, "the handler's span is the request span's child");
  t.same(spans.find((s) => s.name === 'GET')?.attributes, { 'http.request.method': 'GET', 'url.scheme': 'http', 'http.response.status_code': 404 }, 'no route');
  t.equal(spans.find((s) => s.name === 'HTTP /things/{id}')?.attributes['http.request.method'], '_OTHER');
  t.equal(traced.status.code, SpanStatusCode.UNSET, 'a success is not an error');

  const broken = spans.find((s) => s.name === 'POST /broken')!;
  t.equal(broken.status.code, SpanStatusCode.ERROR);
  t.equal(broken.attributes['error.type'], 'Error', "the failure's class, never its message");
  t.same(failures, [{ route: '/broken', traceId: broken.spanContext().traceId }], 'the failure is logged with the span’s trace id and the template');

  const byText = (a: unknown, b: unknown): number => JSON.stringify(a).localeCompare(JSON.stringify(b));
  const points = await sdk.pointsOf(DURATION);
  t.same(
    points.map((p) => [p.attributes, (p.value as HistogramValue).count]).sort(byText),
    [
      [{ 'mailcairn.surface': 'admin', 'http.request.method': 'GET', 'http.response.status_code': 404 }, 1],
      [{ 'mailcairn.surface': 'admin', 'http.request.method': 'GET', 'http.route': '/things/{id}', 'http.response.status_code': 200 }, 1],
      [{ 'mailcairn.surface': 'admin', 'http.request.method': 'POST', 'http.route': '/broken', 'http.response.status_code': 500 }, 1],
      [{ 'mailcairn.surface': 'admin', 'http.request.method': '_OTHER', 'http.route': '/things/{id}', 'http.response.status_code': 200 }, 1],
    ].sort(byText),
  );
  t.notMatch(await sdk.exportedText(), /secret-/, 'no path segment, query or value exported');
});

t.test('with no SDK installed the pipeline answers as before and nothing is recorded anywhere', async (t) => {
  const failures: Array<{ route: string | null; traceId: string | undefined }> = [];
  const base = await open(t, pipelineListener(failures));
  t.equal((await ask(`${base}/things/1`)).status, 200);
  t.equal((await ask(`${base}/broken`)).status, 500);
  t.same(failures, [{ route: '/broken', traceId: undefined }], 'no trace id when nothing is traced');
});

t.test('the health listener: its two templates, and no route for anything else', async (t) => {
  const sdk = installTelemetrySdk(t);
  let ready = false;
  const base = await open(
    t,
    createHealthServer(() => ({ ready, checks: { database: 'migrated', supervisor: 'healthy', givenUpActors: 0, listeners: ready ? 'open' : 'opening' } })),
  );
  t.equal((await ask(`${base}/livez`)).status, 200);
  t.equal((await ask(`${base}/readyz`)).status, 503);
  ready = true;
  t.equal((await ask(`${base}/readyz`)).status, 200);
  t.equal((await ask(`${base}/livez`, { method: 'POST' })).status, 405);
  t.equal((await ask(`${base}/metrics`)).status, 404);
  await serverSpans(sdk, 5);
  const points = await sdk.pointsOf(DURATION, { 'mailcairn.surface': 'health' });
  const labels = points
    .map((p) => `${p.attributes['http.request.method']} ${p.attributes['http.route'] ?? '-'} ${p.attributes['http.response.status_code']}`)
    .sort();
  t.same(labels, ['GET - 404', 'GET /livez 200', 'GET /readyz 200', 'GET /readyz 503', 'POST /livez 405']);
});

t.test('a TLS listener: HTTP/1.1 and HTTP/2 exchanges measured alike, with url.scheme https', async (t) => {
  const sdk = installTelemetrySdk(t);
  const dir = mkdtempSync(join(tmpdir(), 'exchange-telemetry-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const root = createCa(dir, 'Root');
  const leaf = issue(root, { name: 'leaf', dns: ['one.example.test'], eku: ['serverAuth'], keyUsage: ['digitalSignature'] });
  const handler: Handler = async (_req, res) => answerEmpty(res, 204);
  const server = createTlsServer(
    surfaceHandler({
      surface: 'mcp',
      route: (_req, _res, path) => (path.startsWith('/attachments/') ? { template: '/attachments/{capability}', handler } : null),
      failed: (err) => {
        throw err;
      },
    }),
    {
      profiles: [{ domain: 'one.example.test', key: leaf.key, chain: chainOf(leaf, root), minVersion: 'TLSv1.2' }],
      protocols: ['Http1', 'Http2'],
      requestClientCertificate: false,
    },
  );
  const address = (await listen(server, 'McpEndpoint:Https:Endpoints:0', '127.0.0.1', 0)) as AddressInfo;
  t.teardown(() => close(server));
  const tls = { ca: root.cert, servername: 'one.example.test' };

  // HTTP/1.1 (undici, no ALPN h2).
  const dispatcher = new Agent({ connect: tls });
  t.teardown(() => dispatcher.close());
  const h1 = await request(`https://127.0.0.1:${address.port}/attachments/cap-secret-1`, { dispatcher, headers: { host: 'one.example.test' } });
  await h1.body.dump();
  t.equal(h1.statusCode, 204);

  // HTTP/2 (node:http2).
  const session = connectHttp2(`https://127.0.0.1:${address.port}`, tls);
  t.teardown(() => session.close());
  const status = await new Promise<number>((resolve, reject) => {
    const stream = session.request({ ':path': '/attachments/cap-secret-2', ':authority': 'one.example.test' });
    stream.on('response', (headers) => resolve(Number(headers[':status'])));
    stream.on('error', reject);
    stream.resume();
  });
  t.equal(status, 204);

  const spans = await serverSpans(sdk, 2);
  for (const span of spans) {
    t.same(span.attributes, {
      'http.request.method': 'GET',
      'url.scheme': 'https',
      'http.route': '/attachments/{capability}',
      'http.response.status_code': 204,
    });
  }
  const [point] = await sdk.pointsOf(DURATION, { 'http.route': '/attachments/{capability}' });
  t.equal((point?.value as HistogramValue | undefined)?.count, 2, 'both exchanges, one label set');
  t.notMatch(await sdk.exportedText(), /cap-secret/);
});

function configOf(t: Test, sections: Record<string, unknown>): Config {
  const dir = tempDir(t);
  const ringFile = join(dir, 'keyring.json');
  writeFileSync(ringFile, newKeyRing(), { mode: 0o600 });
  const validation = validateConfig({
    ...sections,
    Deployment: { PublicBaseAddress: 'http://127.0.0.1:1' },
    DataEncryption: { KeyRing: `file:${ringFile}` },
    Storage: { Database: join(dir, 'unused.db') },
  });
  if (!validation.ok) throw new Error(JSON.stringify(validation.problems));
  return validation.config;
}

const admittedAs =
  (permissions: string[]): Authenticate =>
  async () => ({ kind: 'admitted', principal: { kind: 'caller', identity: 'caller', permissions: new Set(permissions) }, partition: { kind: 'other' } });

/** Stands for the query pool and actors: every ask throws what a defect would. */
const failing = {
  id: 'stand-in (throws)',
  ask: async () => {
    throw new Error('defect');
  },
};

t.test("the administrative listener: the use case's refusal counts once; a failure's log line carries the span's trace id", async (t) => {
  const sdk = installTelemetrySdk(t);
  const logs = captureLog();
  const routes = [
    // Published with no permission, so the filter lets it through and the use case refuses.
    defineRoute({
      method: 'GET',
      path: '/api/admin/widgets/{id}',
      permission: null,
      summary: 'A route whose use case refuses.',
      handle: async () => {
        throw new AppError('E_APP_REFUSED', { details: { permission: 'service.admin.operate' } });
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/api/admin/failing',
      permission: null,
      summary: 'A route whose use case fails undiagnosed.',
      bodyOptional: true,
      handle: async () => {
        throw new AppError('E_INTERNAL');
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/api/admin/defect',
      permission: null,
      summary: 'A route with a defect.',
      bodyOptional: true,
      handle: async () => {
        throw new Error('defect');
      },
    }),
  ];
  const base = await open(
    t,
    createAdminListener({
      config: configOf(t, { AdminEndpoint: { Enabled: true, BindAddress: '127.0.0.1', Port: 0 } }),
      log: logs.log,
      version: 'test',
      actor: () => failing,
      queryPool: failing,
      cursorKey: randomBytes(32),
      authenticate: admittedAs(['service.admin.read']),
      routes,
    }),
  );
  t.equal((await ask(`${base}/api/admin/widgets/w-secret-1`)).status, 403);
  t.equal((await ask(`${base}/api/admin/failing`, { method: 'POST' })).status, 500);
  t.equal((await ask(`${base}/api/admin/defect`, { method: 'POST' })).status, 500);
  const spans = await serverSpans(sdk, 3);

  t.same(
    (await sdk.pointsOf('service.authorization.refusals')).map((p) => [p.attributes, p.value]),
    [[{ surface: 'admin', target: 'GET /api/admin/widgets/{id}', permission: 'service.admin.operate' }, 1]],
    "the use case's refusal, once",
  );
  t.equal(logs.events('auth.refused').length, 1);

  const failing500 = spans.find((s) => s.name === 'POST /api/admin/failing')!;
  const defect = spans.find((s) => s.name === 'POST /api/admin/defect')!;
  t.same(
    logs.events('http.failed').map((l) => [l.route, l.traceId]),
    [
      ['/api/admin/failing', failing500.spanContext().traceId],
      ['/api/admin/defect', defect.spanContext().traceId],
    ],
    "each undiagnosed failure's line carries its span's trace id",
  );
  t.notMatch(await sdk.exportedText(), /w-secret/);
});

t.test("the MCP listener: a tool's undiagnosed failure answers, logs and exports one trace id", async (t) => {
  const sdk = installTelemetrySdk(t);
  const logs = captureLog();
  const base = await open(
    t,
    createMcpListener({
      config: configOf(t, { McpEndpoint: { Enabled: true, BindAddress: '127.0.0.1', Port: 0 } }),
      log: logs.log,
      version: 'test',
      readiness: () => ({ ready: true, checks: { database: 'migrated', supervisor: 'healthy', givenUpActors: 0, listeners: 'open' } }),
      queryPool: failing,
      parsePool: failing,
      actor: () => failing,
      authenticate: admittedAs(['service.mail.read']),
    }),
  );
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  const call = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'list_accounts', arguments: {} } };
  const answered = await ask(`${base}/mcp`, { method: 'POST', headers, body: JSON.stringify(call) });
  t.equal(answered.status, 200);
  const result = JSON.parse(answered.body).result.structuredContent as { code: number; traceId: string };
  t.equal(result.code, 54001);

  const [request] = await serverSpans(sdk, 1);
  const traceId = request!.spanContext().traceId;
  t.equal(result.traceId, traceId, 'the answer names the exported trace');
  t.match(logs.events('mcp.tool-failed'), [{ tool: 'list_accounts', traceId }], 'the log line names it too');
  const toolSpan = sdk.spans().find((s) => s.name === 'tools/call list_accounts');
  t.equal(toolSpan?.parentSpanContext?.spanId, request!.spanContext().spanId);
  t.match(toolSpan?.attributes, { 'mailcairn.outcome': 'failed', 'error.type': '54001' });
  t.equal(toolSpan?.status.code, SpanStatusCode.ERROR);
  t.same(
    (await sdk.pointsOf('mcp.server.operation.duration')).map((p) => p.attributes),
    [{ 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': 'list_accounts', 'mailcairn.outcome': 'failed', 'error.type': '54001' }],
  );
});

t.test("the attachment route: a failed read's log line carries the request span's trace id", async (t) => {
  const sdk = installTelemetrySdk(t);
  const logs = captureLog();
  const base = await open(
    t,
    createListener({
      surface: 'mcp',
      route: (req, res, path) =>
        path.startsWith('/attachments/')
          ? {
              template: '/attachments/{capability}',
              handler: (_req, _res, trace) =>
                serveAttachment(req, res, {
                  log: logs.log,
                  trace,
                  keyRing: () => {
                    throw new Error('key ring unreadable');
                  },
                  fetch: async () => null,
                }),
            }
          : null,
      failed: () => {},
    }),
  );
  t.equal((await ask(`${base}/attachments/cap-secret-9`)).status, 500);
  const [span] = await serverSpans(sdk, 1);
  t.equal(span?.name, 'GET /attachments/{capability}');
  t.match(logs.events('attachment.failed'), [{ route: '/attachments/{capability}', traceId: span!.spanContext().traceId }]);
  t.notMatch(logs.raw() + (await sdk.exportedText()), /cap-secret/);
});
