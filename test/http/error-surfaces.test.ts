/**
 * One error table decides every answer (issue 27): every code of
 * runtime/errors.ts thrown behind each surface, driven for real over
 * loopback HTTP.
 *
 * - MCP: a tool that fails with the code, called through the SDK's own
 *   client. A code with a public number a client is told is an `isError`
 *   result naming it with the error's sentence; any other is 54001 with a
 *   trace id, and the error is logged in full under that id. One
 *   `mcp.tool-call` line per call, with the code the caller saw.
 * - Administrative listener: a route that fails with the code. The status
 *   is the table's; a 4xx is a problem document with the error's sentence
 *   (E_APP_REFUSED the 403 of exactly status, detail, permission); a 5xx is
 *   empty and logged once by code (`admin.unavailable` for 503 and 504).
 *
 * The error's message carries text standing for mail content: it must not
 * reach a 5xx answer, the 54001 result, or the log of a 503 or 504.
 *
 * Then the case of the issue through a real route and the real router: the
 * synchronization status asked of a scheduler whose thread never answers is
 * the documented 504 (E_ACTOR_TIMEOUT: the ask ends a moment before the
 * request timeout, so the route answers it, not the timeout), and of
 * one that is not running, 503. The thread that never answers is a
 * stand-in: a hang on demand is not something a real actor offers.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import t, { type Test } from 'tap';
import { request } from 'undici';
import { z } from 'zod';
import { SCHEDULER_ID } from '../../actors/sync-scheduler/protocol.ts';
import { validateConfig } from '../../config/load.ts';
import { createAdminListener } from '../../http/admin/admin-listener.ts';
import { defineRoute, type Route } from '../../http/admin/route.ts';
import { ROUTES } from '../../http/admin/routes/index.ts';
import { createAuthenticator } from '../../http/auth/authenticate.ts';
import { anonymousPrincipal } from '../../http/auth/principal.ts';
import { handleMcpRequest } from '../../http/mcp/mcp-server.ts';
import { defineTool, type ToolContext } from '../../http/mcp/tool.ts';
import { AppError, codeNames, Codes, isCode, type Code } from '../../runtime/errors.ts';
import type { HostThread } from '../../runtime/host/host-thread.ts';
import { actorRef } from '../../runtime/ref.ts';
import type { AdminDeps } from '../../http/admin/route.ts';
import { Router } from '../../runtime/router.ts';
import { captureLog, type LogLine } from '../helpers/log-capture.ts';

t.setTimeout(120_000);

/** Stands for what a message may quote: no answer or log line that did not carry an error's message before may carry it now. */
const CONTENT = 'Subject: quarterly numbers for alice@example.org';

function failureOf(code: string, permission: string | undefined): AppError {
  if (!isCode(code)) throw new Error(`not a code: ${code}`);
  return new AppError(code, { message: `The ${code} sentence (${CONTENT}).`, ...(permission ? { details: { permission } } : {}) });
}

function row(code: Code): { status: number; public: number | null; undiagnosed?: true } {
  return Codes[code];
}

