/**
 * The DNS-rebinding guard on real listeners over loopback (issue 28, item
 * 6): requests sent by node:http with the `Host` a rebound page's browser
 * would send (the attacker's name, the port it chose) and with the ones
 * local clients send.
 *
 * - An unauthenticated MCP listener on 127.0.0.1: a foreign `Host` is an
 *   empty 403 on `/mcp`, `/readyz`, an attachment link, `/api/admin` and
 *   any other path, before anything else runs; `localhost`, `127.0.0.1`,
 *   `[::1]` (any port) and the public base address's host are served. No
 *   `Host` (HTTP/1.0) and an absolute-form target naming another host are
 *   refused too.
 * - `Origin` on `/mcp`: outside `Cors:AllowedOrigins` it is refused even with
 *   a local `Host`; under the default `*` the page's origin is allowed by
 *   CORS, and the `Host` check is what stops a rebound page.
 * - An MCP listener with API keys on loopback is guarded as well (403 before
 *   the 401); one reached at another address is not (host-guard.test.ts:
 *   no address but loopback can be used here).
 * - The administrative and health listeners: the same refusal; a probe
 *   naming an IP address (as kubelet's do) is served.
 *
 * The MCP listener's pools are stand-ins that fail if asked: nothing here
 * gets as far as a tool.
 */
import { randomUUID } from 'node:crypto';
import { request as httpRequest, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { validateConfig } from '../../config/load.ts';
import { createAdminListener } from '../../http/admin/admin-listener.ts';
import { defineRoute } from '../../http/admin/route.ts';
import { createAuthenticator } from '../../http/auth/authenticate.ts';
import { createHealthServer } from '../../http/health/health-server.ts';
import { hostGuardOf } from '../../http/host-guard.ts';
import { createMcpListener } from '../../http/mcp/mcp-listener.ts';
import { tempDir } from '../helpers/daemon.ts';
import { captureLog } from '../helpers/log-capture.ts';

t.setTimeout(60_000);

const EVIL = 'evil.example.com';
const READY = { ready: true, checks: { database: 'migrated', supervisor: 'healthy', givenUpActors: 0, listeners: 'open' } } as const;

type Answer = { status: number; body: string; cache: string | undefined };

/** One request to 127.0.0.1:port naming `host` (and `origin`) in its headers. */
function ask(port: number, options: { path: string; host: string; method?: string; origin?: string; body?: string }): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { host: options.host };
    if (options.origin !== undefined) headers.origin = options.origin;
    if (options.body !== undefined) {
      headers['content-type'] = 'application/json';
      headers.accept = 'application/json, text/event-stream';
    }
    const req = httpRequest({ host: '127.0.0.1', port, path: options.path, method: options.method ?? 'GET', headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, cache: res.headers['cache-control'] }));
    });
    req.setTimeout(10_000, () => req.destroy(new Error('no answer in 10 s')));
    req.on('error', reject);
    req.end(options.body);
  });
}

/** A raw request, for what node's client will not send (no Host at all). */
function askRaw(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    socket.setTimeout(10_000, () => socket.destroy(new Error('no answer in 10 s')));
    socket.on('data', (chunk) => (answer += chunk.toString('latin1')));
    socket.on('end', () => resolve(answer));
    socket.on('error', reject);
    socket.end(text);
  });
}

const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'host-guard-test', version: '1.0.0' } },
});

async function listen(t: Test, server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return (server.address() as AddressInfo).port;
}

function configOf(sections: Record<string, unknown>) {
  const validation = validateConfig({ ...sections, Storage: { Database: '/nonexistent/unused.db' } });
  if (!validation.ok) throw new Error(JSON.stringify(validation.problems));
  return validation.config;
}

async function startMcp(t: Test, mcp: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const logs = captureLog();
  const config = configOf({ McpEndpoint: { Enabled: true, BindAddress: '127.0.0.1', Port: 0, ...mcp }, ...extra });
  const unused = { id: 'pool (stand-in: not asked here)', ask: () => Promise.reject(new Error('not asked in this test')) };
  const server = createMcpListener({
    config,
    log: logs.log,
    version: 'test',
    readiness: () => READY,
    queryPool: unused,
    parsePool: unused,
    actor: () => unused,
    authenticate: createAuthenticator('mcp', config.McpEndpoint.Authentication, { log: logs.log, env: {}, claimJti: async () => true, keySets: {} as never }),
  });
  return { port: await listen(t, server), logs };
}

