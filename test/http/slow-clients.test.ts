/**
 * Slow and abusive clients against a service started for real, with small
 * `Connections` bounds (docs/security.md "Connection limits"): slow headers
 * (slowloris) and slow bodies get 408 and lose their connection once
 * `HeadersTimeout`/`ReceiveTimeout` pass; hundreds of idle connections are
 * closed the same way; connections past `MaxConnections` are closed as they
 * are accepted; pipelined requests are answered in order. Throughout each
 * abuse a well-behaved client gets `/readyz` 200 and an MCP `tools/list`
 * through the SDK's client, and nothing is logged as a failure.
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import t, { type Test } from 'tap';
import { request } from 'undici';
import { startService, type Service } from '../../service/app.ts';
import { tempDir, writeConfig } from '../helpers/daemon.ts';
import { defectLines } from '../helpers/fuzz-tally.ts';
import { captureLog } from '../helpers/log-capture.ts';
import { collect, openSocket, parseResponses, type RawExchange } from '../helpers/raw-http.ts';

t.setTimeout(110_000);

const KEY = `mc_${randomUUID().replaceAll('-', '')}`;
const HEADERS_TIMEOUT_MS = 2_000;
const RECEIVE_TIMEOUT_MS = 3_000;
/** The bounds are looked at once a second (http/listen.ts), and a loaded machine adds its own delay. */
const SLACK_MS = 6_000;
const ADMIN_CAP = 20;

type Served = { service: Service; mcpPort: number; adminPort: number; healthPort: number; logs: ReturnType<typeof captureLog> };

async function serve(t: Test): Promise<Served> {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'agent.key'), KEY);
  const connections = { HeadersTimeout: '00:00:02', ReceiveTimeout: '00:00:03', IdleTimeout: '00:00:02' };
  const auth = [{ ApiKey: { Name: 'agent', SecretReference: `file:${join(dir, 'agent.key')}`, Lifetime: 'NoLimit' } }];
  const logs = captureLog();
  const config = {
    HealthEndpoints: { Port: 0 },
    Storage: { Database: join(dir, 'mailcairn.db') },
    MailSynchronization: { Enabled: false },
    McpEndpoint: {
      Enabled: true,
      BindAddress: '127.0.0.1',
      Port: 0,
      Authentication: auth,
      RateLimiting: { TokenCapacity: 100_000, TokensPerReplenishmentPeriod: 100_000, MaxConcurrentRequests: 100 },
      Connections: { ...connections, MaxConnections: 1_000 },
    },
    AdminEndpoint: {
      Enabled: true,
      BindAddress: '127.0.0.1',
      Port: 0,
      Authentication: auth.map((a) => ({ ApiKey: { ...a.ApiKey, Name: 'operator' } })),
      Connections: { ...connections, MaxConnections: ADMIN_CAP },
    },
  };
  const service = await startService({ configFile: writeConfig(dir, config), env: {}, log: logs.log, hostLogSink: logs.write });
  t.teardown(() => service.stop());
  return { service, mcpPort: service.mcp!.port, adminPort: service.admin!.port, healthPort: service.health!.port, logs };
}

