/**
 * The DNS-rebinding guard's decision table (http/host-guard.ts): which
 * `Host` values are served, when the check applies, and which names a
 * configuration adds. The listeners' answers are driven over HTTP in
 * host-guard-listeners.test.ts; here the decisions themselves, including
 * the one no loopback test can reach (an authenticated listener reached at
 * a non-loopback address), read from a request that names its connection's
 * local address.
 */
import type { IncomingMessage } from 'node:http';
import t from 'tap';
import { validateConfig } from '../../config/load.ts';
import { createHostGuard, guardApplies, hostAllowed, hostGuardOf } from '../../http/host-guard.ts';
import { Codes } from '../../runtime/errors.ts';
import { profile } from '../config/fixtures.ts';
import { captureLog } from '../helpers/log-capture.ts';

const none = new Set<string>();
const configured = new Set(['mail.example.org']);

t.test('IP literals and loopback names are served, whatever the port', async (t) => {
  for (const host of [
    '127.0.0.1',
    '127.0.0.1:8080',
    '127.0.0.2:1',
    '10.0.0.7:8081',
    '192.0.2.10',
    '[::1]',
    '[::1]:8080',
    '[2001:db8::1]:443',
    '[::ffff:127.0.0.1]:80',
    'localhost',
    'localhost:8080',
    'LOCALHOST:8080',
    'localhost.:8080',
    'localhost:',
    'app.localhost:3000',
    'a.b.localhost',
  ]) {
    t.ok(hostAllowed(host, none), `${host} is served`);
  }
});

t.test('anything else is refused, including a missing or malformed Host', async (t) => {
  for (const host of [
    undefined,
    '',
    ' ',
    'evil.example.com',
    'evil.example.com:8080',
    'localhost.evil.example.com',
    'evillocalhost',
    'localhost:80:80',
    'localhost:http',
    'localhost:123456',
    '[::1',
    '[localhost]',
    '[127.0.0.1]',
    '::1',
    '[fe80::1%25eth0]',
    '127.0.0.1.',
    '2130706433',
    '0x7f.0.0.1',
    'a..localhost',
    'user@localhost',
    'localhost/evil',
    'mail.example.org',
  ]) {
    t.notOk(hostAllowed(host, none), `${JSON.stringify(host)} is refused`);
  }
});

t.test('a configured name is served by its name alone, case and one trailing dot aside', async (t) => {
  for (const host of ['mail.example.org', 'mail.example.org:8443', 'MAIL.Example.ORG', 'mail.example.org.:443']) {
    t.ok(hostAllowed(host, configured), `${host} is served`);
  }
  for (const host of ['example.org', 'x.mail.example.org', 'mail.example.org.evil.example.com', 'mail.example.org..']) {
    t.notOk(hostAllowed(host, configured), `${host} is refused`);
  }
});

t.test('the check applies to every connection of a surface without credentials, and to loopback connections of one with', async (t) => {
  t.same(
    {
      open: ['127.0.0.1', '::1', '10.0.0.7', '::ffff:192.0.2.1', undefined].map((address) => guardApplies(false, address)),
      authenticated: ['127.0.0.1', '127.0.0.2', '::1', '::ffff:127.0.0.1', undefined].map((address) => guardApplies(true, address)),
      authenticatedElsewhere: ['10.0.0.7', '192.0.2.1', '2001:db8::1', '::ffff:192.0.2.1'].map((address) => guardApplies(true, address)),
    },
    { open: [true, true, true, true, true], authenticated: [true, true, true, true, true], authenticatedElsewhere: [false, false, false, false] },
  );
});

/** A request as the guard reads it: its Host, its target, and its connection's local address. */
function requestAt(localAddress: string, host: string | undefined, url = '/mcp'): IncomingMessage {
  return { headers: host === undefined ? {} : { host }, url, socket: { localAddress } } as unknown as IncomingMessage;
}

