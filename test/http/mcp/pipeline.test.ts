/**
 * The security stages of the MCP listener, end to end through the service
 * and the SDK's client: API keys (rotation through the file, expiry,
 * identical refusals), key-pair assertions (replay), grants narrowing
 * tools/list, the per-key token bucket (exactly TokenCapacity, then 429 with
 * Retry-After; keys do not share), and no credential in any log line.
 */
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SignJWT, importPKCS8 } from 'jose';
import t, { type Test } from 'tap';
import { request } from 'undici';
import { startDovecot } from '../../harness/dovecot.ts';
import { tempDir } from '../../helpers/daemon.ts';
import { startSyncService, type SyncService } from '../../helpers/sync-service.ts';

const KEY_A = `mc_${randomUUID().replaceAll('-', '')}`;
const KEY_A_NEXT = `mc_${randomUUID().replaceAll('-', '')}`;
const KEY_B = `mc_${randomUUID().replaceAll('-', '')}`;
const KEY_NOTHING = `mc_${randomUUID().replaceAll('-', '')}`;
const KEY_EXPIRED = `mc_${randomUUID().replaceAll('-', '')}`;

const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });

type Setup = { sync: SyncService; port: number; dir: string; url: string };

async function setup(t: Test, tokenCapacity: number): Promise<Setup> {
  const dir = tempDir(t);
  const dovecot = await startDovecot({ users: [{ user: 'pat', password: 'pw-pat' }] });
  t.teardown(() => dovecot.stop());
  const file = (name: string, content: string): string => {
    writeFileSync(join(dir, name), content);
    return `file:${join(dir, name)}`;
  };
  const sync = await startSyncService(dir, dovecot, [{ id: 'pat', user: 'pat', folders: [{ Alias: 'inbox' }] }], {
    MailSynchronization: { Enabled: false },
    McpEndpoint: {
      Enabled: true,
      BindAddress: '127.0.0.1',
      Port: 0,
      Authentication: [
        { ApiKey: { Name: 'agent-a', SecretReference: file('a.key', KEY_A), Lifetime: 'NoLimit' } },
        { ApiKey: { Name: 'agent-b', SecretReference: file('b.key', KEY_B), Lifetime: 'NoLimit' } },
        { ApiKey: { Name: 'reporting', SecretReference: file('n.key', KEY_NOTHING), Lifetime: 'NoLimit' }, Permissions: ['service.mail.ask'] },
        { ApiKey: { Name: 'old-agent', SecretReference: file('e.key', KEY_EXPIRED), Lifetime: '2020-01-01T00:00:00Z' } },
        {
          PublicKey: { Name: 'signer', SecretReference: file('signer.pem', publicKey.export({ type: 'spki', format: 'pem' }) as string), Lifetime: 'NoLimit' },
        },
      ],
      RateLimiting: { TokenCapacity: tokenCapacity, TokensPerReplenishmentPeriod: tokenCapacity, ReplenishmentPeriod: '00:01:00' },
    },
  });
  t.teardown(() => sync.service.stop());
  const port = sync.service.mcp!.port;
  return { sync, port, dir, url: `http://127.0.0.1:${port}/mcp` };
}

const listTools = (bearer?: string) => ({
  method: 'POST' as const,
  headers: {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    ...(bearer ? { authorization: `Bearer ${bearer}` } : {}),
  },
  body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
});

async function answer(url: string, bearer?: string) {
  const res = await request(url, listTools(bearer));
  const body = await res.body.text();
  return {
    status: res.statusCode,
    body,
    challenge: res.headers['www-authenticate'],
    retryAfter: res.headers['retry-after'],
    cache: res.headers['cache-control'],
  };
}

async function assertion(audience = 'urn:service:mcp', jti = randomUUID()): Promise<string> {
  const key = await importPKCS8(privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, 'ES256');
  return new SignJWT({})
    .setProtectedHeader({ alg: 'ES256', typ: 'service-client-assertion+jwt' })
    .setAudience(audience)
    .setIssuedAt()
    .setExpirationTime('2m')
    .setJti(jti)
    .sign(key);
}

