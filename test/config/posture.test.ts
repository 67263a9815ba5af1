/**
 * The resolved posture: the startup warnings the spec lists (only for
 * enabled endpoints), one line per enabled endpoint's limits, one line per
 * credential entry with what it resolved to, and never a secret.
 */
import t from 'tap';
import { validateConfig } from '../../config/load.ts';
import { describePosture } from '../../config/posture.ts';
import type { Config } from '../../config/schema.ts';

function config(raw: unknown): Config {
  const result = validateConfig(raw);
  if (!result.ok) throw new Error(result.problems.map((p) => `${p.setting}: ${p.message}`).join('\n'));
  return result.config;
}

const codes = (raw: unknown): string[] => describePosture(config(raw)).warnings.map((w) => w.code);
const key = (name: string, ref = `env:${name.toUpperCase()}_KEY`) => ({ Name: name, SecretReference: ref, Lifetime: 'NoLimit' });

t.test('a configuration serving nothing has no warnings', (t) => {
  t.same(codes({}), []);
  t.same(
    codes({ McpEndpoint: { RateLimiting: { Enabled: false } }, AdminEndpoint: { RequestTimeout: { Enabled: false } } }),
    [],
    'disabled endpoints never warn',
  );
  t.end();
});

t.test('MCP without a credential: one warning, and a second for DNS rebinding with every origin', (t) => {
  t.same(codes({ McpEndpoint: { Enabled: true }, ReverseProxy: { TrustedProxies: ['10.0.0.0/8'] } }), ['mcp-no-authentication', 'mcp-dns-rebinding']);
  t.same(codes({ McpEndpoint: { Enabled: true, Cors: { AllowedOrigins: ['https://a.example.org'] } }, ReverseProxy: { TrustedProxies: ['10.0.0.0/8'] } }), [
    'mcp-no-authentication',
  ]);
  t.same(codes({ McpEndpoint: { Enabled: true, Authentication: [{ ApiKey: key('a') }] }, ReverseProxy: { TrustedProxies: ['10.0.0.0/8'] } }), []);
  t.end();
});

t.test('limits and timeouts turned off warn once per endpoint', (t) => {
  const raw = {
    McpEndpoint: { Enabled: true, Authentication: [{ ApiKey: key('a') }], RateLimiting: { Enabled: false }, RequestTimeout: { Enabled: false } },
    AdminEndpoint: { Enabled: true, Authentication: [{ ApiKey: key('b') }], RateLimiting: { Enabled: false }, RequestTimeout: { Enabled: false } },
    ReverseProxy: { TrustedProxies: ['10.0.0.0/8'] },
  };
  t.same(codes(raw), ['mcp-rate-limiting-off', 'mcp-request-timeout-off', 'admin-clear-text', 'admin-rate-limiting-off', 'admin-request-timeout-off']);
  const { warnings } = describePosture(config(raw));
  t.same(
    warnings.map((w) => w.setting),
    [
      'McpEndpoint:RateLimiting:Enabled',
      'McpEndpoint:RequestTimeout:Enabled',
      'AdminEndpoint:Https:Endpoints',
      'AdminEndpoint:RateLimiting:Enabled',
      'AdminEndpoint:RequestTimeout:Enabled',
    ],
  );
  t.end();
});

t.test('admin: no credential and clear text', (t) => {
  t.same(codes({ AdminEndpoint: { Enabled: true }, ReverseProxy: { TrustedProxies: ['::1'] } }), ['admin-no-authentication', 'admin-clear-text']);
  t.end();
});

t.test('forwarded headers believed from anyone warn while an HTTP endpoint is enabled', (t) => {
  const mcp = { Enabled: true, Authentication: [{ ApiKey: key('a') }] };
  t.same(codes({ McpEndpoint: mcp }), ['proxy-trusts-everyone'], 'empty list');
  t.same(codes({ McpEndpoint: mcp, ReverseProxy: { TrustedProxies: ['10.0.0.0/8', '0.0.0.0/0'] } }), ['proxy-trusts-everyone'], 'covering every address');
  t.same(codes({ McpEndpoint: mcp, ReverseProxy: { TrustedProxies: ['10.0.0.0/8'] } }), []);
  t.end();
});

t.test('one line per enabled endpoint describes the limits in force', (t) => {
  const { lines } = describePosture(config({ McpEndpoint: { Enabled: true }, AdminEndpoint: { Enabled: true, RateLimiting: { Enabled: false } } }));
  t.ok(lines.includes('McpEndpoint:RateLimiting: 20 requests at once, 0 queued; per client: 60 tokens, 60 restored every 00:01:00, 0 queued'));
  t.ok(lines.includes('AdminEndpoint:RateLimiting: off'));
  t.ok(lines.includes('McpEndpoint:RequestTimeout: 00:10:00'));
  t.ok(lines.includes('McpEndpoint: serving /mcp on http://0.0.0.0:8080 (clear text)'));
  t.ok(lines.includes('HealthEndpoints: serving /livez, /readyz on http://127.0.0.1:8081 (clear text)'));
  t.end();
});

