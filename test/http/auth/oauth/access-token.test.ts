/**
 * Access tokens judged against real authorization servers: `oidc-provider`
 * (test/harness/oauth-provider.ts) issues RFC 9068 JWT access tokens for the
 * resource through a completed authorization-code flow with a resource
 * indicator; the service discovers it and reads its key set over HTTP.
 *
 * Checked: a good token is admitted (RS256, ES256; `scope` or `scp`; `aud`
 * alone or in a list) with the entry, subject and scopes; each check fails on
 * its own with its own cause (tampered signature, HS256 keyed with the
 * public JWK, `alg` none, foreign or unconfigured issuer, wrong audience,
 * expired and not yet valid beyond the 60 s skew, unknown key, dead server,
 * clear text, malformed), and every 401 is byte-for-byte the same answer on
 * the wire; an unauthorized subject is a plain 403 and a missing scope a 403
 * insufficient_scope naming the required scopes; one server's keys never
 * vouch for another's tokens; a rotated signing key is picked up on the
 * first token after the refresh interval, and not before; no log line
 * carries a token.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { base64url, decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair, importJWK, type JWK, SignJWT } from 'jose';
import t from 'tap';
import { request } from 'undici';
import { CredentialEntry } from '../../../../config/schema/credential-entry.ts';
import { judgeAccessToken, type TokenJudgement } from '../../../../http/auth/oauth/access-token.ts';
import { answerTokenRefusal } from '../../../../http/auth/oauth/challenge.ts';
import { createKeySets, type KeySets } from '../../../../http/auth/oauth/key-sets.ts';
import { metadataUrlOf } from '../../../../http/auth/oauth/metadata.ts';
import { fakeClock } from '../../../../runtime/clock.ts';
import { startOAuthProvider, type OAuthProvider } from '../../../harness/oauth-provider.ts';
import { captureLog } from '../../../helpers/log-capture.ts';

const RESOURCE = 'https://mail.example.test/mcp';
const SCOPES = ['mail.read', 'mail.write'];

type ServerSpec = { Name: string; Issuer: string; AuthorizedSubjects: string[]; MetadataAddress?: string };

function entry(servers: ServerSpec[], required: string[] = SCOPES): CredentialEntry {
  return CredentialEntry.parse({
    OAuth: { Resource: RESOURCE, RequiredScopes: required, AdvertisedScopes: ['offline_access'], AuthorizationServers: servers },
  });
}

/** A compact JWS with the given header and payload, signed by `sign` (or unsigned). */
function compact(header: object, payload: object, signature = ''): string {
  return `${base64url.encode(JSON.stringify(header))}.${base64url.encode(JSON.stringify(payload))}.${signature}`;
}

/** Re-sign a real token's payload with a key of our choosing. */
async function resign(token: string, key: JWK, header: Record<string, unknown>, payloadChanges: Record<string, unknown> = {}): Promise<string> {
  const payload = { ...decodeJwt(token), ...payloadChanges };
  const alg = String(header.alg);
  return new SignJWT(payload).setProtectedHeader({ ...header, alg }).sign(await importJWK(key, alg));
}

/** Flip one character in the middle of the signature (the last one may only carry padding bits). */
function tamper(token: string): string {
  const [h, p, s] = token.split('.') as [string, string, string];
  const i = Math.floor(s.length / 2);
  return `${h}.${p}.${s.slice(0, i)}${s[i] === 'A' ? 'B' : 'A'}${s.slice(i + 1)}`;
}

