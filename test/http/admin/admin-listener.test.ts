/**
 * The administrative listener end to end, through a service started for
 * real (a private Dovecot behind one account): API keys by `Authorization:
 * Bearer` and by `X-API-Key`; the empty 401 with its challenge; credentials
 * not crossing surfaces; the route filter's 403 problem document (exactly
 * status, detail, permission) counted as a refusal; the synchronization
 * status; the refresh token stored sealed by the account's sync actor, its
 * 400s, 413 and the 500 without a key ring; `/mcp` answered 404 here; the one
 * shared bucket (429); no credential or token in any log line.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Libsql from 'libsql';
import t, { type Test } from 'tap';
import { request } from 'undici';
import { newKeyRing, unseal } from '../../../runtime/keyring/keyring.ts';
import { loadKeyRing } from '../../../runtime/keyring/load.ts';
import { version } from '../../../runtime/version.ts';
import { startDovecot } from '../../harness/dovecot.ts';
import { tempDir } from '../../helpers/daemon.ts';
import { startSyncService, type SyncService } from '../../helpers/sync-service.ts';

t.setTimeout(300_000);

const KEY_OPERATOR = `mc_${randomUUID().replaceAll('-', '')}`;
const KEY_READER = `mc_${randomUUID().replaceAll('-', '')}`;
const KEY_NOTHING = `mc_${randomUUID().replaceAll('-', '')}`;
const KEY_AGENT = `mc_${randomUUID().replaceAll('-', '')}`;
const TOKEN_FIRST = `1//refresh-${randomUUID()}`;
const TOKEN_SECOND = `1//refresh-${randomUUID()}`;

const ALL = [
  'service.admin.read',
  'service.admin.audit.read',
  'service.admin.operate',
  'service.admin.credentials.write',
  'service.admin.spend',
  'service.admin.erase',
];

type Setup = { sync: SyncService; admin: string; mcp: string; keyRingFile: string | null };

async function setup(t: Test, options: { tokenCapacity: number; keyRing: boolean }): Promise<Setup> {
  const dir = tempDir(t);
  const dovecot = await startDovecot({ users: [{ user: 'pat', password: 'pw-pat' }] });
  t.teardown(() => dovecot.stop());
  const file = (name: string, content: string): string => {
    writeFileSync(join(dir, name), content, { mode: 0o600 });
    return `file:${join(dir, name)}`;
  };
  const keyRingFile = options.keyRing ? join(dir, 'keyring.json') : null;
  if (keyRingFile) writeFileSync(keyRingFile, newKeyRing(), { mode: 0o600 });
  const limits = { TokenCapacity: options.tokenCapacity, TokensPerReplenishmentPeriod: options.tokenCapacity, ReplenishmentPeriod: '00:01:00' };
  const sync = await startSyncService(dir, dovecot, [{ id: 'pat', user: 'pat', folders: [{ Alias: 'inbox' }] }], {
    MailSynchronization: { Enabled: false },
    ...(keyRingFile ? { DataEncryption: { KeyRing: `file:${keyRingFile}` } } : {}),
    AdminEndpoint: {
      Enabled: true,
      BindAddress: '127.0.0.1',
      Port: 0,
      Authentication: [
        { ApiKey: { Name: 'operator', SecretReference: file('operator.key', KEY_OPERATOR), Lifetime: 'NoLimit' } },
        { ApiKey: { Name: 'reader', SecretReference: file('reader.key', KEY_READER), Lifetime: 'NoLimit' }, Permissions: ['service.admin.read'] },
        { ApiKey: { Name: 'nothing', SecretReference: file('nothing.key', KEY_NOTHING), Lifetime: 'NoLimit' }, Permissions: [] },
      ],
      RateLimiting: limits,
    },
    McpEndpoint: {
      Enabled: true,
      BindAddress: '127.0.0.1',
      Port: 0,
      Authentication: [{ ApiKey: { Name: 'agent', SecretReference: file('agent.key', KEY_AGENT), Lifetime: 'NoLimit' } }],
    },
  });
  t.teardown(() => sync.service.stop());
  return { sync, admin: `http://127.0.0.1:${sync.service.admin!.port}`, mcp: `http://127.0.0.1:${sync.service.mcp!.port}`, keyRingFile };
}

type Answer = {
  status: number;
  body: string;
  type: string | undefined;
  challenge: string | undefined;
  cache: string | undefined;
  allow: string | undefined;
  retryAfter: string | undefined;
};

async function call(
  url: string,
  options: { method?: 'GET' | 'POST'; bearer?: string; apiKey?: string; json?: unknown; body?: string; contentType?: string } = {},
): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (options.bearer) headers.authorization = `Bearer ${options.bearer}`;
  if (options.apiKey) headers['x-api-key'] = options.apiKey;
  const body = options.json !== undefined ? JSON.stringify(options.json) : options.body;
  if (body !== undefined) headers['content-type'] = options.contentType ?? 'application/json';
  const res = await request(url, { method: options.method ?? (body === undefined ? 'GET' : 'POST'), headers, ...(body !== undefined ? { body } : {}) });
  const text = await res.body.text();
  const header = (name: string): string | undefined => {
    const value = res.headers[name];
    return Array.isArray(value) ? value.join(', ') : value;
  };
  return {
    status: res.statusCode,
    body: text,
    type: header('content-type'),
    challenge: header('www-authenticate'),
    cache: header('cache-control'),
    allow: header('allow'),
    retryAfter: header('retry-after'),
  };
}

function storedToken(database: string, keyRingFile: string, account: string): { rows: number; sealed: string; token: string } {
  const reader = new Libsql(database, { readonly: true, timeout: 2_000 });
  try {
    const rows = reader.prepare('SELECT account_id, sealed FROM mailbox_refresh_tokens').all() as Array<{ account_id: string; sealed: string }>;
    const row = rows.find((r) => r.account_id === account)!;
    const ring = loadKeyRing(readFileSync(keyRingFile, 'utf8'));
    return { rows: rows.length, sealed: row.sealed, token: unseal(ring, 'token-sealing', row.sealed, account).toString('utf8') };
  } finally {
    reader.close();
  }
}

t.test('credentials, permissions and the three routes', async (t) => {
  const { sync, admin, mcp, keyRingFile } = await setup(t, { tokenCapacity: 200, keyRing: true });
  const session = `${admin}/api/admin/session`;
  const status = `${admin}/api/admin/mailbox/synchronization`;
  const refresh = `${admin}/api/admin/mailbox/refresh-token`;

  // Startup: one line per credential entry with what it resolved to; the warnings of the posture.
  const grants = sync.logs.events('auth.grant').filter((line) => String(line.setting).startsWith('AdminEndpoint:'));
  t.match(grants, [
    { setting: 'AdminEndpoint:Authentication:0', entry: 'operator', wroteGrant: false, permissions: ALL, msg: /wrote no grant/ },
    { setting: 'AdminEndpoint:Authentication:1', entry: 'reader', wroteGrant: true, permissions: ['service.admin.read'] },
    { setting: 'AdminEndpoint:Authentication:2', entry: 'nothing', wroteGrant: true, permissions: [], level: 40 },
  ]);
  t.equal(grants.length, 3, 'one line per entry of this surface');
  t.match(
    sync.logs.events('config.warning').map((line) => line.code),
    ['admin-clear-text'],
    'served in clear text: warned',
  );

  // The session, by either presentation of an API key.
  const byBearer = await call(session, { bearer: KEY_OPERATOR });
  t.equal(byBearer.status, 200);
  t.match(byBearer.type, /^application\/json/);
  t.equal(byBearer.cache, 'no-store');
  t.same(
    JSON.parse(byBearer.body),
    { service: 'mailcairn', version, credential: 'operator', permissions: ALL },
    'an entry with no Permissions holds the whole surface',
  );
  const byHeader = await call(session, { apiKey: KEY_OPERATOR });
  t.equal(byHeader.status, 200);
  t.same(JSON.parse(byHeader.body), JSON.parse(byBearer.body), 'X-API-Key reads the same as Bearer');
  t.same(
    JSON.parse((await call(session, { apiKey: KEY_NOTHING })).body),
    { service: 'mailcairn', version, credential: 'nothing', permissions: [] },
    'a credential granted nothing learns so',
  );
  t.same(JSON.parse((await call(session, { bearer: KEY_READER })).body).permissions, ['service.admin.read']);

  // Refused credentials: an empty 401 with the challenge, identical whatever was (not) presented.
  const none = await call(session);
  t.equal(none.status, 401);
  t.equal(none.body, '');
  t.equal(none.challenge, 'Bearer realm="mailcairn"');
  t.equal(none.cache, 'no-store');
  t.same(await call(session, { bearer: 'mc_not-a-key' }), none, 'an unknown key reads like none');
  t.same(await call(session, { apiKey: 'mc_not-a-key' }), none, 'an unknown X-API-Key reads like none');
  t.same(await call(session, { bearer: KEY_OPERATOR, apiKey: KEY_OPERATOR }), none, 'two presentations at once are judged as neither');

  // Credentials do not cross surfaces.
  t.same(await call(session, { bearer: KEY_AGENT }), none, 'an MCP key authenticates nothing on the admin surface');
  t.same(await call(session, { apiKey: KEY_AGENT }), none, 'nor through X-API-Key');
  const tools = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
  const onMcp = await request(`${mcp}/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY_OPERATOR}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify(tools),
  });
  t.equal(onMcp.statusCode, 401, 'an admin key authenticates nothing on /mcp');
  await onMcp.body.text();
  const agentOnMcp = await request(`${mcp}/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY_AGENT}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify(tools),
  });
  t.equal(agentOnMcp.statusCode, 200, 'the MCP key is served where it belongs');
  await agentOnMcp.body.text();
  t.equal((await call(`${mcp}/api/admin/session`, { bearer: KEY_OPERATOR })).status, 404, '/api/admin on the MCP listener is 404');

  // Nothing but /api/admin is served here: /mcp is 404 before any credential check.
  for (const key of [undefined, KEY_OPERATOR]) {
    const answer = await call(`${admin}/mcp`, { method: 'POST', ...(key ? { bearer: key } : {}), json: tools });
    t.equal(answer.status, 404, `/mcp on the admin listener (${key ? 'with' : 'without'} a key)`);
    t.equal(answer.body, '');
    t.equal(answer.challenge, undefined, 'no challenge: no credential was looked at');
  }
  t.equal((await call(`${admin}/`)).status, 404);
  // A route this build does not serve is absent, never a stub; only a caller learns so.
  t.equal((await call(`${admin}/api/admin/no-such-route`)).status, 401, 'an unserved route asks for a credential first');
  t.equal((await call(`${admin}/api/admin/no-such-route`, { bearer: KEY_OPERATOR })).status, 404, 'then is absent');
  const wrongMethod = await call(session, { method: 'POST', bearer: KEY_OPERATOR, json: {} });
  t.equal(wrongMethod.status, 405);
  t.equal(wrongMethod.allow, 'GET');

  // The route filter: 403 problem document, exactly status, detail, permission; counted and logged by credential.
  const refused = await call(status, { bearer: KEY_NOTHING });
  t.equal(refused.status, 403);
  t.equal(refused.type, 'application/problem+json');
  t.same(JSON.parse(refused.body), {
    status: 403,
    detail: 'The credential does not hold the permission service.admin.read.',
    permission: 'service.admin.read',
  });
  t.match(sync.logs.events('auth.refused'), [
    { level: 40, surface: 'admin', target: 'GET /api/admin/mailbox/synchronization', permission: 'service.admin.read', credential: 'nothing' },
  ]);
  const refusedWrite = await call(refresh, { bearer: KEY_READER, json: { account: 'pat', refreshToken: TOKEN_FIRST } });
  t.equal(refusedWrite.status, 403);
  t.same(JSON.parse(refusedWrite.body), {
    status: 403,
    detail: 'The credential does not hold the permission service.admin.credentials.write.',
    permission: 'service.admin.credentials.write',
  });
  t.notOk(refusedWrite.body.includes('reader'), 'a refusal names no credential');

  // The synchronization status, as the scheduler answers it.
  const read = await call(status, { apiKey: KEY_READER });
  t.equal(read.status, 200);
  const report = JSON.parse(read.body);
  t.equal(report.synchronizationEnabled, false);
  t.same(
    report.accounts.map((a: { account: string }) => a.account),
    ['pat'],
  );
  t.match(report.accounts[0], { account: 'pat', phase: String, consecutiveFailureCount: 0, lastRun: null, folders: Array });
  t.same(JSON.parse((await call(status, { bearer: KEY_OPERATOR })).body), report, 'the same answer to the whole-surface key');

  // The refresh token: 204 with no body, sealed by the account's sync actor, a second grant replaces the first.
  const stored = await call(refresh, { bearer: KEY_OPERATOR, json: { account: 'pat', refreshToken: TOKEN_FIRST } });
  t.equal(stored.status, 204);
  t.equal(stored.body, '');
  const first = storedToken(sync.database, keyRingFile!, 'pat');
  t.not(first.sealed, TOKEN_FIRST, 'the row does not hold the plaintext');
  t.notOk(first.sealed.includes(TOKEN_FIRST), 'nor contain it');
  t.equal(first.token, TOKEN_FIRST, 'it opens under the key ring, bound to the account');
  t.equal((await call(refresh, { apiKey: KEY_OPERATOR, json: { account: 'pat', refreshToken: TOKEN_SECOND } })).status, 204);
  const second = storedToken(sync.database, keyRingFile!, 'pat');
  t.equal(second.rows, 1, 'one row per account');
  t.equal(second.token, TOKEN_SECOND, 'the second grant replaced the first');

  // 400: a problem document {status, title, detail} with a sentence naming what to change.
  const invalid = async (body: { json?: unknown; body?: string; contentType?: string }, detail: RegExp, what: string): Promise<void> => {
    const answer = await call(refresh, { bearer: KEY_OPERATOR, ...body });
    t.equal(answer.status, 400, what);
    t.equal(answer.type, 'application/problem+json');
    const problem = JSON.parse(answer.body);
    t.same(Object.keys(problem).sort(), ['detail', 'status', 'title'], `${what}: status, title, detail`);
    t.equal(problem.status, 400);
    t.match(problem.detail, detail, what);
    t.notOk(answer.body.includes(TOKEN_FIRST), `${what}: the token is not repeated`);
  };
  await invalid({ json: { account: 'nobody', refreshToken: TOKEN_FIRST } }, /configures no mail account named 'nobody'/, 'an unconfigured account');
  await invalid({ json: { account: 'pat' } }, /refreshToken/, 'no refreshToken');
  await invalid({ json: { refreshToken: TOKEN_FIRST } }, /Name the account in account/, 'no account');
  await invalid({ json: { account: 'pat', refreshToken: '' } }, /refreshToken/, 'an empty refreshToken');
  await invalid({ json: { account: 'pat', refreshToken: TOKEN_FIRST, scope: 'x' } }, /Leave out the member scope/, 'a member the route does not take');
  await invalid({ json: [TOKEN_FIRST] }, /JSON object/, 'not an object');
  await invalid(
    { body: JSON.stringify({ account: 'pat', refreshToken: TOKEN_FIRST }), contentType: 'text/plain' },
    /application\/json/,
    'not application/json',
  );
  await invalid({ body: `{"account":"pat","refreshToken":"${TOKEN_FIRST}"` }, /well-formed JSON/, 'malformed JSON');
  const tooLarge = await call(refresh, { bearer: KEY_OPERATOR, json: { account: 'pat', refreshToken: 'x'.repeat(16 * 1024) } });
  t.equal(tooLarge.status, 413, 'past 16 KB');
  t.match(JSON.parse(tooLarge.body), { status: 413, title: String, detail: /16384 bytes/ });
  t.equal(storedToken(sync.database, keyRingFile!, 'pat').token, TOKEN_SECOND, 'no refused request changed what is stored');

  const logs = sync.logs.raw();
  for (const secret of [KEY_OPERATOR, KEY_READER, KEY_NOTHING, KEY_AGENT]) t.notOk(logs.includes(secret), 'no API key in any log line');
  for (const token of [TOKEN_FIRST, TOKEN_SECOND]) t.notOk(logs.includes(token), 'no refresh token in any log line');
  t.match(
    sync.logs.events('limits.in-force').find((l) => l.section === 'AdminEndpoint'),
    { partitioning: 'one bucket for all callers', tokenCapacity: 200 },
  );
});

t.test('one bucket for the whole surface; no key ring is a generic 500', async (t) => {
  const { sync, admin } = await setup(t, { tokenCapacity: 4, keyRing: false });
  const refresh = `${admin}/api/admin/mailbox/refresh-token`;

  const failed = await call(refresh, { bearer: KEY_OPERATOR, json: { account: 'pat', refreshToken: TOKEN_FIRST } });
  t.equal(failed.status, 500, 'nothing about the request was wrong');
  t.equal(failed.body, '', 'a generic failure names nothing');
  t.ok(
    sync.logs.events('admin.keyring-missing').some((l) => l.setting === 'DataEncryption:KeyRing'),
    'the operator is told which setting is missing',
  );

  // Three more tokens, spent by three different callers (one presenting nothing): the fifth request of anyone is refused.
  const statuses = [
    (await call(`${admin}/api/admin/session`, { bearer: KEY_READER })).status,
    (await call(`${admin}/api/admin/session`)).status,
    (await call(`${admin}/api/admin/session`, { apiKey: KEY_NOTHING })).status,
  ];
  t.same(statuses, [200, 401, 200]);
  const limited = await call(`${admin}/api/admin/session`, { bearer: KEY_OPERATOR });
  t.equal(limited.status, 429, 'another caller finds the one bucket spent');
  t.equal(limited.body, '');
  t.equal(limited.cache, 'no-store');
  t.ok(Number(limited.retryAfter) >= 1, `Retry-After ${limited.retryAfter}`);
  t.equal((await call(`${admin}/api/admin/session`, { apiKey: KEY_READER })).status, 429);
  t.equal((await call(`${admin}/mcp`)).status, 404, 'a path outside /api/admin spends nothing and is still 404');

  const logs = sync.logs.raw();
  for (const secret of [KEY_OPERATOR, KEY_READER, KEY_NOTHING, TOKEN_FIRST]) t.notOk(logs.includes(secret), 'no secret in any log line');
});
