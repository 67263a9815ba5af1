/**
 * The MCP listener's request pipeline around the body and the attachment
 * route (issue 11, point 3).
 *
 * Through a service started for real (a private Dovecot behind one
 * account), asked by undici with an API key: a JSON-RPC body just inside
 * 1 MiB is served; one past it is an empty 413 that closes the connection,
 * whether its Content-Length declares it or it arrives chunked and grows
 * past the limit, and the client reads the 413 rather than a reset.
 *
 * Through the listener module on a real node:http server: the attachment
 * route runs the same pipeline, so a download whose read never answers is
 * an empty 504 at the request timeout (the late answer dropped, nothing
 * logged as failed) and the shared anonymous bucket answers 429. The query
 * pool there is a stand-in that never answers: a read that hangs is a fault
 * the real pool cannot be made to produce on demand.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import t, { type Test } from 'tap';
import { request } from 'undici';
import { validateConfig } from '../../../config/load.ts';
import { issueCapability } from '../../../http/attachments/capability.ts';
import { createAuthenticator } from '../../../http/auth/authenticate.ts';
import { createMcpListener } from '../../../http/mcp/mcp-listener.ts';
import { newKeyRing, parseKeyRing } from '../../../runtime/keyring/keyring.ts';
import { startDovecot } from '../../harness/dovecot.ts';
import { tempDir } from '../../helpers/daemon.ts';
import { captureLog } from '../../helpers/log-capture.ts';
import { startSyncService } from '../../helpers/sync-service.ts';

t.setTimeout(300_000);

const MIB = 1024 * 1024;
const KEY = `mc_${randomUUID().replaceAll('-', '')}`;

async function* chunks(total: number, size = 64 * 1024): AsyncGenerator<Buffer> {
  for (let sent = 0; sent < total; sent += size) yield Buffer.alloc(Math.min(size, total - sent), 0x20);
}

/** A tools/list request padded with whitespace to exactly `size` bytes (still well-formed JSON). */
function listToolsOf(size: number): Buffer {
  const text = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
  return Buffer.concat([Buffer.from(text), Buffer.alloc(size - text.length, 0x20)]);
}

t.test('/mcp: 1 MiB is served; past it, 413 declared or chunked, read by the client', async (t: Test) => {
  const dir = tempDir(t);
  const dovecot = await startDovecot({ users: [{ user: 'pat', password: 'pw-pat' }] });
  t.teardown(() => dovecot.stop());
  writeFileSync(join(dir, 'agent.key'), KEY);
  const sync = await startSyncService(dir, dovecot, [{ id: 'pat', user: 'pat', folders: [{ Alias: 'inbox' }] }], {
    MailSynchronization: { Enabled: false },
    McpEndpoint: {
      Enabled: true,
      BindAddress: '127.0.0.1',
      Port: 0,
      Authentication: [{ ApiKey: { Name: 'agent', SecretReference: `file:${join(dir, 'agent.key')}`, Lifetime: 'NoLimit' } }],
    },
  });
  t.teardown(() => sync.service.stop());
  const url = `http://127.0.0.1:${sync.service.mcp!.port}/mcp`;
  const headers = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

  const inside = await request(url, { method: 'POST', headers, body: listToolsOf(MIB) });
  t.equal(inside.statusCode, 200, 'exactly 1 MiB is served');
  t.match(JSON.parse(await inside.body.text()), { result: { tools: Array } });

  const declared = await request(url, { method: 'POST', headers, body: listToolsOf(MIB + 1) });
  t.equal(declared.statusCode, 413, 'a declared Content-Length one byte past 1 MiB');
  t.equal(await declared.body.text(), '', 'empty, as every MCP refusal');
  t.equal(declared.headers['cache-control'], 'no-store');
  t.equal(declared.headers.connection, 'close', 'the rest of the body is not read: the connection closes');

  for (const total of [MIB + 1, 8 * MIB]) {
    const chunked = await request(url, { method: 'POST', headers, body: Readable.from(chunks(total)) });
    t.equal(chunked.statusCode, 413, `a chunked body of ${total} bytes: the 413, not a reset`);
    t.equal(await chunked.body.text(), '');
    t.equal(chunked.headers.connection, 'close');
  }

  const after = await request(url, { method: 'POST', headers, body: listToolsOf(200) });
  t.equal(after.statusCode, 200, 'the listener serves on afterwards');
  await after.body.text();
  t.same(sync.logs.events('http.failed'), [], 'no refused body is a failure');
  t.notOk(sync.logs.raw().includes(KEY), 'no API key in any log line');
});