t.test('the guard: its connection, then its Host, then an absolute-form target', async (t) => {
  let refused = 0;
  const open = createHostGuard({ credentialRequired: false, names: ['Mail.Example.org'] }, () => (refused += 1));
  const authenticated = createHostGuard({ credentialRequired: true, names: [] });

  t.ok(open.admits(requestAt('127.0.0.1', 'localhost:8080')));
  t.ok(open.admits(requestAt('10.0.0.7', 'mail.example.org')), 'a configured name, case aside');
  t.notOk(open.admits(requestAt('10.0.0.7', 'evil.example.com')), 'no credential: checked wherever the connection arrived');
  t.notOk(open.admits(requestAt('127.0.0.1', undefined)), 'no Host');
  t.notOk(open.admits(requestAt('127.0.0.1', 'localhost', 'http://evil.example.com/mcp')), 'an absolute-form target names the host (RFC 9112 3.2.2)');
  t.ok(open.admits(requestAt('127.0.0.1', 'localhost', 'http://127.0.0.1:8080/mcp')));
  t.notOk(open.admits(requestAt('127.0.0.1', 'localhost', 'not a url')));
  t.ok(open.admits(requestAt('127.0.0.1', 'localhost', '*')), 'asterisk form (OPTIONS *)');
  t.equal(refused, 4, 'each refusal is reported');

  t.notOk(authenticated.admits(requestAt('127.0.0.1', 'evil.example.com')), 'credentials required, reached over loopback: checked');
  t.ok(authenticated.admits(requestAt('10.0.0.7', 'evil.example.com')), 'credentials required, reached elsewhere: not checked');
});

t.test('a configuration adds its surface’s profile domains, OAuth resource host and the public base address’s host, nothing else', async (t) => {
  const validation = validateConfig({
    McpEndpoint: { Enabled: true, Transport: 'HttpsOnly', Https: { Endpoints: [profile('mcp', 'mcp.example.org')] } },
    AdminEndpoint: {
      Enabled: true,
      Authentication: [
        { ApiKey: { Name: 'ops', SecretReference: 'file:/etc/mailcairn/ops.key', Lifetime: 'NoLimit' } },
        {
          OAuth: {
            Resource: 'https://ops.example.org/api/admin',
            AuthorizationServers: [{ Name: 'id', Issuer: 'https://id.example.org', AuthorizedSubjects: ['ops'] }],
          },
        },
      ],
      Https: { Endpoints: [profile('admin', 'admin.example.org', 9443)] },
    },
    HealthEndpoints: { Transport: 'HttpsOnly', Https: { Endpoints: [profile('health', 'health.example.org', 10443)] } },
    Deployment: { PublicBaseAddress: 'https://Links.Example.org:4443/base' },
    Storage: { Database: '/nonexistent/unused.db' },
  });
  if (!validation.ok) throw new Error(JSON.stringify(validation.problems));
  const config = validation.config;
  const mcp = hostGuardOf(config, 'McpEndpoint');
  const admin = hostGuardOf(config, 'AdminEndpoint');
  const health = hostGuardOf(config, 'HealthEndpoints');
  const served = (guard: typeof mcp, localAddress: string) =>
    ['mcp.example.org', 'admin.example.org', 'ops.example.org', 'health.example.org', 'links.example.org:443', 'evil.example.com', '192.0.2.1'].filter((host) =>
      guard.admits(requestAt(localAddress, host)),
    );
  t.same(served(mcp, '192.0.2.1'), ['mcp.example.org', 'links.example.org:443', '192.0.2.1'], 'MCP, no credential: checked everywhere');
  t.same(served(health, '192.0.2.1'), ['health.example.org', 'links.example.org:443', '192.0.2.1'], 'health: never a credential, checked everywhere');
  t.same(served(admin, '127.0.0.1'), ['admin.example.org', 'ops.example.org', 'links.example.org:443', '192.0.2.1'], 'admin with a credential, over loopback');
  t.equal(served(admin, '192.0.2.1').length, 7, 'admin with a credential, reached elsewhere: not checked');
});

t.test('refusals are logged without the Host, at most once a minute, with the count', async (t) => {
  const logs = captureLog();
  const validation = validateConfig({ Storage: { Database: '/nonexistent/unused.db' } });
  if (!validation.ok) throw new Error(JSON.stringify(validation.problems));
  const guard = hostGuardOf(validation.config, 'HealthEndpoints', logs.log);
  for (let i = 0; i < 5; i++) guard.admits(requestAt('127.0.0.1', 'rebound.evil.example.com'));
  guard.admits(requestAt('127.0.0.1', 'localhost'));
  t.match(logs.events('http.host-refused'), [{ level: 40, section: 'HealthEndpoints', refusals: 1, setting: 'Deployment:PublicBaseAddress' }]);
  t.equal(logs.events('http.host-refused').length, 1, 'one line for a burst');
  t.notOk(logs.raw().includes('evil'), 'the refused Host is not logged');
});

t.test('the refusal is a row of the error table: 403, as the MCP SDK’s own guard answers', async (t) => {
  t.same(Codes.E_HTTP_HOST_REFUSED, { status: 403, retryable: false, public: null, msg: "The request's Host names nothing this listener serves" });
});
