/**
 * Issue 27, part 5: log privacy in one place. An error whose message quotes
 * a subject and an address, caused by a driver error with a code, is logged
 * through every surface: the main thread's logger, an actor's thread, a pool
 * thread, the administrative listener and the MCP listener's failure paths
 * (a stage that throws: `http.failed`; a tool whose pool throws:
 * `mcp.tool-failed`). Neither the subject nor the address reaches any line;
 * the class, the codes and the frames do. A pool thread logs at the level it
 * was given.
 *
 * The authenticators and pools that throw are stand-ins for a defect: no
 * real stage can be made to throw on demand.
 */
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t, { type Test } from 'tap';
import { request } from 'undici';
import { validateConfig } from '../../config/load.ts';
import type { Config } from '../../config/schema.ts';
import { createAdminListener } from '../../http/admin/admin-listener.ts';
import type { Authenticate } from '../../http/auth/authenticate.ts';
import { createMcpListener } from '../../http/mcp/mcp-listener.ts';
import { newKeyRing } from '../../runtime/keyring/keyring.ts';
import { Supervisor } from '../../runtime/supervisor/supervisor.ts';
import { tempDir } from '../helpers/daemon.ts';
import { captureLog, type LogLine, until } from '../helpers/log-capture.ts';

t.setTimeout(120_000);

const tag = randomUUID().slice(0, 8);
const SUBJECT = `Quarterly numbers ${tag}`;
const ADDRESS = `dana.${tag}@example.org`;
/** What a parser or a database quotes in its message. */
const QUOTED = `"${SUBJECT}" from <${ADDRESS}>`;

function quotingError(): Error {
  return new Error(`could not store ${QUOTED}`, { cause: Object.assign(new Error(`constraint failed: ${QUOTED}`), { code: 'SQLITE_CONSTRAINT' }) });
}

/** The tag is in both; any part of either that reaches the output is found by it. */
function assertNoLeak(t: Test, output: string, surface: string): void {
  t.notOk(output.includes(tag), `${surface}: neither the subject nor the address appears`);
  t.notOk(output.includes('could not store') || output.includes('constraint failed'), `${surface}: no message of the error or its cause`);
}

const reduced = { type: 'Error', stack: /^at /, cause: { type: 'Error', code: 'SQLITE_CONSTRAINT' } };

t.test('main thread: the logger every thread builds', async (t) => {
  const logs = captureLog();
  logs.log.error({ err: quotingError(), event: 'probe' }, 'probe');
  t.match(logs.events('probe'), [{ err: reduced, msg: 'probe' }]);
  assertNoLeak(t, logs.raw(), 'main thread');
});

t.test("an actor's thread: the handler's throw, logged in the thread with its cause's code", async (t) => {
  const logs = captureLog();
  const supervisor = new Supervisor({ log: logs.log, hostLogSink: logs.write });
  t.teardown(() => supervisor.stop(2_000));
  await supervisor.start([{ id: 'quoting', entry: new URL('../fixtures/actors/misbehaving.ts', import.meta.url), restart: 'temporary' }]);
  await t.rejects(supervisor.ref('quoting').ask({ type: 'throw-quoting', text: QUOTED }));
  await until(() => logs.events('actor.handler-threw').length > 0, 10_000, 'the thread to log the throw');
  t.match(logs.events('actor.handler-threw'), [{ actor: 'quoting', thread: Number, err: reduced }]);
  assertNoLeak(t, logs.raw(), 'actor thread');
});

t.test('a pool thread: the task that threw, at the configured level', async (t) => {
  const child = fileURLToPath(new URL('../fixtures/log-privacy-pool.ts', import.meta.url));
  const cwd = fileURLToPath(new URL('../../', import.meta.url));
  const run = async (level: string): Promise<{ output: string; lines: LogLine[] }> => {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, ['--import', 'tsx', child, level, QUOTED], { cwd, timeout: 60_000 });
    const lines = stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as LogLine);
    return { output: stdout + stderr, lines };
  };
  const atError = await run('error');
  t.match(
    atError.lines.filter((l) => l.event === 'pool.task-threw'),
    [{ pool: 'echo-task', err: reduced }],
  );
  assertNoLeak(t, atError.output, 'pool thread');
  const atFatal = await run('fatal');
  t.same(
    atFatal.lines.filter((l) => l.event === 'pool.task-threw'),
    [],
    'at Logging:Level fatal the error line is not written: the pool thread has the level',
  );
});

/** Throws what a defect in a stage would. */
const throwing: Authenticate = async () => {
  throw quotingError();
};

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

async function listen(t: Test, server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Stands for the query pool and actors: every ask throws what a defect would. */
const failing = {
  id: 'query-pool (stand-in: throws)',
  ask: async () => {
    throw quotingError();
  },
};

t.test('the administrative listener: a stage that throws', async (t) => {
  const logs = captureLog();
  const config = configOf(t, { AdminEndpoint: { Enabled: true, BindAddress: '127.0.0.1', Port: 0 } });
  const server = createAdminListener({
    config,
    log: logs.log,
    version: 'test',
    actor: () => failing,
    queryPool: failing,
    cursorKey: randomBytes(32),
    authenticate: throwing,
  });
  const base = await listen(t, server);
  const res = await request(`${base}/api/admin/session`);
  t.equal(res.statusCode, 500);
  t.equal(await res.body.text(), '', 'an empty 500');
  t.match(logs.events('http.failed'), [{ route: '/api/admin', err: reduced }]);
  assertNoLeak(t, logs.raw(), 'admin listener');
});

t.test("the MCP listener's failure paths: a stage that throws, and a tool whose pool throws", async (t) => {
  const config = configOf(t, { McpEndpoint: { Enabled: true, BindAddress: '127.0.0.1', Port: 0 } });
  const admitted: Authenticate = async () => ({
    kind: 'admitted',
    principal: { kind: 'caller', identity: 'agent', permissions: new Set(['service.mail.read']) },
    partition: { kind: 'other' },
  });
  const start = async (authenticate: Authenticate) => {
    const logs = captureLog();
    const server = createMcpListener({
      config,
      log: logs.log,
      version: 'test',
      readiness: () => ({ ready: true, checks: { database: 'migrated', supervisor: 'healthy', givenUpActors: 0, listeners: 'open' } }),
      queryPool: failing,
      parsePool: failing,
      actor: () => failing,
      authenticate,
    });
    return { logs, url: `${await listen(t, server)}/mcp` };
  };
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

  const stage = await start(throwing);
  const failed = await request(stage.url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) });
  t.equal(failed.statusCode, 500);
  await failed.body.text();
  t.match(stage.logs.events('http.failed'), [{ route: '/mcp', err: reduced }]);
  assertNoLeak(t, stage.logs.raw(), 'MCP listener, http.failed');

  const tool = await start(admitted);
  const call = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'list_accounts', arguments: {} } };
  const answered = await request(tool.url, { method: 'POST', headers, body: JSON.stringify(call) });
  const text = await answered.body.text();
  t.equal(answered.statusCode, 200);
  t.match(text, /54001/, 'the agent reads the internal failure code');
  t.match(tool.logs.events('mcp.tool-failed'), [{ tool: 'list_accounts', traceId: String, err: reduced }]);
  assertNoLeak(t, tool.logs.raw() + text, 'MCP listener, mcp.tool-failed');
});