t.test('the attachment route runs the same pipeline: request timeout and the anonymous bucket', async (t: Test) => {
  const dir = tempDir(t);
  const ringFile = join(dir, 'keyring.json');
  writeFileSync(ringFile, newKeyRing(), { mode: 0o600 });
  const validation = validateConfig({
    McpEndpoint: {
      Enabled: true,
      BindAddress: '127.0.0.1',
      Port: 0,
      RequestTimeout: { Duration: '00:00:01' },
      RateLimiting: { TokenCapacity: 3, TokensPerReplenishmentPeriod: 3, ReplenishmentPeriod: '00:01:00' },
    },
    Deployment: { PublicBaseAddress: 'http://127.0.0.1:1' },
    DataEncryption: { KeyRing: `file:${ringFile}` },
    Storage: { Database: join(dir, 'unused.db') },
  });
  if (!validation.ok) throw new Error(JSON.stringify(validation.problems));
  const config = validation.config;
  const logs = captureLog();
  let late: (() => void) | null = null;
  const stalled = {
    id: 'query-pool (stand-in: never answers in time)',
    ask: <T>(): Promise<T> =>
      new Promise<T>((resolve) => {
        // Answers, but only after the request timeout: the answer must go nowhere.
        late = () => resolve({ raw: Buffer.from('late'), listedSha256: null } as T);
      }),
  };
  // Decodes at once, so the late source runs the redemption to its end.
  const parser = {
    id: 'parse-pool (stand-in)',
    ask: async <T>(): Promise<T> => ({ filename: 'a.txt', contentType: 'text/plain', content: Buffer.from('late'), encodedSha256: 'ab'.repeat(32) }) as T,
  };
  const server = createMcpListener({
    config,
    log: logs.log,
    version: 'test',
    readiness: () => ({ ready: true, checks: { database: 'migrated', supervisor: 'healthy', givenUpActors: 0, listeners: 'open' } }),
    queryPool: stalled,
    parsePool: parser,
    actor: () => stalled,
    authenticate: createAuthenticator('mcp', [], { log: logs.log, env: {}, claimJti: async () => true, keySets: {} as never }),
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const token = issueCapability(parseKeyRing(readFileSync(ringFile, 'utf8')), { messageId: 1, index: 0, accountId: 'nobody' }, { now: Date.now() });

  const started = Date.now();
  const timedOut = await request(`${base}/attachments/${token}`);
  t.equal(timedOut.statusCode, 504, 'a read that does not answer within RequestTimeout');
  t.equal(await timedOut.body.text(), '');
  t.ok(Date.now() - started >= 900, 'at the request timeout');
  t.ok(late !== null, 'the read was asked');
  late!();
  await new Promise((resolve) => setTimeout(resolve, 50));
  t.same(logs.events('http.failed'), [], 'the late answer is dropped, not a failure');

  // Two tokens of three are left in the shared anonymous partition.
  const statuses: number[] = [];
  for (let i = 0; i < 3; i++) {
    const res = await request(`${base}/attachments/not-a-capability`);
    await res.body.text();
    statuses.push(res.statusCode);
  }
  t.same(statuses, [404, 404, 429], 'the attachment route spends the anonymous bucket');
  t.notOk(logs.raw().includes(token.slice(0, 12)), 'no part of the capability is logged');
});
