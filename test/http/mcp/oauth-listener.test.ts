/**
 * OAuth access tokens on /mcp, end to end through the service's own listener
 * and a real authorization server (test/harness/oauth-provider.ts): a token
 * over "TLS" (X-Forwarded-Proto https from the loopback peer, which the
 * default ReverseProxy settings trust) is admitted; the same token in clear
 * text reads exactly like no token (401 with the resource_metadata
 * challenge); a missing scope is 403 insufficient_scope; another subject a
 * plain 403; the RFC 9728 metadata document is served only to a request
 * whose effective scheme and host are those of Resource; no token reaches a
 * log line.
 */
import t from 'tap';
import { request } from 'undici';
import { startDovecot } from '../../harness/dovecot.ts';
import { startOAuthProvider } from '../../harness/oauth-provider.ts';
import { tempDir } from '../../helpers/daemon.ts';
import { startSyncService } from '../../helpers/sync-service.ts';

const RESOURCE = 'https://mail.example.test/mcp';
const METADATA_URL = 'https://mail.example.test/.well-known/oauth-protected-resource/mcp';
const SCOPES = ['mail.read', 'mail.list'];
const REQUIRED = ['mail.read'];
const OVER_TLS = { 'x-forwarded-proto': 'https' };

type Seen = { status: number; body: string; headers: Record<string, unknown> };

/** What a client sees of an answer, the Date header aside. */
async function seen(url: string, init: { method?: 'GET' | 'POST'; bearer?: string; headers?: Record<string, string> } = {}): Promise<Seen> {
  const method = init.method ?? 'POST';
  const res = await request(url, {
    method,
    headers: {
      ...(method === 'POST' ? { 'content-type': 'application/json', accept: 'application/json, text/event-stream' } : {}),
      ...(init.bearer !== undefined ? { authorization: `Bearer ${init.bearer}` } : {}),
      ...init.headers,
    },
    ...(method === 'POST' ? { body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) } : {}),
  });
  const { date: _date, ...headers } = res.headers;
  return { status: res.statusCode, body: await res.body.text(), headers };
}

t.test('OAuth access tokens through the MCP listener', async (t) => {
  const dir = tempDir(t);
  const provider = await startOAuthProvider({ users: ['alice', 'mallory'], accessTokenTtl: 3600, resource: { indicator: RESOURCE, scopes: SCOPES } });
  t.teardown(() => provider.stop());
  const dovecot = await startDovecot({ users: [{ user: 'pat', password: 'pw-pat' }] });
  t.teardown(() => dovecot.stop());
  const sync = await startSyncService(dir, dovecot, [{ id: 'pat', user: 'pat', folders: [{ Alias: 'inbox' }] }], {
    MailSynchronization: { Enabled: false },
    McpEndpoint: {
      Enabled: true,
      BindAddress: '127.0.0.1',
      Port: 0,
      Authentication: [
        {
          OAuth: {
            Resource: RESOURCE,
            RequiredScopes: REQUIRED,
            AuthorizationServers: [{ Name: 'harness', Issuer: provider.issuer, AuthorizedSubjects: ['alice'] }],
          },
        },
      ],
      RateLimiting: { TokenCapacity: 1000, TokensPerReplenishmentPeriod: 1000 },
    },
  });
  t.teardown(() => sync.service.stop());
  const port = sync.service.mcp!.port;
  const mcp = `http://127.0.0.1:${port}/mcp`;

  const good = await provider.mintAccessToken('alice');
  const lacking = await provider.mintAccessToken('alice', { scopes: ['mail.list'] });
  const stranger = await provider.mintAccessToken('mallory');
  const tokens = [good, lacking, stranger];

  await t.test('a token over TLS is admitted and tools/list answers', async (t) => {
    const answer = await seen(mcp, { bearer: good, headers: OVER_TLS });
    if (!t.equal(answer.status, 200, 'admitted')) return;
    const names = (JSON.parse(answer.body) as { result: { tools: Array<{ name: string }> } }).result.tools.map((tool) => tool.name).sort();
    t.same(
      names,
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
      'no Permissions list: the whole surface',
    );
  });

  await t.test('the same token in clear text reads exactly like no token', async (t) => {
    const missing = await seen(mcp, { headers: OVER_TLS });
    t.equal(missing.status, 401);
    t.equal(missing.body, '');
    t.equal(missing.headers['www-authenticate'], `Bearer realm="mailcairn", resource_metadata="${METADATA_URL}"`);
    t.equal(missing.headers['cache-control'], 'no-store');
    const clearText = await seen(mcp, { bearer: good });
    t.same(clearText, missing, 'status, headers and (empty) body are identical');
    t.same(await seen(mcp), missing, 'no token in clear text: the same answer');
    t.ok(
      sync.logs.events('auth.token-refused').some((l) => l.cause === 'clear-text'),
      'the cause is in the log only',
    );
  });

  await t.test('a token lacking a required scope: 403 with the insufficient_scope challenge', async (t) => {
    const answer = await seen(mcp, { bearer: lacking, headers: OVER_TLS });
    t.equal(answer.status, 403);
    t.equal(answer.body, '');
    t.equal(answer.headers['www-authenticate'], `Bearer realm="mailcairn", error="insufficient_scope", scope="mail.read", resource_metadata="${METADATA_URL}"`);
    t.ok(sync.logs.events('auth.token-refused').some((l) => l.cause === 'scope' && l.server === 'harness'));
  });

  await t.test('a token of a subject no entry authorizes: a plain 403 naming nothing', async (t) => {
    const answer = await seen(mcp, { bearer: stranger, headers: OVER_TLS });
    t.equal(answer.status, 403);
    t.equal(answer.body, '');
    t.equal(answer.headers['www-authenticate'], undefined, 'no challenge');
    t.ok(sync.logs.events('auth.token-refused').some((l) => l.cause === 'subject'));
  });

  await t.test('the metadata document only where the effective scheme and host are those of Resource', async (t) => {
    const metadata = `http://127.0.0.1:${port}/.well-known/oauth-protected-resource/mcp`;
    const served = await seen(metadata, { method: 'GET', headers: { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'mail.example.test' } });
    t.equal(served.status, 200);
    t.match(served.headers['content-type'], /^application\/json/);
    t.same(JSON.parse(served.body), {
      resource: RESOURCE,
      authorization_servers: [provider.issuer],
      scopes_supported: REQUIRED,
      bearer_methods_supported: ['header'],
      resource_name: 'mailcairn',
    });
    const refusals: Array<[string, Record<string, string>]> = [
      ['no forwarded headers', {}],
      ['https, but our own host', { 'x-forwarded-proto': 'https' }],
      ['the host, but clear text', { 'x-forwarded-host': 'mail.example.test' }],
      ['https on another host', { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'other.example.test' }],
      ['https on another port', { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'mail.example.test:8443' }],
    ];
    for (const [what, headers] of refusals) {
      const answer = await seen(metadata, { method: 'GET', headers });
      t.equal(answer.status, 404, what);
      t.equal(answer.body, '', `${what}: empty`);
    }
  });

  await t.test('no token in any log line', async (t) => {
    const logs = sync.logs.raw();
    t.ok(logs.length > 0);
    for (const token of tokens) {
      t.notOk(logs.includes(token), 'no whole token');
      t.notOk(logs.includes(token.split('.')[2]!), 'no signature');
    }
    t.notMatch(logs, /eyJ[A-Za-z0-9_-]{10,}\./, 'nothing shaped like a JWT');
  });
});
