/**
 * `login --mode interactive` end to end (docs/cli.md "Signing in with
 * OAuth"): a real oidc-provider, the real service behind a TLS proxy, the
 * client as a subprocess, and a scripted user agent walking the address the
 * client prints through the provider's login and consent to the client's
 * loopback catcher.
 *
 * Checked: the sign-in completes, the session route admits the token, the
 * profile stores the mode, the sealed tokens and the renewal values; the
 * authorization request carries PKCE S256, the resource and offline access;
 * the catcher's page; a redirect with another state is refused and nothing
 * is stored; a refusal at the provider (access_denied) is a clear failure;
 * the credential file is 0600 in a 0700 directory; no token reaches an
 * output, the service's log, or the credential file in clear; `status`
 * shows the mode; `logout` forgets and revokes nothing.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { cli, cliHome, leaks } from './harness.ts';
import { ADMIN_SCOPE, NO_BROWSER, credentialFiles, signInInteractive, startOAuthDeployment } from './oauth-harness.ts';

// Each sign-in runs the client several times; the machine may be shared.
t.setTimeout(600_000);

t.test('interactive sign-in, end to end', async (t) => {
  const d = await startOAuthDeployment(t);
  const home = cliHome(t);
  const { result, page } = await signInInteractive(home, d);
  t.equal(result.code, 0, result.stderr);
  t.match(result.stdout, /Signed in to https:\/\/127\.0\.0\.1:\d+ as profile 127\.0\.0\.1/);
  t.equal(page?.status, 200, 'the catcher answered the browser');
  t.match(page?.body, /You can close this window/);

  const authorize = d.providers[0]!.requests().find((r) => r.startsWith('/auth?'))!;
  const asked = new URL(authorize, 'http://x').searchParams;
  t.equal(asked.get('code_challenge_method'), 'S256');
  t.equal(asked.get('client_id'), 'mailcairn-cli');
  t.equal(asked.get('resource'), d.resource, 'the resource from the protected-resource metadata');
  t.same(asked.get('scope')?.split(' ').sort(), [ADMIN_SCOPE, 'offline_access'].sort(), 'the scopes the deployment lists');
  t.equal(asked.get('redirect_uri'), d.redirectUri);
  t.ok(asked.get('state'), 'a state');

  const profile = JSON.parse(readFileSync(join(home.dir, 'credentials.json'), 'utf8')).profiles['127.0.0.1'];
  t.equal(profile.mode, 'interactive');
  t.match(profile.sealedAccessToken, /^v1\./);
  t.match(profile.sealedRefreshToken, /^v1\./);
  t.match(profile.oauth, {
    issuer: d.providers[0]!.issuer,
    tokenEndpoint: `${d.providers[0]!.issuer}/token`,
    clientId: 'mailcairn-cli',
    resource: d.resource,
    scopes: [ADMIN_SCOPE, 'offline_access'],
  });
  t.ok(Date.parse(profile.oauth.accessTokenExpiresAt) > Date.now(), 'the access token expiry');

  if (process.platform !== 'win32') {
    t.equal(statSync(home.dir).mode & 0o777, 0o700, 'directory 0700');
    t.equal(statSync(join(home.dir, 'credentials.json')).mode & 0o777, 0o600, 'credential file 0600');
    t.equal(statSync(join(home.dir, 'credentials.key')).mode & 0o777, 0o600, 'key file 0600');
  }

  const status = await cli(home, ['status'], { env: NO_BROWSER });
  t.equal(status.code, 0, status.stderr);
  t.match(status.stdout, /Sign-in\s+OAuth, interactive/);
  t.match(status.stdout, /Permissions\s+service\.admin\.read/);

  const json = await cli(home, ['status', '--output', 'json'], { env: NO_BROWSER });
  t.equal(JSON.parse(json.stdout).mode, 'interactive');

  const logout = await cli(home, ['logout'], { env: NO_BROWSER });
  t.equal(logout.code, 0, logout.stderr);
  t.match(logout.stdout, /Nothing was revoked: the refresh token stays valid at the authorization server/);
  t.notOk(
    d.providers[0]!.requests().some((r) => r.startsWith('/token/revocation')),
    'logout sent no revocation',
  );

  const secrets = d.secrets();
  t.ok(secrets.length >= 2, 'the provider handed out tokens');
  t.same(leaks(secrets, result.stdout, result.stderr, status.stdout, status.stderr, json.stdout, logout.stdout, logout.stderr, d.service.logs.raw()), []);
  t.same(leaks(secrets, credentialFiles(home)), [], 'tokens are stored sealed only');
});

t.test('a redirect carrying another state is refused, and nothing is stored', async (t) => {
  const d = await startOAuthDeployment(t);
  const home = cliHome(t);
  const { result, page } = await signInInteractive(home, d, (address) => {
    const forged = new URL(address);
    forged.searchParams.set('state', 'not-the-one-issued');
    return d.providers[0]!.browse(forged.href);
  });
  t.equal(result.code, 1);
  t.match(result.stderr, /carried a state this sign-in did not issue/);
  t.equal(page?.status, 400);
  t.equal(d.providers[0]!.tokenRequests().authorization_code ?? 0, 0, 'the code was never redeemed');
  const profiles = await cli(home, ['profiles', '--output', 'json']);
  t.same(JSON.parse(profiles.stdout).profiles, [], 'nothing stored');
});

t.test('a refusal at the authorization server ends the sign-in', async (t) => {
  const d = await startOAuthDeployment(t);
  const home = cliHome(t);
  const { result } = await signInInteractive(home, d, (address) => d.providers[0]!.browse(address, { deny: true }));
  t.equal(result.code, 1);
  t.match(result.stderr, /The sign-in was refused at .* \(access_denied\)/);
  t.match(result.stderr, /nothing was stored/);
});

t.test('a redirect address that is not loopback http is a usage error', async (t) => {
  const home = cliHome(t);
  for (const uri of ['https://127.0.0.1:8765/', 'http://example.org:8765/', 'http://localhost:8765/', 'http://127.0.0.1/']) {
    const r = await cli(home, ['login', '--endpoint', 'https://127.0.0.1:1', '--mode', 'interactive', '--client-id', 'c', '--redirect-uri', uri]);
    t.equal(r.code, 2, uri);
    t.match(r.stderr, /--redirect-uri takes a loopback address with a port/);
  }
});

t.test('a subject the deployment does not authorize: refused at the session check, nothing stored', async (t) => {
  const d = await startOAuthDeployment(t, { provider: { users: ['operator-7f3a', 'stranger-1'] } });
  const home = cliHome(t);
  const { result } = await signInInteractive(home, d, (address) => d.providers[0]!.browse(address, { user: 'stranger-1' }));
  t.equal(result.code, 1);
  t.match(result.stderr, /refused the token the sign-in obtained \(its subject is not among the entry's AuthorizedSubjects/);
  t.notMatch(result.stderr, /stranger-1/, 'the subject is not named');
  const profiles = await cli(home, ['profiles', '--output', 'json']);
  t.same(JSON.parse(profiles.stdout).profiles, []);
});
