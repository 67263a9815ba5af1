/**
 * Renewal of an OAuth sign-in's access token (client rule 7; docs/cli.md
 * "Renewal and the end of a sign-in"), against a real oidc-provider and the
 * real service:
 *
 * - an access token living 30 s is always within a minute of expiry, so every
 *   command renews it first (refresh_token grant with the resource) and the
 *   command succeeds with the new token, which is stored with its expiry;
 * - one living 10 minutes is not renewed;
 * - with rotation on at the provider, the rotated refresh token is discarded:
 *   the next renewal presents the refresh token issued at sign-in again. The
 *   provider takes that for reuse and refuses (invalid_grant), so the sign-in
 *   has ended; that is what the spec's rule does against a server that
 *   rotates and detects reuse, and the docs say so;
 * - a revoked refresh token: the next renewal gets invalid_grant, and the
 *   command fails with "The sign-in has ended", naming the profile.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { cli, cliHome, leaks, type CliHome } from './harness.ts';
import { NO_BROWSER, credentialFiles, signInInteractive, startOAuthDeployment, type OAuthDeployment } from './oauth-harness.ts';

type Stored = { sealedAccessToken: string; sealedRefreshToken: string; oauth: { accessTokenExpiresAt: string } };

function stored(home: CliHome): Stored {
  return JSON.parse(readFileSync(join(home.dir, 'credentials.json'), 'utf8')).profiles['127.0.0.1'];
}

async function signedIn(t: Test, d: OAuthDeployment): Promise<CliHome> {
  const home = cliHome(t);
  const { result } = await signInInteractive(home, d);
  t.equal(result.code, 0, result.stderr);
  return home;
}

// Each sign-in runs the client several times; the machine may be shared.
t.setTimeout(600_000);

t.test('an access token within a minute of expiry is renewed before the command, which succeeds', async (t) => {
  const d = await startOAuthDeployment(t, { provider: { accessTokenTtl: 30 } });
  const provider = d.providers[0]!;
  const home = await signedIn(t, d);
  const before = stored(home);
  t.equal(provider.tokenRequests().refresh_token ?? 0, 0, 'sign-in itself renews nothing');

  const status = await cli(home, ['status'], { env: NO_BROWSER });
  t.equal(status.code, 0, status.stderr);
  t.equal(provider.tokenRequests().refresh_token, 1, 'renewed once for the command');
  const after = stored(home);
  t.not(after.sealedAccessToken, before.sealedAccessToken, 'the new access token is stored');
  t.equal(after.sealedRefreshToken, before.sealedRefreshToken, 'the refresh token is the sign-in one');
  t.ok(Date.parse(after.oauth.accessTokenExpiresAt) > Date.parse(before.oauth.accessTokenExpiresAt), 'and its later expiry');

  const list = await cli(home, ['outbox', 'list'], { env: NO_BROWSER });
  t.equal(list.code, 0, list.stderr);
  t.equal(provider.tokenRequests().refresh_token, 2);
  const refreshTokens = provider.issued().refreshTokens;
  t.equal(refreshTokens.length, 1, 'no rotation: one refresh token ever issued');
  t.same(provider.presentedRefreshTokens(), [refreshTokens[0], refreshTokens[0]], 'each renewal presented it');
  t.same(leaks(d.secrets(), status.stdout, status.stderr, list.stdout, list.stderr, d.service.logs.raw(), credentialFiles(home)), []);
});

t.test('an access token with more than a minute left is not renewed', async (t) => {
  const d = await startOAuthDeployment(t, { provider: { accessTokenTtl: 600 } });
  const home = await signedIn(t, d);
  const before = stored(home);
  const status = await cli(home, ['status'], { env: NO_BROWSER });
  t.equal(status.code, 0, status.stderr);
  t.equal(d.providers[0]!.tokenRequests().refresh_token ?? 0, 0);
  t.same(stored(home), before, 'nothing rewritten');
});

t.test('a rotated refresh token is discarded: the next renewal presents the sign-in one', async (t) => {
  const d = await startOAuthDeployment(t, { provider: { accessTokenTtl: 30 } });
  const provider = d.providers[0]!;
  const home = await signedIn(t, d);
  const original = provider.issued().refreshTokens[0]!;
  provider.setRotation(true);

  const first = await cli(home, ['status'], { env: NO_BROWSER });
  t.equal(first.code, 0, first.stderr);
  const issued = provider.issued().refreshTokens;
  t.equal(issued.length, 2, 'the provider rotated: a second refresh token was issued');
  const rotated = issued.find((r) => r !== original)!;

  const second = await cli(home, ['status'], { env: NO_BROWSER });
  t.same(provider.presentedRefreshTokens(), [original, original], 'the rotated one was never presented');
  t.notOk(provider.presentedRefreshTokens().includes(rotated));
  // oidc-provider treats the second use of a rotated-away token as reuse and revokes the grant.
  t.equal(second.code, 1);
  t.match(second.stderr, /The sign-in has ended/);
  t.same(leaks(d.secrets(), first.stdout, first.stderr, second.stdout, second.stderr, credentialFiles(home)), []);
});

t.test('a revoked refresh token ends the sign-in at the next renewal', async (t) => {
  const d = await startOAuthDeployment(t, { provider: { accessTokenTtl: 30 } });
  const provider = d.providers[0]!;
  const home = await signedIn(t, d);
  await provider.revoke(provider.issued().refreshTokens[0]!, provider.publicClientId);

  const status = await cli(home, ['status'], { env: NO_BROWSER });
  t.equal(status.code, 1);
  t.match(status.stderr, /The sign-in has ended: .* refused the refresh token stored in profile 127\.0\.0\.1 \(invalid_grant: it expired or was revoked\)/);
  t.match(status.stderr, /Log in again: mailcairn login --endpoint 127\.0\.0\.1 --mode interactive --client-id mailcairn-cli/);
  t.equal(status.stdout, '', 'nothing was read from the deployment');
  t.same(leaks(d.secrets(), status.stdout, status.stderr, d.service.logs.raw()), []);
});
