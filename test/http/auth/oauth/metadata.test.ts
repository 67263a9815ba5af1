/**
 * The protected-resource metadata document (RFC 9728) over a real
 * node:http listener: its members; its path derived from `Resource`; served
 * only when the request's own scheme and host (as the listener worked them
 * out) are the resource's, else an empty 404; other paths and API-key-only
 * surfaces left to the listener's routing; and the address challenges carry.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { request } from 'undici';
import { CredentialEntry } from '../../../../config/schema/credential-entry.ts';
import { metadataDocument, metadataPathOf, metadataUrlOf, sameOrigin, serveMetadata } from '../../../../http/auth/oauth/metadata.ts';

const apiKey = CredentialEntry.parse({ ApiKey: { Name: 'ci', SecretReference: 'env:CI_KEY', Lifetime: 'NoLimit' } });
const oauth = (resource: string, required: string[], advertised: string[], issuers: string[]): CredentialEntry =>
  CredentialEntry.parse({
    OAuth: {
      Resource: resource,
      RequiredScopes: required,
      AdvertisedScopes: advertised,
      AuthorizationServers: issuers.map((Issuer, i) => ({ Name: `s${i}`, Issuer, AuthorizedSubjects: ['x'] })),
    },
  });

t.test('paths and addresses', async (t) => {
  t.equal(metadataPathOf('https://mail.example.test/mcp'), '/.well-known/oauth-protected-resource/mcp');
  t.equal(metadataPathOf('https://mail.example.test/api/admin'), '/.well-known/oauth-protected-resource/api/admin');
  t.equal(metadataPathOf('https://mail.example.test'), '/.well-known/oauth-protected-resource');
  t.equal(
    metadataUrlOf([apiKey, oauth('https://Mail.Example.test:443/mcp', [], [], ['https://as.example/'])]),
    'https://mail.example.test/.well-known/oauth-protected-resource/mcp',
  );
  t.equal(
    metadataUrlOf([oauth('https://mail.example.test:8443/mcp', [], [], ['https://as.example/'])]),
    'https://mail.example.test:8443/.well-known/oauth-protected-resource/mcp',
  );
  t.equal(metadataUrlOf([apiKey]), undefined, 'API keys alone publish nothing');
  t.equal(metadataUrlOf([]), undefined);
});

t.test('the document', async (t) => {
  const entries = [
    apiKey,
    oauth('https://mail.example.test/mcp', ['mail.read'], ['offline_access'], ['https://as.example/', 'https://login.example/tenant']),
    oauth('https://mail.example.test/mcp', ['mail.read', 'mail.write'], [], ['https://as.example/']),
  ];
  t.same(
    metadataDocument(entries),
    {
      resource: 'https://mail.example.test/mcp',
      authorization_servers: ['https://as.example/', 'https://login.example/tenant'],
      scopes_supported: ['mail.read', 'offline_access', 'mail.write'],
      bearer_methods_supported: ['header'],
      resource_name: 'mailcairn',
    },
    'issuers verbatim and scopes once each, in configuration order',
  );
  t.equal(metadataDocument([apiKey]), undefined);
});

t.test('origin matching', async (t) => {
  const r = 'https://mail.example.test/mcp';
  t.ok(sameOrigin(r, { scheme: 'https', host: 'mail.example.test' }));
  t.ok(sameOrigin(r, { scheme: 'https:', host: 'MAIL.example.test:443' }), 'case and the default port aside');
  t.notOk(sameOrigin(r, { scheme: 'http', host: 'mail.example.test' }));
  t.notOk(sameOrigin(r, { scheme: 'https', host: 'mail.example.test:8443' }));
  t.notOk(sameOrigin(r, { scheme: 'https', host: 'other.example.test' }));
  t.notOk(sameOrigin(r, { scheme: 'https', host: 'evil@mail.example.test' }), 'no userinfo smuggled into a host');
  t.notOk(sameOrigin(r, { scheme: 'https', host: 'mail.example.test/x' }));
  t.notOk(sameOrigin(r, { scheme: 'https', host: '' }));
  t.ok(sameOrigin('https://[::1]:8443/mcp', { scheme: 'https', host: '[::1]:8443' }));
});

t.test('served over HTTP', async (t) => {
  const entries = [apiKey, oauth('https://mail.example.test/mcp', ['mail.read'], ['offline_access'], ['https://as.example/'])];
  // The listener's own view of scheme and host; here stated by the test in headers of its own.
  const server: Server = createServer((req, res) => {
    const origin = { scheme: String(req.headers['x-test-scheme'] ?? 'http'), host: req.headers.host ?? '' };
    const list = req.headers['x-test-api-key-only'] ? [apiKey] : entries;
    if (serveMetadata(req, res, origin, list)) return;
    res.statusCode = 418;
    res.end('routed on');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const get = async (path: string, headers: Record<string, string>, method: 'GET' | 'HEAD' | 'POST' = 'GET') => {
    const res = await request(`${base}${path}`, { method, headers });
    return { status: res.statusCode, headers: res.headers, body: await res.body.text() };
  };
  const right = { host: 'mail.example.test', 'x-test-scheme': 'https' };

  const ok = await get('/.well-known/oauth-protected-resource/mcp', right);
  t.equal(ok.status, 200);
  t.match(ok.headers['content-type'], /^application\/json/);
  t.same(JSON.parse(ok.body), {
    resource: 'https://mail.example.test/mcp',
    authorization_servers: ['https://as.example/'],
    scopes_supported: ['mail.read', 'offline_access'],
    bearer_methods_supported: ['header'],
    resource_name: 'mailcairn',
  });
  t.equal((await get('/.well-known/oauth-protected-resource/mcp?x=1', right)).status, 200, 'a query does not change the path');
  const head = await get('/.well-known/oauth-protected-resource/mcp', right, 'HEAD');
  t.equal(head.status, 200);
  t.equal(head.body, '');
  t.match(await get('/.well-known/oauth-protected-resource/mcp', right, 'POST'), { status: 405, headers: { allow: 'GET, HEAD' } });

  for (const [what, headers] of [
    ['clear text', { host: 'mail.example.test', 'x-test-scheme': 'http' }],
    ['another host', { host: 'other.example.test', 'x-test-scheme': 'https' }],
    ['another port', { host: 'mail.example.test:8443', 'x-test-scheme': 'https' }],
  ] as const) {
    const refused = await get('/.well-known/oauth-protected-resource/mcp', headers);
    t.equal(refused.status, 404, what);
    t.equal(refused.body, '', `${what}: no detail`);
  }
  t.equal((await get('/.well-known/oauth-protected-resource', right)).status, 418, 'not the document path: routed on');
  t.equal((await get('/.well-known/oauth-protected-resource/mcp/', right)).status, 418);
  t.equal((await get('/mcp', right)).status, 418);
  t.equal((await get('/.well-known/oauth-protected-resource/mcp', { ...right, 'x-test-api-key-only': '1' })).status, 418, 'API keys alone: nothing published');
});