async function listen(t: Test, server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

t.test('MCP: every code as a tool error result', async (t) => {
  const logs = captureLog();
  const failsWith = defineTool({
    name: 'fails_with',
    title: 'Fails',
    description: 'Fails with the code it is given.',
    category: 'mailbox',
    permission: 'service.mail.read',
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    input: z.strictObject({ code: z.string(), permission: z.string().optional() }),
    run: async ({ code, permission }) => {
      throw failureOf(code, permission);
    },
  });
  const exchange = { tools: [failsWith], principal: anonymousPrincipal('mcp'), context: {} as ToolContext, log: logs.log, version: 'test' };
  const server = createServer((req, res) => {
    // The client's GET (a stream) and DELETE (a session) have no place on a stateless server.
    if (req.method !== 'POST') {
      res.statusCode = 405;
      return res.end();
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => void handleMcpRequest(req, res, JSON.parse(Buffer.concat(chunks).toString('utf8')), exchange));
  });
  const base = await listen(t, server);
  const client = new Client({ name: 'error-surfaces', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`)));
  t.teardown(() => client.close());

  for (const code of codeNames) {
    const permission = code === 'E_APP_REFUSED' ? 'service.mail.send' : undefined;
    const result = (await client.callTool({ name: 'fails_with', arguments: { code, ...(permission ? { permission } : {}) } })) as CallToolResult;
    const { public: told, undiagnosed } = row(code);
    const sentence = failureOf(code, permission).message;
    t.equal(result.isError, true, `${code}: an error result`);
    if (told !== null && undiagnosed !== true) {
      t.same(result.content, [{ type: 'text', text: `Mailcairn error ${told}: ${sentence}` }], `${code}: told as ${told}`);
      t.same(result.structuredContent, { code: told, message: sentence, ...(permission ? { permission } : {}) }, `${code}: its code in the structured content`);
      continue;
    }
    const { traceId } = result.structuredContent as { traceId: string };
    const message = `Something went wrong; the reason is in the server log (trace ${traceId})`;
    t.same(result.content, [{ type: 'text', text: `Mailcairn error 54001: ${message}` }], `${code}: undiagnosed`);
    t.same(result.structuredContent, { code: 54001, message, traceId });
    t.notOk(JSON.stringify(result).includes('alice@example.org'), `${code}: the message stays in the log`);
    const logged = logs.events('mcp.tool-failed').filter((l) => l.traceId === traceId);
    t.match(logged, [{ level: 50, tool: 'fails_with', err: { code } }], `${code}: logged in full under the trace id`);
  }

  const calls = logs.events('mcp.tool-call');
  t.same(
    calls.map((l) => l.code),
    codeNames.map((code) => (row(code).undiagnosed === true ? 54001 : (row(code).public ?? 54001))),
    'one line per call, with the code the caller saw',
  );
});

type AdminAnswer = { status: number; type: string | undefined; body: string; challenge: string | undefined };

async function get(url: string): Promise<AdminAnswer> {
  const res = await request(url);
  const header = (name: string): string | undefined => {
    const value = res.headers[name];
    return Array.isArray(value) ? value.join(', ') : value;
  };
  return { status: res.statusCode, type: header('content-type'), body: await res.body.text(), challenge: header('www-authenticate') };
}

function adminConfig(requestTimeout: string) {
  const validation = validateConfig({
    AdminEndpoint: {
      Enabled: true,
      BindAddress: '127.0.0.1',
      Port: 0,
      RequestTimeout: { Duration: requestTimeout },
      RateLimiting: { TokenCapacity: 1000, TokensPerReplenishmentPeriod: 1000, ReplenishmentPeriod: '00:01:00' },
    },
    Storage: { Database: '/nonexistent/unused.db' },
  });
  if (!validation.ok) throw new Error(JSON.stringify(validation.problems));
  return validation.config;
}

async function startAdmin(t: Test, options: { requestTimeout: string; actor: AdminDeps['actor']; routes: readonly Route[] }) {
  const logs = captureLog();
  const config = adminConfig(options.requestTimeout);
  const nobody = { id: 'query-pool (unused)', ask: () => Promise.reject(new Error('not asked in this test')) };
  const server = createAdminListener({
    config,
    log: logs.log,
    version: 'test',
    actor: options.actor,
    queryPool: nobody,
    cursorKey: randomBytes(32),
    // No entries: every request is admitted with the whole surface (the route filter passes, so the use case decides).
    authenticate: createAuthenticator('admin', [], { log: logs.log, env: {}, claimJti: async () => true, keySets: {} as never }),
    routes: options.routes,
  });
  return { base: await listen(t, server), logs };
}

const FAILS_WITH = defineRoute({
  method: 'GET',
  path: '/api/admin/test/fails-with',
  permission: null,
  summary: 'Fails with the code it is given (test only).',
  query: z.strictObject({ code: z.string(), permission: z.string().optional() }),
  handle: async ({ query }) => {
    throw failureOf(query.code, query.permission);
  },
});

t.test('administrative listener: every code as the status of the table', async (t) => {
  const nobody = { id: 'actor (unused)', ask: () => Promise.reject(new Error('not asked in this test')) };
  const { base, logs } = await startAdmin(t, { requestTimeout: '00:01:00', actor: () => nobody, routes: [FAILS_WITH] });
  const route = 'GET /api/admin/test/fails-with';

  for (const code of codeNames) {
    const permission = code === 'E_APP_REFUSED' ? 'service.admin.erase' : undefined;
    const before = logs.lines.length;
    const answer = await get(`${base}/api/admin/test/fails-with?code=${code}${permission ? `&permission=${permission}` : ''}`);
    const logged = logs.lines.slice(before);
    const { status } = row(code);
    t.equal(answer.status, status, `${code}: ${status}`);
    if (code === 'E_APP_REFUSED') {
      t.equal(answer.type, 'application/problem+json');
      t.same(
        JSON.parse(answer.body),
        { status: 403, detail: `The credential does not hold the permission ${permission}.`, permission },
        'exactly three members',
      );
      t.match(logged, [{ event: 'auth.refused', surface: 'admin', target: route, permission }], 'counted as a refusal');
    } else if (status < 500) {
      t.equal(answer.type, 'application/problem+json', `${code}: a problem document`);
      const problem = JSON.parse(answer.body) as Record<string, unknown>;
      t.same(Object.keys(problem), ['status', 'title', 'detail'], `${code}: status, title, detail`);
      t.match(problem, { status, title: String, detail: failureOf(code, undefined).message }, `${code}: the error's sentence`);
      t.same(logged, [], `${code}: a refusal is not a failure`);
    } else {
      t.equal(answer.body, '', `${code}: empty`);
      t.equal(logged.length, 1, `${code}: logged once`);
      const line = logged[0] as LogLine;
      if (code === 'E_KEYRING_MISSING') t.match(line, { event: 'admin.keyring-missing', level: 50, setting: 'DataEncryption:KeyRing' });
      else if (status === 503 || status === 504) {
        t.match(line, { event: 'admin.unavailable', level: 40, route, code }, `${code}: unavailable, by code`);
        t.notOk(JSON.stringify(line).includes('alice@example.org'), `${code}: logged by code only`);
      } else t.match(line, { event: 'http.failed', level: 50, route: '/api/admin/test/fails-with', err: { code } }, `${code}: failed, by code`);
    }
  }

  const noPrincipal = await get(`${base}/api/admin/test/fails-with?code=E_APP_REFUSED`);
  t.equal(noPrincipal.status, 401, 'E_APP_REFUSED naming no permission: no principal reached the use case');
  t.match(noPrincipal.challenge, /^Bearer realm="mailcairn"/);
  t.equal(noPrincipal.body, '');

  const defect = await get(`${base}/api/admin/test/fails-with?code=E_NOT_A_CODE`);
  t.equal(defect.status, 500, 'anything but an AppError: the generic failure');
  t.equal(defect.body, '');
});

t.test('an actor time-out on the administrative surface is 504 as documented; an actor not running, 503', async (t) => {
  const router = new Router();
  // A host thread that takes every envelope and never answers (stand-in for a hung scheduler).
  const hung = { post: () => {} } as unknown as HostThread;
  router.attach(SCHEDULER_ID, hung, 8);
  const { base, logs } = await startAdmin(t, { requestTimeout: '00:00:03', actor: (id) => actorRef(router, id), routes: ROUTES });
  const url = `${base}/api/admin/mailbox/synchronization`;

  const started = Date.now();
  const timedOut = await get(url);
  const tookMs = Date.now() - started;
  t.equal(timedOut.status, 504, 'the scheduler did not reply in time');
  t.equal(timedOut.body, '');
  t.ok(tookMs >= 2_000, `the ask waited out its deadline (${tookMs} ms)`);
  // Only the route's own answer logs this: had the request timeout answered, nothing would be.
  t.match(
    logs.events('admin.unavailable'),
    [{ route: 'GET /api/admin/mailbox/synchronization', code: 'E_ACTOR_TIMEOUT' }],
    'the ask timed out, logged once by code',
  );
  t.same(logs.events('http.failed'), [], 'not the generic failure');

  router.detach(SCHEDULER_ID);
  const down = await get(url);
  t.equal(down.status, 503, 'no scheduler running');
  t.match(logs.events('admin.unavailable').at(-1), { code: 'E_ACTOR_DOWN' });
});