t.test('an unauthenticated MCP listener on loopback serves local names and refuses a rebound one', async (t) => {
  const { port, logs } = await startMcp(t, {}, { Deployment: { PublicBaseAddress: 'https://mail.example.org' } });
  const initialize = (host: string, origin?: string) =>
    ask(port, { path: '/mcp', method: 'POST', host, body: INITIALIZE, ...(origin === undefined ? {} : { origin }) });

  const rebound = await initialize(`${EVIL}:${port}`, `http://${EVIL}:${port}`);
  t.same(rebound, { status: 403, body: '', cache: 'no-store' }, 'the conformance scenario’s request: an empty 403');
  for (const path of ['/readyz', '/attachments/not-a-capability', '/api/admin/status', '/.well-known/oauth-protected-resource/mcp', '/nothing']) {
    t.equal((await ask(port, { path, host: `${EVIL}:${port}` })).status, 403, `${path}: 403 before any route`);
  }

  for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, 'localhost', 'mail.example.org', `MAIL.example.org:443`]) {
    const served = await initialize(host, `http://${host}`);
    t.equal(served.status, 200, `${host}: initialize served`);
    t.match(JSON.parse(served.body), { result: { protocolVersion: '2025-11-25', serverInfo: { name: String } } });
  }
  t.equal((await ask(port, { path: '/readyz', host: `localhost:${port}` })).status, 200, '/readyz with a local Host');
  t.equal((await ask(port, { path: '/attachments/not-a-capability', host: `127.0.0.1:${port}` })).status, 404, 'an attachment link reaches its route');
  t.equal((await ask(port, { path: '/api/admin/status', host: `localhost:${port}` })).status, 404, '/api/admin is still not served here');

  const noHost = await askRaw(port, 'GET /readyz HTTP/1.0\r\n\r\n');
  t.match(noHost, /^HTTP\/1\.1 403 /, 'no Host at all (HTTP/1.0)');
  const absolute = await askRaw(port, `GET http://${EVIL}/readyz HTTP/1.1\r\nHost: localhost:${port}\r\nConnection: close\r\n\r\n`);
  t.match(absolute, /^HTTP\/1\.1 403 /, 'an absolute-form target naming another host');

  t.match(logs.events('http.host-refused'), [{ section: 'McpEndpoint', refusals: 1 }], 'one line for the burst');
  t.notOk(logs.raw().includes('evil'), 'the refused Host is not logged');
});

t.test('Origin on /mcp: outside AllowedOrigins refused whatever the Host; under * the Host check stops a rebound page', async (t) => {
  const listed = await startMcp(t, { Cors: { AllowedOrigins: ['http://localhost:6274'] } });
  const initialize = (port: number, host: string, origin: string) => ask(port, { path: '/mcp', method: 'POST', host, origin, body: INITIALIZE });

  t.equal((await initialize(listed.port, `localhost:${listed.port}`, 'http://localhost:6274')).status, 200, 'a listed origin (the MCP Inspector’s)');
  t.same(await initialize(listed.port, `localhost:${listed.port}`, `http://${EVIL}`), { status: 403, body: '', cache: 'no-store' }, 'an origin not listed');
  t.equal(
    (await initialize(listed.port, `${EVIL}:${listed.port}`, 'http://localhost:6274')).status,
    403,
    'a listed origin does not make a foreign Host served',
  );

  const any = await startMcp(t, {});
  t.equal((await initialize(any.port, `localhost:${any.port}`, `http://${EVIL}`)).status, 200, '* serves every origin at a local Host (the operator’s choice)');
  t.equal((await initialize(any.port, `${EVIL}:${any.port}`, `http://${EVIL}:${any.port}`)).status, 403, 'a rebound page is refused by its Host');
});

t.test('an MCP listener with API keys on loopback is guarded too: 403 before the 401', async (t) => {
  const dir = tempDir(t);
  const key = `mc_${randomUUID().replaceAll('-', '')}`;
  writeFileSync(join(dir, 'agent.key'), key);
  const { port } = await startMcp(t, {
    Authentication: [{ ApiKey: { Name: 'agent', SecretReference: `file:${join(dir, 'agent.key')}`, Lifetime: 'NoLimit' } }],
  });
  t.equal((await ask(port, { path: '/mcp', method: 'POST', host: EVIL, body: INITIALIZE })).status, 403);
  t.equal(
    (await ask(port, { path: '/mcp', method: 'POST', host: `localhost:${port}`, body: INITIALIZE })).status,
    401,
    'a local Host reaches the credential check',
  );
});

t.test('the administrative listener refuses a rebound Host before the route', async (t) => {
  const logs = captureLog();
  const config = configOf({ AdminEndpoint: { Enabled: true, BindAddress: '127.0.0.1', Port: 0 } });
  const unused = { id: 'stand-in (not asked here)', ask: () => Promise.reject(new Error('not asked in this test')) };
  const hello = defineRoute({
    method: 'GET',
    path: '/api/admin/test/hello',
    permission: null,
    summary: 'Answers (test only).',
    handle: async () => ({ status: 200, json: { hello: true } }),
  });
  const server = createAdminListener({
    config,
    log: logs.log,
    version: 'test',
    actor: () => unused,
    queryPool: unused,
    cursorKey: Buffer.alloc(32, 7),
    authenticate: createAuthenticator('admin', [], { log: logs.log, env: {}, claimJti: async () => true, keySets: {} as never }),
    routes: [hello],
  });
  const port = await listen(t, server);
  t.same(await ask(port, { path: '/api/admin/test/hello', host: `${EVIL}:${port}` }), { status: 403, body: '', cache: 'no-store' });
  for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`]) {
    const served = await ask(port, { path: '/api/admin/test/hello', host });
    t.same({ status: served.status, body: served.body }, { status: 200, body: '{"hello":true}' }, `${host} served`);
  }
});

t.test('the health listener: a probe naming an IP address is served, a rebound name is not', async (t) => {
  const config = configOf({ Deployment: { PublicBaseAddress: 'https://mail.example.org' } });
  const port = await listen(
    t,
    createHealthServer(() => READY, hostGuardOf(config, 'HealthEndpoints')),
  );
  for (const host of ['10.42.0.17:8081', `127.0.0.1:${port}`, `localhost:${port}`, 'mail.example.org']) {
    t.equal((await ask(port, { path: '/livez', host })).status, 200, `/livez at ${host}`);
    t.equal((await ask(port, { path: '/readyz', host })).status, 200, `/readyz at ${host}`);
  }
  t.same(await ask(port, { path: '/readyz', host: `${EVIL}:${port}` }), { status: 403, body: '', cache: 'no-store' }, 'rebound /readyz');
  t.equal((await ask(port, { path: '/livez', host: EVIL })).status, 403, 'rebound /livez');
});
