/**
 * The OAuth sign-in's rules that need no server: the one-minute renewal
 * window, the metadata addresses tried for an issuer (RFC 8414, then OpenID
 * discovery), the loopback redirect addresses accepted, the PKCE pair
 * (RFC 7636 S256), and what a token answer must carry.
 */
import { createHash } from 'node:crypto';
import t from 'tap';
import { CliFailure } from '../../cli/failure.ts';
import { metadataAddresses } from '../../cli/oauth/discovery.ts';
import { newPkce } from '../../cli/oauth/interactive.ts';
import { DEFAULT_REDIRECT_URI, parseRedirectUri } from '../../cli/oauth/loopback.ts';
import { needsRenewal, readTokenAnswer, requireRefreshToken } from '../../cli/oauth/tokens.ts';

t.test('renewal within a minute of expiry, not before', async (t) => {
  const now = 1_000_000;
  t.ok(needsRenewal(now + 60_000, now), 'exactly a minute left');
  t.ok(needsRenewal(now + 59_999, now));
  t.ok(needsRenewal(now - 1, now), 'expired');
  t.notOk(needsRenewal(now + 60_001, now), 'a minute and a millisecond left');
});

t.test('metadata addresses: RFC 8414 first, then OpenID discovery', async (t) => {
  t.same(metadataAddresses('https://idp.example.org'), [
    'https://idp.example.org/.well-known/oauth-authorization-server',
    'https://idp.example.org/.well-known/openid-configuration',
  ]);
  t.same(metadataAddresses('https://idp.example.org/realms/ops/'), [
    'https://idp.example.org/.well-known/oauth-authorization-server/realms/ops',
    'https://idp.example.org/.well-known/openid-configuration/realms/ops',
    'https://idp.example.org/realms/ops/.well-known/openid-configuration',
  ]);
});

t.test('loopback redirect addresses', async (t) => {
  t.match(parseRedirectUri(DEFAULT_REDIRECT_URI), { host: '127.0.0.1', port: 8765, path: '/' });
  t.match(parseRedirectUri('http://[::1]:9000/callback'), { host: '::1', port: 9000, path: '/callback' });
  for (const refused of [
    'https://127.0.0.1:8765/',
    'http://localhost:8765/',
    'http://10.0.0.1:8765/',
    'http://127.0.0.1/',
    'http://127.0.0.1:8765/?a=b',
    'nonsense',
  ]) {
    t.throws(() => parseRedirectUri(refused), CliFailure, refused);
  }
});

t.test('PKCE: the challenge is the S256 of the verifier', async (t) => {
  const { verifier, challenge } = newPkce();
  t.match(verifier, /^[A-Za-z0-9_-]{43}$/, '256 random bits, base64url');
  t.equal(challenge, createHash('sha256').update(verifier).digest('base64url'));
  t.not(newPkce().verifier, verifier, 'fresh each time');
});

t.test('token answers', async (t) => {
  const now = 5_000_000;
  const good = readTokenAnswer({ status: 200, json: { access_token: 'a', token_type: 'Bearer', expires_in: 300, refresh_token: 'r' } }, 'https://idp', now);
  t.same(good, { accessToken: 'a', refreshToken: 'r', expiresAt: now + 300_000 });
  t.throws(() => readTokenAnswer({ status: 200, json: { access_token: 'a', token_type: 'DPoP', expires_in: 300 } }, 'https://idp', now), /not a Bearer token/);
  t.throws(() => readTokenAnswer({ status: 200, json: { token_type: 'Bearer' } }, 'https://idp', now), /no access token/);
  // No expires_in: the JWT's exp.
  const jwt = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from('{"exp":7000}').toString('base64url')}.`;
  t.equal(readTokenAnswer({ status: 200, json: { access_token: jwt, token_type: 'bearer' } }, 'https://idp', now).expiresAt, 7_000_000);
  const noRefresh = readTokenAnswer({ status: 200, json: { access_token: 'a', token_type: 'Bearer', expires_in: 300 } }, 'https://idp', now);
  t.throws(() => requireRefreshToken(noRefresh, 'https://idp', 'cli'), /issued no refresh token/);
});