/** A client that behaves: `/readyz` 200 and `tools/list` answered, through the SDK's own client. */
async function wellBehaved(t: Test, served: Served): Promise<() => Promise<void>> {
  const client = new Client({ name: 'well-behaved', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${served.mcpPort}/mcp`), { requestInit: { headers: { authorization: `Bearer ${KEY}` } } }),
  );
  t.teardown(() => client.close());
  return async () => {
    const ready = await request(`http://127.0.0.1:${served.healthPort}/readyz`);
    await ready.body.text();
    if (ready.statusCode !== 200) throw new Error(`/readyz answered ${ready.statusCode}`);
    const { tools } = await client.listTools();
    if (tools.length === 0) throw new Error('tools/list answered no tool');
  };
}

/** Runs `probe` again and again while `abuse` is under way; how many rounds passed (each one must). */
async function throughout(abuse: Promise<unknown>, probe: () => Promise<void>): Promise<number> {
  let over = false;
  void abuse.finally(() => {
    over = true;
  });
  let rounds = 0;
  while (!over) {
    await probe();
    rounds += 1;
    await sleep(200);
  }
  await abuse;
  return rounds;
}

/** Writes `head` at once, then `drip` one byte every `everyMs` until the server closes the connection; what it answered and when. */
async function dripping(port: number, head: string, drip: string, everyMs: number): Promise<RawExchange & { elapsedMs: number }> {
  const socket: Socket = await openSocket(port);
  const started = Date.now();
  const done = collect(socket, HEADERS_TIMEOUT_MS + RECEIVE_TIMEOUT_MS + SLACK_MS);
  socket.write(head);
  let at = 0;
  const timer = setInterval(() => {
    if (socket.destroyed) return clearInterval(timer);
    socket.write(drip[at % drip.length] as string, () => {});
    at += 1;
  }, everyMs);
  const result = await done;
  clearInterval(timer);
  return { ...result, elapsedMs: Date.now() - started };
}

t.test('slow and abusive clients are cut off while other clients are served', async (t) => {
  const served = await serve(t);
  const probe = await wellBehaved(t, served);
  await probe();

  t.test('slow headers (slowloris): 408 and closed past HeadersTimeout', async (t) => {
    const head = 'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n';
    const abuse = Promise.all(Array.from({ length: 20 }, () => dripping(served.mcpPort, head, 'X-Slow: a\r\n', 250)));
    const rounds = await throughout(abuse, probe);
    const results = await abuse;
    t.ok(rounds >= 2, `the well-behaved client was served ${rounds} times during the abuse`);
    for (const r of results) {
      t.ok(r.closedByServer, 'the server closed the connection');
      t.equal(parseResponses(r.bytes)[0]?.status, 408, 'answered 408 Request Timeout');
      t.ok(r.elapsedMs >= HEADERS_TIMEOUT_MS - 100, 'not before HeadersTimeout');
    }
  });

  t.test('a byte of header a second: cut off as well', async (t) => {
    const r = await dripping(served.adminPort, 'GET /api/admin/session HTTP/1.1\r\n', 'Host: 127.0.0.1\r\n', 1_000);
    t.ok(r.closedByServer, 'closed by the server');
    t.equal(parseResponses(r.bytes)[0]?.status, 408);
  });

  t.test('slow body: 408 and closed past ReceiveTimeout', async (t) => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }).padEnd(2_000, ' ');
    const head =
      'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n' +
      `Authorization: Bearer ${KEY}\r\nContent-Length: ${body.length}\r\n\r\n`;
    const abuse = Promise.all(Array.from({ length: 10 }, () => dripping(served.mcpPort, head, body, 100)));
    const rounds = await throughout(abuse, probe);
    t.ok(rounds >= 2, `the well-behaved client was served ${rounds} times during the abuse`);
    for (const r of await abuse) {
      t.ok(r.closedByServer, 'the server closed the connection');
      t.equal(parseResponses(r.bytes)[0]?.status, 408, 'answered 408 Request Timeout');
      t.ok(r.elapsedMs >= RECEIVE_TIMEOUT_MS - 100, 'not before ReceiveTimeout');
    }
  });

  t.test('several hundred idle connections: each closed with 408 past HeadersTimeout', async (t) => {
    const sockets = await Promise.all(Array.from({ length: 300 }, () => openSocket(served.mcpPort)));
    const abuse = Promise.all(sockets.map((s) => collect(s, HEADERS_TIMEOUT_MS + SLACK_MS)));
    const rounds = await throughout(abuse, probe);
    t.ok(rounds >= 2, `the well-behaved client was served ${rounds} times while 300 connections idled`);
    const results = await abuse;
    t.equal(results.filter((r) => r.closedByServer).length, 300, 'every idle connection was closed by the server');
    t.equal(results.filter((r) => parseResponses(r.bytes)[0]?.status === 408).length, 300, 'each with 408');
  });

  t.test('connections past MaxConnections are closed as they are accepted', async (t) => {
    const sockets = await Promise.all(Array.from({ length: ADMIN_CAP * 3 }, () => openSocket(served.adminPort).catch(() => null)));
    const opened = sockets.filter((s): s is Socket => s !== null);
    const abuse = Promise.all(opened.map((s) => collect(s, HEADERS_TIMEOUT_MS + SLACK_MS)));
    const rounds = await throughout(abuse, probe);
    t.ok(rounds >= 1, `the MCP client was served ${rounds} times while the admin listener was full`);
    const results = await abuse;
    const held = results.filter((r) => parseResponses(r.bytes)[0]?.status === 408).length;
    const refused = ADMIN_CAP * 3 - held;
    t.ok(held <= ADMIN_CAP, `at most MaxConnections (${ADMIN_CAP}) were held (${held}), then cut off at HeadersTimeout`);
    t.ok(refused >= ADMIN_CAP * 2, `the rest (${refused}) were closed without an answer`);
    const after = await request(`http://127.0.0.1:${served.adminPort}/api/admin/session`, { headers: { authorization: `Bearer ${KEY}` } });
    t.equal(after.statusCode, 200, 'once they were gone, the admin listener serves again');
    await after.body.text();
  });

  t.test('pipelined requests on one connection are answered in order', async (t) => {
    const requests = Array.from({ length: 25 }, (_, i) => {
      const body = JSON.stringify({ jsonrpc: '2.0', id: i + 1, method: i % 2 === 0 ? 'tools/list' : 'ping' });
      return (
        'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n' +
        `Authorization: Bearer ${KEY}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
      );
    });
    const socket = await openSocket(served.mcpPort);
    const done = collect(socket, 20_000, (bytes) => parseResponses(bytes).length === requests.length);
    socket.write(requests.join(''));
    const responses = parseResponses((await done).bytes);
    t.equal(responses.length, requests.length, 'one answer per request');
    t.same(
      responses.map((r) => (JSON.parse(r.body.toString('utf8')) as { id: number }).id),
      requests.map((_, i) => i + 1),
      'in the order they were sent',
    );
    t.ok(
      responses.every((r) => r.status === 200),
      'each one 200',
    );
  });

  t.test('afterwards: ready, served, nothing logged as a failure', async (t) => {
    await probe();
    const { restarts, defects } = defectLines(served.logs.lines);
    t.equal(restarts, 0, 'no restart');
    t.same(
      defects.map((l) => l.event),
      [],
      'no defect line',
    );
    t.notOk(served.logs.raw().includes(KEY), 'no key in any log line');
  });
});
