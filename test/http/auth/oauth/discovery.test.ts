/**
 * Discovery of an authorization server's metadata against real
 * `oidc-provider` instances (test/harness/oauth-provider.ts), mounted under an
 * issuer path and answering at a chosen subset of the three addresses.
 *
 * Checked: the address list of the spec (path inserted after the origin
 * twice, then appended; the third dropped without a path; a terminating
 * slash removed); each address alone is found; the order is the spec's,
 * and an address answering with another issuer's document is passed over; a
 * configured `MetadataAddress` is the only address read; a failure is
 * retried only after its backoff (no request in between), a stale document
 * keeps serving while the server fails, a hanging server times out, and
 * nothing throws.
 */
import t from 'tap';
import { request } from 'undici';
import { createDiscovery, discoveryAddresses, retryDelayMs } from '../../../../http/auth/oauth/discovery.ts';
import { fetchJson } from '../../../../http/auth/oauth/fetch-json.ts';
import { fakeClock, seededRandom } from '../../../../runtime/clock.ts';
import { startOAuthProvider } from '../../../harness/oauth-provider.ts';
import { captureLog } from '../../../helpers/log-capture.ts';

const wellKnown = (requests: string[]): string[] => requests.filter((r) => r.includes('/.well-known/'));

t.test('the addresses, in order', async (t) => {
  t.same(discoveryAddresses('https://as.example/tenant/a'), [
    'https://as.example/.well-known/oauth-authorization-server/tenant/a',
    'https://as.example/.well-known/openid-configuration/tenant/a',
    'https://as.example/tenant/a/.well-known/openid-configuration',
  ]);
  t.same(
    discoveryAddresses('https://as.example/tenant/a/'),
    [
      'https://as.example/.well-known/oauth-authorization-server/tenant/a',
      'https://as.example/.well-known/openid-configuration/tenant/a',
      'https://as.example/tenant/a/.well-known/openid-configuration',
    ],
    'a terminating slash is removed first',
  );
  t.same(
    discoveryAddresses('https://as.example'),
    ['https://as.example/.well-known/oauth-authorization-server', 'https://as.example/.well-known/openid-configuration'],
    'no path: the third is dropped',
  );
  t.same(discoveryAddresses('https://as.example/'), discoveryAddresses('https://as.example'));
  t.same(discoveryAddresses('https://AS.example:443/x'), [
    'https://as.example/.well-known/oauth-authorization-server/x',
    'https://as.example/.well-known/openid-configuration/x',
    'https://as.example/x/.well-known/openid-configuration',
  ]);
});

t.test('backoff delays', async (t) => {
  const b = { baseMs: 1_000, maxMs: 300_000, jitter: 0.2 };
  t.equal(retryDelayMs(1, b, 0.5), 1_000);
  t.equal(retryDelayMs(2, b, 0.5), 2_000);
  t.equal(retryDelayMs(4, b, 0.5), 8_000);
  t.equal(retryDelayMs(30, b, 0.5), 300_000, 'capped');
  t.equal(retryDelayMs(1, b, 0), 800);
  t.equal(retryDelayMs(1, b, 0.999999), 1_200);
});

t.test('each address alone is found, for an issuer with a path', async (t) => {
  for (const [which, at] of [
    ['authorizationServer', 0],
    ['openidInserted', 1],
    ['openidAppended', 2],
  ] as const) {
    const provider = await startOAuthProvider({ users: ['alice'], issuerPath: '/tenant/a', discoveryAt: { [which]: true } });
    t.teardown(() => provider.stop());
    const discovery = createDiscovery();
    const found = await discovery.metadata({ Name: 'a', Issuer: provider.issuer });
    const addresses = discoveryAddresses(provider.issuer);
    t.same(found, { kind: 'found', metadata: { issuer: provider.issuer, jwksUri: `${provider.issuer}/jwks`, foundAt: addresses[at] } }, `${which} alone`);
    t.same(
      wellKnown(provider.requests()),
      addresses.slice(0, at + 1).map((a) => new URL(a).pathname),
      'tried in order, stopping at the first good one',
    );
  }
});