t.test('one line per credential entry with its resolved permissions, naming entries that wrote no grant', (t) => {
  const raw = {
    AdminEndpoint: {
      Enabled: true,
      Authentication: [
        { ApiKey: key('operator') },
        { ApiKey: key('monitoring'), Permissions: ['service.admin.read'] },
        { ApiKey: key('nobody'), Permissions: [] },
        { ApiKey: { ...key('old'), Lifetime: '2001-01-01T00:00:00Z' }, Permissions: ['service.admin.*'] },
      ],
    },
  };
  const { lines } = describePosture(config(raw));
  const entries = lines.filter((line) => line.startsWith('AdminEndpoint:Authentication:'));
  t.equal(entries.length, 4);
  t.match(entries[0], /ApiKey operator \(env:, no limit\); wrote no grant, so holds every permission: service\.admin\.read, .*service\.admin\.erase/);
  t.match(entries[1], /ApiKey monitoring .*; grants service\.admin\.read$/);
  t.match(entries[2], /grants nothing$/);
  t.match(entries[3], /expired 2001-01-01T00:00:00\.000Z/);
  t.end();
});

t.test('no line or warning carries a reference target or material', (t) => {
  const raw = {
    McpEndpoint: { Enabled: true, Authentication: [{ ApiKey: key('agent', 'file:/srv/very-secret-dir/agent.key') }] },
    DataEncryption: { KeyRing: 'env:KEYRING_VARIABLE_NAME' },
    Storage: { Database: 'libsql://db.example.org', AuthToken: 'systemd:db-token-credential' },
    Accounts: [
      {
        Id: 'alice',
        Imap: { Host: 'imap.example.org', Username: 'alice.private@example.org', Password: 'file:/run/secrets/alice-pw' },
        Folders: [{ Alias: 'inbox' }],
      },
    ],
  };
  const { lines, warnings } = describePosture(config(raw));
  const text = [...lines, ...warnings.map((w) => `${w.setting} ${w.message}`)].join('\n');
  t.notMatch(text, /very-secret-dir|KEYRING_VARIABLE_NAME|db-token-credential|alice-pw|alice\.private/);
  t.match(text, /DataEncryption:KeyRing: env: reference/);
  t.end();
});

t.test('a written setting this release does not serve: one not-served warning, never described as on', (t) => {
  const raw = {
    Accounts: [
      {
        Id: 'alice',
        Owner: 'Alice',
        Imap: { Host: 'imap.example.org', Username: 'alice', Password: 'env:PW' },
        Folders: [{ Alias: 'inbox' }, { Alias: 'junk' }],
      },
    ],
    MailRules: { Enabled: true },
    Spam: { Enabled: true },
    Telemetry: { Enabled: true },
    Answering: { Endpoints: [{ Alias: 'chat', BaseAddress: 'https://chat.example.org/v1', Model: 'm' }] },
    Embeddings: { BaseAddress: 'https://embed.example.org/v1', Model: 'e', Dimensions: 4 },
    EmbeddingBackfill: { Enabled: true },
  };
  const { lines, warnings } = describePosture(config(raw), { written: raw });
  const notServed = warnings.filter((w) => w.code === 'not-served');
  t.same(
    notServed.map((w) => w.setting),
    ['Accounts:[]:Owner'],
  );
  for (const warning of notServed) t.match(warning.message, /^has no effect in this release: \S/);
  t.ok(lines.includes('Not served by this release (accepted, no effect): Accounts:[]:Owner'));
  t.ok(lines.includes('MailRules: on, no rules (nothing is judged)'), 'mail rules are served: their line says what runs');
  t.ok(
    lines.includes('Spam: rspamd at http://127.0.0.1:11333, threshold 0.9, action Keyword $Junk, no trusted server headers; classifying arriving mail'),
    'spam classification is described with its engine, threshold and action',
  );
  t.ok(
    lines.includes(
      'Answering: endpoint chat at chat.example.org, at most 8 calls and 200000 characters per question, 200 questions per 1.00:00:00, audit kept 90.00:00:00; ask_mail offered while semantic search can place a query',
    ),
    'the declared chat endpoint is described with its bounds, and ask_mail as depending on semantic search',
  );
  t.ok(
    lines.includes(
      'Embeddings: OpenAiCompatible at embed.example.org, 4 dimensions, every passage of a message, at most 10000000 characters per 1.00:00:00, backfill every 00:01:00 when idle; semantic search starts once activated (mailcairn embedding activate)',
    ),
    'the declared profile is described as waiting for an activation, never as on',
  );
  const local = (extra: Record<string, unknown>) =>
    describePosture(config({ Embeddings: { Provider: 'Local', LocalThreads: 2, ...extra } })).lines.find((l) => l.startsWith('Embeddings:'));
  t.equal(
    local({}),
    'Embeddings: Local model declared, on 2 thread(s) below normal priority, the first 4 passage(s) of each message, at most 10000000 characters per 1.00:00:00, backfill every 00:01:00 when idle; semantic search starts once activated (mailcairn embedding activate)',
    'the local model embeds the first four passages of each message unless told otherwise, and says so',
  );
  t.match(local({ PassagesPerMessage: 64 }), /, the first 64 passage\(s\) of each message,/, 'a written bound is the one described');
  t.same(
    describePosture(config(raw)).warnings.filter((w) => w.code === 'not-served'),
    [],
    'without the written tree, nothing counts as written',
  );
  t.same(describePosture(config({}), { written: {} }).warnings, [], 'nothing written, no warning, though MailRules has defaults');
  t.end();
});