/** A node:http server answering as the pipeline would: judge the bearer token, refuse with the module's answer, or 200. */
async function resourceServer(entries: CredentialEntry[], keySets: KeySets, now: () => number): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
    void judgeAccessToken(token, entries, { overTls: req.headers['x-test-tls'] !== 'no', now: now(), keySets }).then((judgement) => {
      if (judgement.kind === 'admitted') {
        res.statusCode = 200;
        res.end('served');
      } else answerTokenRefusal(res, judgement, metadataUrlOf(entries));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** What a client sees of an answer (the Date header aside). */
async function seen(
  url: string,
  token: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  const res = await request(url, { method: 'POST', headers: { authorization: `Bearer ${token}`, ...headers } });
  const { date: _date, ...rest } = res.headers;
  return { status: res.statusCode, headers: rest, body: await res.body.text() };
}

t.test('access tokens against oidc-provider', async (t) => {
  const a = await startOAuthProvider({ users: ['alice', 'mallory'], resource: { indicator: RESOURCE, scopes: SCOPES } });
  t.teardown(() => a.stop());
  const b = await startOAuthProvider({
    users: ['bob'],
    issuerPath: '/tenant/b',
    discoveryAt: { authorizationServer: true },
    resource: { indicator: RESOURCE, scopes: SCOPES, alg: 'ES256' },
  });
  t.teardown(() => b.stop());

  const entries = [
    entry([
      { Name: 'a', Issuer: a.issuer, AuthorizedSubjects: ['alice'] },
      { Name: 'b', Issuer: b.issuer, AuthorizedSubjects: ['bob'] },
    ]),
  ];
  const capture = captureLog();
  const clock = fakeClock(Date.now());
  const keySets = createKeySets({ clock, log: capture.log });
  const judge = (token: string, now = Date.now(), overTls = true): Promise<TokenJudgement> => judgeAccessToken(token, entries, { overTls, now, keySets });

  const good = await a.mintAccessToken('alice');
  const minted: string[] = [good];
  const mint = async (provider: OAuthProvider, user: string, options?: Parameters<OAuthProvider['mintAccessToken']>[1]): Promise<string> => {
    const token = await provider.mintAccessToken(user, options);
    minted.push(token);
    return token;
  };

  await t.test('a good token is admitted with its entry, subject and scopes', async (t) => {
    t.same(await judge(good), { kind: 'admitted', entryIndex: 0, server: 'a', issuer: a.issuer, subject: 'alice', scopes: SCOPES });
    const es = await mint(b, 'bob');
    t.equal(decodeProtectedHeader(es).alg, 'ES256', 'the second server signs with ES256');
    t.match(await judge(es), { kind: 'admitted', server: 'b', issuer: b.issuer, subject: 'bob' });
    t.match(await judge(await mint(a, 'alice', { claims: { scope: undefined, scp: SCOPES } })), { kind: 'admitted', scopes: SCOPES }, 'scopes in an scp list');
    t.match(
      await judge(await mint(a, 'alice', { claims: { aud: ['https://elsewhere.example', RESOURCE] } })),
      { kind: 'admitted' },
      'aud as a list holding the resource',
    );
  });

  await t.test('each check fails on its own, with its own cause', async (t) => {
    const jwks = ((await (await request(a.jwksUri)).body.json()) as { keys: JWK[] }).keys;
    const publicJwk = jwks.find((k) => k.kid === 'test-rs256')!;
    const hmac = await new SignJWT(decodeJwt(good))
      .setProtectedHeader({ alg: 'HS256', kid: 'test-rs256', typ: 'at+jwt' })
      .sign(new TextEncoder().encode(JSON.stringify(publicJwk)));
    const none = compact({ alg: 'none', typ: 'at+jwt' }, decodeJwt(good));
    const { exp } = decodeJwt(good) as { exp: number };
    const stranger = await generateKeyPair('RS256', { extractable: true });
    const strangerJwk = { ...(await exportJWK(stranger.privateKey)), kid: 'not-published' };

    const cases: [string, string, string, number?][] = [
      ['tampered signature', tamper(good), 'signature'],
      ['HS256 keyed with the published public JWK', hmac, 'algorithm'],
      ['alg none', none, 'algorithm'],
      ['an issuer no entry names', await mint(a, 'alice', { claims: { iss: 'https://issuer.example' } }), 'issuer'],
      ['the issuer with a trailing slash added', await mint(a, 'alice', { claims: { iss: `${a.issuer}/` } }), 'issuer'],
      ['another audience', await mint(a, 'alice', { claims: { aud: 'https://mail.example.test/other' } }), 'audience'],
      ['expired beyond the skew', good, 'expired', (exp + 61) * 1000],
      ['not yet valid beyond the skew', await mint(a, 'alice', { claims: { nbf: Math.floor(Date.now() / 1000) + 120 } }), 'not-yet-valid'],
      ['a key the server never published', await resign(good, strangerJwk, { alg: 'RS256', kid: 'not-published', typ: 'at+jwt' }), 'unknown-key'],
      ['no exp', await mint(a, 'alice', { claims: { exp: undefined } }), 'malformed'],
      ['not a JWT', 'opaque-token-value', 'malformed'],
      ['an encrypted (five-part) token', 'a.b.c.d.e', 'malformed'],
    ];
    for (const [what, token, cause, at] of cases) {
      t.match(await judge(token, at), { kind: 'refused', status: 401, cause }, what);
    }
    t.match(await judge(good, (exp + 59) * 1000), { kind: 'admitted' }, 'expired within the skew is still admitted');
    t.match(
      await judge(await mint(a, 'alice', { claims: { nbf: Math.floor(Date.now() / 1000) + 50 } })),
      { kind: 'admitted' },
      'nbf within the skew is admitted',
    );
    t.match(await judge(good, Date.now(), false), { kind: 'refused', status: 401, cause: 'clear-text' }, 'a good token over clear text');

    t.same(
      await judge(await mint(a, 'mallory')),
      { kind: 'other-subject', status: 403, cause: 'subject', server: 'a' },
      'a subject the server block does not authorize',
    );
    t.same(
      await judge(await mint(a, 'alice', { scopes: ['mail.read'] })),
      { kind: 'insufficient-scope', status: 403, cause: 'scope', scopes: SCOPES, entryIndex: 0, server: 'a' },
      'a missing scope names the required scopes',
    );
    t.same(
      await judge(await mint(a, 'mallory', { scopes: ['mail.read'] })),
      { kind: 'other-subject', status: 403, cause: 'subject', server: 'a' },
      'the subject is judged before the scope',
    );
  });

  await t.test('several entries naming one issuer: any one admits; the first short of scope is named', async (t) => {
    const several = [
      CredentialEntry.parse({ ApiKey: { Name: 'ci', SecretReference: 'env:CI_KEY', Lifetime: 'NoLimit' } }),
      entry([{ Name: 'a-full', Issuer: a.issuer, AuthorizedSubjects: ['alice'] }]),
      entry([{ Name: 'a-read', Issuer: a.issuer, AuthorizedSubjects: ['mallory'] }], ['mail.read']),
    ];
    const judgeIn = (token: string) => judgeAccessToken(token, several, { overTls: true, now: Date.now(), keySets });
    t.match(await judgeIn(await mint(a, 'mallory', { scopes: ['mail.read'] })), { kind: 'admitted', entryIndex: 2, server: 'a-read', subject: 'mallory' });
    t.match(await judgeIn(good), { kind: 'admitted', entryIndex: 1, server: 'a-full' });
    t.match(
      await judgeIn(await mint(a, 'alice', { scopes: ['mail.read'] })),
      { kind: 'insufficient-scope', entryIndex: 1, scopes: SCOPES },
      "alice's entry wants both scopes",
    );
    t.match(await judgeIn(await mint(b, 'bob')), { kind: 'refused', cause: 'issuer' }, 'a server of another endpoint is unknown here');
  });

  await t.test("one server's keys never vouch for another's tokens", async (t) => {
    const bKey = b.signingKeys()[0]!;
    const aToken = good;
    // Signed with b's real key, claiming a's issuer: tried against a's set only.
    t.match(
      await judge(await resign(aToken, bKey, { alg: 'ES256', kid: bKey.kid, typ: 'at+jwt' })),
      { kind: 'refused', cause: 'unknown-key', server: 'a' },
      "b's key id is not in a's set",
    );
    // a's RSA key and a's key id, claiming b's issuer: b has an RSA key of that name too, and it does not verify.
    const aKey = a.signingKeys().find((k) => k.kid === 'test-rs256')!;
    const forged = await resign(aToken, aKey, { alg: 'RS256', kid: 'test-rs256', typ: 'at+jwt' }, { iss: b.issuer, sub: 'bob' });
    t.match(await judge(forged), { kind: 'refused', cause: 'signature', server: 'b' }, "a token naming b's issuer is checked with b's keys only");
    t.match(
      await judge(await resign(aToken, aKey, { alg: 'RS256', kid: 'test-rs256', typ: 'at+jwt' })),
      { kind: 'admitted' },
      'the same key under its own issuer verifies',
    );
  });

  await t.test('every 401 is the same answer on the wire; the 403s are theirs', async (t) => {
    const server = await resourceServer(entries, keySets, () => Date.now());
    t.teardown(() => server.close());
    const reference = await seen(server.url, '');
    t.equal(reference.status, 401);
    t.equal(reference.body, '');
    t.equal(
      reference.headers['www-authenticate'],
      `Bearer realm="mailcairn", resource_metadata="https://mail.example.test/.well-known/oauth-protected-resource/mcp"`,
    );
    const jwks = ((await (await request(a.jwksUri)).body.json()) as { keys: JWK[] }).keys;
    const refusals = [
      tamper(good),
      await new SignJWT(decodeJwt(good)).setProtectedHeader({ alg: 'HS256', kid: 'test-rs256' }).sign(new TextEncoder().encode(JSON.stringify(jwks[0]))),
      compact({ alg: 'none' }, decodeJwt(good)),
      await mint(a, 'alice', { claims: { iss: 'https://issuer.example' } }),
      await mint(a, 'alice', { claims: { aud: 'https://mail.example.test/other' } }),
      await mint(a, 'alice', { claims: { exp: Math.floor(Date.now() / 1000) - 120 } }),
      await mint(a, 'alice', { claims: { nbf: Math.floor(Date.now() / 1000) + 3600 } }),
      'opaque-token-value',
    ];
    for (const [i, token] of refusals.entries()) t.same(await seen(server.url, token), reference, `refusal ${i} answers exactly as no credential`);
    t.same(await seen(server.url, good, { 'x-test-tls': 'no' }), reference, 'a good token over clear text answers exactly as no credential');

    t.same(await seen(server.url, good), { status: 200, headers: (await seen(server.url, good)).headers, body: 'served' });
    const other = await seen(server.url, await mint(a, 'mallory'));
    t.equal(other.status, 403);
    t.equal(other.body, '');
    t.equal(other.headers['www-authenticate'], undefined, 'a plain 403 carries no challenge');
    const scope = await seen(server.url, await mint(a, 'alice', { scopes: ['mail.read'] }));
    t.equal(scope.status, 403);
    t.equal(scope.body, '');
    t.equal(
      scope.headers['www-authenticate'],
      `Bearer realm="mailcairn", error="insufficient_scope", scope="mail.read mail.write", resource_metadata="https://mail.example.test/.well-known/oauth-protected-resource/mcp"`,
    );
  });

  await t.test('a rotated signing key is picked up after the refresh interval, not before', async (t) => {
    const jwksReads = (): number => a.requests().filter((r) => r === '/jwks').length;
    const before = jwksReads();
    const kid = await a.rotateSigningKey();
    const rotated = await mint(a, 'alice');
    t.equal(decodeProtectedHeader(rotated).kid, kid, 'the provider signs with the new key');
    clock.advance(5_000);
    t.match(await judge(rotated), { kind: 'refused', cause: 'unknown-key' }, 'within 30 s of the last read the set is not read again');
    t.match(await judge(rotated), { kind: 'refused', cause: 'unknown-key' });
    t.equal(jwksReads(), before, 'no read was made for the unknown key id');
    clock.advance(30_000);
    t.match(await judge(rotated), { kind: 'admitted', subject: 'alice' }, 'after the interval the unknown key id reads the set again');
    t.equal(jwksReads(), before + 1, 'once');
    t.match(await judge(rotated), { kind: 'admitted' });
    t.match(await judge(good), { kind: 'admitted' }, 'a token of the old key, still published, is still admitted');
    t.equal(jwksReads(), before + 1, 'known key ids read nothing');
  });

  await t.test('a server that cannot be discovered refuses its tokens, and nothing crashes', async (t) => {
    const dead = await startOAuthProvider({ users: ['dora'], resource: { indicator: RESOURCE, scopes: SCOPES } });
    const token = await dead.mintAccessToken('dora');
    await dead.stop();
    const deadEntries = [entry([{ Name: 'dead', Issuer: dead.issuer, AuthorizedSubjects: ['dora'] }])];
    const verdict = await judgeAccessToken(token, deadEntries, { overTls: true, now: Date.now(), keySets });
    t.same(verdict, { kind: 'refused', status: 401, cause: 'discovery-failed', server: 'dead' });
  });

  t.test('no log line carries a token', async (t) => {
    const raw = capture.raw();
    t.ok(
      capture.lines.some((l) => l.event === 'oauth.keys-loaded'),
      'the key sets were logged',
    );
    for (const token of minted) {
      t.notOk(raw.includes(token), 'token absent');
      t.notOk(raw.includes(token.split('.')[2]!), 'signature absent');
    }
  });
});