t.test('an issuer without a path: two addresses', async (t) => {
  const native = await startOAuthProvider({ users: ['alice'] });
  t.teardown(() => native.stop());
  t.match(
    await createDiscovery().metadata({ Name: 'a', Issuer: native.issuer }),
    { kind: 'found', metadata: { foundAt: `${native.issuer}/.well-known/oauth-authorization-server` } },
    'oidc-provider answers the first itself',
  );
  t.same(wellKnown(native.requests()), ['/.well-known/oauth-authorization-server']);

  const second = await startOAuthProvider({ users: ['alice'], discoveryAt: { openidInserted: true } });
  t.teardown(() => second.stop());
  t.match(await createDiscovery().metadata({ Name: 'a', Issuer: second.issuer }), {
    kind: 'found',
    metadata: { foundAt: `${second.issuer}/.well-known/openid-configuration` },
  });
  t.same(wellKnown(second.requests()), ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']);
});

t.test("another issuer's document is passed over; an exact match is required", async (t) => {
  const other = await startOAuthProvider({ users: ['bob'] });
  t.teardown(() => other.stop());
  // The first address answers with the other provider's real document, relayed.
  const provider = await startOAuthProvider({
    users: ['alice'],
    issuerPath: '/tenant/a',
    discoveryAt: { openidInserted: true, openidAppended: true },
    intercept: (req, res) => {
      if (req.url !== '/.well-known/oauth-authorization-server/tenant/a') return false;
      void request(`${other.issuer}/.well-known/openid-configuration`).then(async (upstream) => {
        res.statusCode = upstream.statusCode;
        res.setHeader('content-type', 'application/json');
        res.end(await upstream.body.text());
      });
      return true;
    },
  });
  t.teardown(() => provider.stop());
  const log = captureLog();
  const found = await createDiscovery({ log: log.log }).metadata({ Name: 'a', Issuer: provider.issuer });
  t.match(found, {
    kind: 'found',
    metadata: { issuer: provider.issuer, foundAt: `${new URL(provider.issuer).origin}/.well-known/openid-configuration/tenant/a` },
  });
  t.same(wellKnown(provider.requests()), ['/.well-known/oauth-authorization-server/tenant/a', '/.well-known/openid-configuration/tenant/a']);

  const slashed = await createDiscovery({ log: log.log }).metadata({ Name: 'a', Issuer: `${provider.issuer}/` });
  t.same(slashed, { kind: 'failed' }, 'the issuer written with a trailing slash is another issuer');
  const failure = log.lines.find((l) => l.event === 'oauth.discovery-failed');
  t.match(
    failure,
    { server: 'a', attempts: [{ reason: 'other-issuer' }, { reason: 'other-issuer' }, { reason: 'other-issuer' }] },
    'each address is logged with why it was passed over',
  );
});

t.test('a MetadataAddress is the only address read', async (t) => {
  const provider = await startOAuthProvider({ users: ['alice'], issuerPath: '/tenant/a', discoveryAt: { authorizationServer: true, openidAppended: true } });
  t.teardown(() => provider.stop());
  const address = `${provider.issuer}/.well-known/openid-configuration`;
  const found = await createDiscovery().metadata({ Name: 'a', Issuer: provider.issuer, MetadataAddress: address });
  t.match(found, { kind: 'found', metadata: { foundAt: address } });
  t.same(wellKnown(provider.requests()), ['/tenant/a/.well-known/openid-configuration']);
  const missing = await createDiscovery().metadata({ Name: 'a', Issuer: provider.issuer, MetadataAddress: `${provider.issuer}/nothing-here` });
  t.same(missing, { kind: 'failed' }, 'an override that does not answer is not worked around');
});

t.test('failures: retried after the backoff only; a stale document keeps serving; a hang times out', async (t) => {
  let failing = true;
  const provider = await startOAuthProvider({
    users: ['alice'],
    intercept: (req, res) => {
      if (!failing || !req.url?.includes('/.well-known/')) return false;
      res.statusCode = 503;
      res.end();
      return true;
    },
  });
  t.teardown(() => provider.stop());
  const clock = fakeClock(1_000_000);
  const log = captureLog();
  const discovery = createDiscovery({ clock, random: seededRandom(1), log: log.log, ttlMs: 60_000 });
  const server = { Name: 'a', Issuer: provider.issuer };
  const reads = (): number => wellKnown(provider.requests()).length;

  t.same(await discovery.metadata(server), { kind: 'failed' });
  t.equal(reads(), 2, 'both addresses tried');
  t.match(log.lines.at(-1), {
    event: 'oauth.discovery-failed',
    failures: 1,
    attempts: [
      { reason: 'status', status: 503 },
      { reason: 'status', status: 503 },
    ],
  });
  t.same(await discovery.metadata(server), { kind: 'failed' });
  t.equal(reads(), 2, 'inside the backoff nothing is requested');
  clock.advance(1_300);
  t.same(await discovery.metadata(server), { kind: 'failed' });
  t.equal(reads(), 4, 'after it, tried again');
  t.match(log.lines.at(-1), { failures: 2 });

  failing = false;
  clock.advance(1_000);
  t.same(await discovery.metadata(server), { kind: 'failed' }, 'the second backoff (about 2 s) is not over');
  clock.advance(1_500);
  t.match(await discovery.metadata(server), { kind: 'found' });
  const readsWhenFound = reads();
  t.match(await discovery.metadata(server), { kind: 'found' });
  t.equal(reads(), readsWhenFound, 'a found document is cached');

  failing = true;
  clock.advance(61_000);
  t.match(await discovery.metadata(server), { kind: 'found' }, 'stale: served while it is read again');
  await new Promise((r) => setTimeout(r, 200));
  t.ok(reads() > readsWhenFound, 'the stale document was read again');
  t.match(await discovery.metadata(server), { kind: 'found' }, 'the read failed, the stale document still serves');
  t.match(log.lines.at(-1), { event: 'oauth.discovery-failed', stale: true });

  // A server that accepts and never answers.
  const hanging = await startOAuthProvider({ users: ['alice'], intercept: (req) => req.url?.includes('/.well-known/') === true });
  t.teardown(() => hanging.stop());
  const started = Date.now();
  const hung = await createDiscovery({ fetch: fetchJson({ timeoutMs: 300 }) }).metadata({ Name: 'h', Issuer: hanging.issuer });
  t.same(hung, { kind: 'failed' });
  t.ok(Date.now() - started < 3_000, 'each address gave up at its timeout');

  const nowhere = await createDiscovery().metadata({ Name: 'n', Issuer: 'http://127.0.0.1:9' });
  t.same(nowhere, { kind: 'failed' }, 'a refused connection is a failure, not a throw');
});

t.test('a key set address in clear text to another host is not used', async (t) => {
  let issuer = '';
  const provider = await startOAuthProvider({
    users: ['alice'],
    discoveryAt: { authorizationServer: true },
    intercept: (req, res) => {
      if (req.url !== '/.well-known/oauth-authorization-server') return false;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ issuer, jwks_uri: 'http://keys.example/jwks' }));
      return true;
    },
  });
  issuer = provider.issuer;
  t.teardown(() => provider.stop());
  const log = captureLog();
  t.same(await createDiscovery({ log: log.log }).metadata({ Name: 'a', Issuer: provider.issuer }), { kind: 'failed' });
  t.match(log.lines.at(-1), { event: 'oauth.discovery-failed', attempts: [{ reason: 'no-usable-jwks_uri' }, { reason: 'status', status: 404 }] });
});
