/**
 * The effective origin behind a reverse proxy: forwarded headers believed
 * only from trusted peers (empty list = everyone), IPv4-mapped peers
 * matched in both forms, the window of MaximumForwardedHops read right to
 * left, each bad component discarded on its own, X-Forwarded-For never
 * read, and the connection's own TLS reported apart from the scheme. One
 * case goes over a real node:http server to pin how Node hands repeated
 * headers over.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { request } from 'undici';
import { effectiveOrigin, isTrustedPeer, type ReverseProxySettings, validHost } from '../../http/proxy.ts';

const proxy = (TrustedProxies: string[], MaximumForwardedHops = 1): ReverseProxySettings => ({ TrustedProxies, MaximumForwardedHops });

function req(remoteAddress: string | undefined, headers: Record<string, string | string[]>, encrypted = false): IncomingMessage {
  return { socket: { remoteAddress, encrypted }, headers } as unknown as IncomingMessage;
}

const forwarded = { host: 'internal:8080', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'mail.example.org' };

t.test('forwarded headers are believed from a trusted peer only', (t) => {
  const settings = proxy(['10.0.0.0/8', '2001:db8::/32']);
  t.same(effectiveOrigin(req('10.1.2.3', forwarded), settings), { scheme: 'https', host: 'mail.example.org', overTls: false });
  t.same(effectiveOrigin(req('2001:db8::7', forwarded), settings), { scheme: 'https', host: 'mail.example.org', overTls: false });
  t.same(effectiveOrigin(req('192.0.2.1', forwarded), settings), { scheme: 'http', host: 'internal:8080', overTls: false }, 'untrusted: own scheme and Host');
  t.same(effectiveOrigin(req(undefined, forwarded), settings).scheme, 'http', 'no peer address: untrusted');
  t.same(effectiveOrigin(req('192.0.2.1', forwarded, true), settings), { scheme: 'https', host: 'internal:8080', overTls: true }, 'own TLS');
  t.end();
});

t.test('an empty list trusts every address, IPv4 and IPv6', (t) => {
  for (const peer of ['192.0.2.1', '2001:db8::1', '::ffff:192.0.2.1', 'fe80::1%eth0']) {
    t.equal(effectiveOrigin(req(peer, forwarded), proxy([])).scheme, 'https', peer);
  }
  t.end();
});

t.test('IPv4-mapped IPv6 peers match IPv4 networks, and the other way round', (t) => {
  t.ok(isTrustedPeer('::ffff:10.0.0.5', proxy(['10.0.0.0/8'])), 'dual-stack socket reporting a mapped peer');
  t.ok(isTrustedPeer('::FFFF:10.0.0.5', proxy(['10.0.0.5'])));
  t.ok(isTrustedPeer('10.0.0.5', proxy(['::ffff:10.0.0.0/104'])), 'a mapped network written in IPv6 covers the IPv4 peer');
  t.ok(isTrustedPeer('::ffff:10.0.0.5', proxy(['::ffff:10.0.0.5'])));
  t.notOk(isTrustedPeer('::ffff:11.0.0.5', proxy(['10.0.0.0/8'])));
  t.notOk(isTrustedPeer('10.0.0.5', proxy(['2001:db8::/32'])));
  t.notOk(isTrustedPeer('2001:db8::1', proxy(['0.0.0.0/0'])), 'all of IPv4 is not IPv6');
  t.ok(isTrustedPeer('fe80::1%eth0', proxy(['fe80::/10'])), 'a zone id is dropped');
  t.notOk(isTrustedPeer('not-an-address', proxy(['0.0.0.0/0', '::/0'])));
  t.end();
});

t.test('right to left, at most MaximumForwardedHops components', (t) => {
  const headers = { host: 'internal', 'x-forwarded-proto': 'http, https', 'x-forwarded-host': 'client.example.org, edge.example.org' };
  t.same(
    effectiveOrigin(req('10.0.0.1', headers), proxy(['10.0.0.0/8'], 1)),
    { scheme: 'https', host: 'edge.example.org', overTls: false },
    'one hop: the nearest proxy',
  );
  t.same(
    effectiveOrigin(req('10.0.0.1', headers), proxy(['10.0.0.0/8'], 2)),
    { scheme: 'http', host: 'client.example.org', overTls: false },
    'two hops: one further out',
  );
  t.same(effectiveOrigin(req('10.0.0.1', headers), proxy(['10.0.0.0/8'], 5)).host, 'client.example.org', 'fewer components than hops: all of them');
  t.end();
});

t.test('an unparseable component is discarded on its own', (t) => {
  const at = (headers: Record<string, string>, hops: number) => effectiveOrigin(req('10.0.0.1', { host: 'internal', ...headers }), proxy(['10.0.0.0/8'], hops));
  t.same(at({ 'x-forwarded-proto': 'https, gopher' }, 1).scheme, 'http', 'the only component in the window is bad: the connection’s own stands');
  t.same(at({ 'x-forwarded-proto': 'https, gopher' }, 2).scheme, 'https', 'the bad nearer component is skipped, the next one applies');
  t.same(at({ 'x-forwarded-proto': 'bogus, https' }, 2).scheme, 'https', 'a bad further component leaves the nearer value');
  t.same(at({ 'x-forwarded-proto': 'HTTPS' }, 1).scheme, 'https', 'case does not matter');
  t.same(at({ 'x-forwarded-proto': ' , ' }, 2).scheme, 'http', 'empty components are nothing');
  t.same(
    at({ 'x-forwarded-proto': 'https', 'x-forwarded-host': 'bad host!' }, 1),
    { scheme: 'https', host: 'internal', overTls: false },
    'a bad host does not cost the proto',
  );
  t.same(at({ 'x-forwarded-proto': 'nope', 'x-forwarded-host': 'Mail.Example.org:8443' }, 1).host, 'mail.example.org:8443', 'nor the other way round');
  t.same(at({ 'x-forwarded-host': 'good.example.org, evil.example.org/path' }, 2).host, 'good.example.org');
  t.end();
});

t.test('host components: names, addresses and ports', (t) => {
  for (const good of [
    'mail.example.org',
    'MAIL.example.org',
    'mail.example.org:443',
    '192.0.2.1',
    '192.0.2.1:8080',
    '[2001:db8::1]',
    '[2001:db8::1]:8443',
    'localhost',
    'under_score.example',
  ]) {
    t.not(validHost(good), null, good);
  }
  for (const bad of [
    '',
    'a b',
    'mail.example.org:0',
    'mail.example.org:65536',
    'mail.example.org:',
    'mail..example.org',
    '-mail.example.org',
    '[2001:db8::1',
    '[not-v6]',
    '[2001:db8::1]x',
    'user@host',
    'host/path',
    '2001:db8::1',
    `${'a'.repeat(64)}.example.org`,
  ]) {
    t.equal(validHost(bad), null, JSON.stringify(bad));
  }
  t.end();
});

t.test('X-Forwarded-For is never read; the connection’s own Host is validated too', (t) => {
  const settings = proxy(['10.0.0.0/8']);
  const origin = effectiveOrigin(req('10.0.0.1', { host: 'internal', 'x-forwarded-for': '203.0.113.9', 'x-forwarded-proto': 'https' }), settings);
  t.same(origin, { scheme: 'https', host: 'internal', overTls: false });
  t.equal(effectiveOrigin(req('192.0.2.1', { host: 'bad host' }), settings).host, '', 'no valid Host: empty');
  t.equal(effectiveOrigin(req('192.0.2.1', {}), settings).host, '');
  t.end();
});

t.test('over a real server: repeated headers are read as one list', async (t) => {
  let seen: unknown;
  const server = createServer((incoming, res) => {
    seen = effectiveOrigin(incoming, proxy(['127.0.0.0/8', '::1'], 2));
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;
  await request(`http://127.0.0.1:${port}/`, {
    headers: { 'x-forwarded-proto': ['http', 'https, http'], 'x-forwarded-host': ['a.example.org', 'b.example.org'] },
  }).then((res) => res.body.dump());
  t.same(seen, { scheme: 'https', host: 'a.example.org', overTls: false }, 'the window spans both header lines');
  t.end();
});