t.test('credentials, grants and limits on /mcp', async (t) => {
  // Assertions, tokens and refused credentials share the anonymous partition: room for all of this test's.
  const { sync, url, dir } = await setup(t, 100);

  const missing = await answer(url);
  t.equal(missing.status, 401);
  t.equal(missing.challenge, 'Bearer realm="mailcairn"', 'API keys only: no resource_metadata');
  t.equal(missing.body, '');
  const unknown = await answer(url, 'mc_not-a-key');
  const expired = await answer(url, KEY_EXPIRED);
  t.same(unknown, missing, 'an unknown key reads exactly like none');
  t.same(expired, missing, 'an expired key reads exactly like none');
  t.ok(
    sync.logs.events('auth.key-expired').some((l) => l.entry === 'old-agent' && l.level === 40),
    'the expired key is logged by name at warning',
  );

  const a = await answer(url, KEY_A);
  t.equal(a.status, 200);
  t.same(
    JSON.parse(a.body)
      .result.tools.map((tool: { name: string }) => tool.name)
      .sort(),
    [
      'cancel_outgoing_email',
      'create_contact',
      'delete_contact',
      'delete_draft',
      'forward_email',
      'get_contact',
      'get_email_content',
      'get_outgoing_email',
      'list_accounts',
      'list_contacts',
      'list_emails',
      'promote_contact',
      'reply_to_email',
      'save_draft',
      'search_emails',
      'send_draft',
      'send_email',
      'set_mail_flags',
      'update_contact',
      'update_draft',
    ],
  );

  // The grant narrows the listing; a call to a withheld tool is answered as an unknown tool.
  const client = new Client({ name: 'pipeline-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${KEY_NOTHING}` } } }));
  t.teardown(() => client.close());
  t.same((await client.listTools()).tools, [], 'a credential without service.mail.read sees none of the read tools');
  await t.rejects(client.callTool({ name: 'list_emails', arguments: {} }), { code: -32602, message: /Unknown tool: 'list_emails'/ });
  t.match(
    sync.logs.events('auth.refused'),
    [{ level: 40, surface: 'mcp', target: 'list_emails', permission: 'service.mail.read', credential: 'reporting' }],
    'the withheld call is a refusal, logged naming the credential',
  );
  // Granted ask_mail on a deployment that declares no chat endpoint: not listed, and a call is told why (56001), never "unknown".
  const asked = (await client.callTool({ name: 'ask_mail', arguments: { question: 'Who wrote last?' } })) as {
    isError?: boolean;
    structuredContent?: Record<string, unknown>;
  };
  t.equal(asked.isError, true);
  t.match(
    asked.structuredContent,
    { code: 56001, message: /answers no questions: no chat endpoint is declared/ },
    'the message says no questions are answered at all',
  );

  // Rotation through the file, no restart: from the very next request the old key stops and the new one works.
  writeFileSync(join(dir, 'a.key'), KEY_A_NEXT);
  t.equal((await answer(url, KEY_A)).status, 401, 'the replaced key is refused');
  t.equal((await answer(url, KEY_A_NEXT)).status, 200, 'the new key is served');

  // Key pair: a signed assertion is admitted once; the same jti again is a replay.
  const signed = await assertion();
  t.equal((await answer(url, signed)).status, 200, 'an ES256 assertion for urn:service:mcp');
  t.same(await answer(url, signed), missing, 'a replayed assertion reads like no credential');
  t.same(await answer(url, await assertion('urn:service:admin')), missing, "the other surface's audience is refused");
  t.ok(
    sync.logs.events('auth.assertion-refused').some((l) => l.cause === 'replay'),
    'the replay is logged with its cause',
  );
});

t.test('the token bucket: exactly TokenCapacity per key, then 429 with Retry-After; keys do not share', async (t) => {
  const { sync, url } = await setup(t, 5);
  const statuses: number[] = [];
  for (let i = 0; i < 7; i++) statuses.push((await answer(url, KEY_B)).status);
  t.same(statuses, [200, 200, 200, 200, 200, 429, 429]);
  const limited = await answer(url, KEY_B);
  t.equal(limited.status, 429);
  t.equal(limited.body, '');
  t.equal(limited.cache, 'no-store');
  t.ok(Number(limited.retryAfter) >= 1, `Retry-After ${limited.retryAfter} s, never below one`);
  t.equal((await answer(url, KEY_A)).status, 200, 'another key has its own bucket');
  // Refused credentials spend the shared anonymous partition, which is not agent-b's either.
  const anonymous: number[] = [];
  for (let i = 0; i < 6; i++) anonymous.push((await answer(url, 'mc_wrong')).status);
  t.same(anonymous, [401, 401, 401, 401, 401, 429], 'a refused credential sees 429 once the anonymous bucket is spent');
  t.match(sync.logs.events('limits.in-force')[0], { section: 'McpEndpoint', tokenCapacity: 5 });

  const logs = sync.logs.raw();
  for (const secret of [KEY_A, KEY_A_NEXT, KEY_B, KEY_NOTHING, KEY_EXPIRED]) t.notOk(logs.includes(secret), 'no API key in any log line');
  t.notMatch(logs, /eyJ[A-Za-z0-9_-]{10,}\./, 'no JWT in any log line');
});
