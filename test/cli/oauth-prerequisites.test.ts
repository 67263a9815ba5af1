/**
 * The OAuth prerequisites of sign-in (client conditions table: "publishes no
 * OAuth metadata", "accepts tokens from several authorization servers",
 * "issued no refresh token", "no device authorization endpoint"), each met
 * for real: a deployment without an OAuth entry, one naming two servers,
 * one advertising no offline access, a provider whose client may not use the
 * refresh_token grant, a provider without the device flow. Each message says
 * what to do, and nothing is stored.
 */
import t, { type Test } from 'tap';
import { cli, cliHome, startCliService, type CliHome } from './harness.ts';
import { NO_BROWSER, oauthLogin, signInDevice, signInInteractive, startOAuthDeployment } from './oauth-harness.ts';

t.setTimeout(600_000);

async function nothingStored(t: Test, home: CliHome): Promise<void> {
  const profiles = await cli(home, ['profiles', '--output', 'json']);
  t.same(JSON.parse(profiles.stdout).profiles, [], 'nothing stored');
}

t.test('a deployment with no OAuth entry publishes no OAuth metadata', async (t) => {
  const service = await startCliService(t);
  const home = cliHome(t);
  for (const mode of ['interactive', 'device']) {
    const r = await cli(home, ['login', '--endpoint', service.admin, '--mode', mode, '--client-id', 'mailcairn-cli'], { env: NO_BROWSER });
    t.equal(r.code, 1, mode);
    t.match(r.stderr, /publishes no OAuth metadata at \/\.well-known\/oauth-protected-resource\/api\/admin/);
    t.match(r.stderr, /use --mode key/);
  }
  await nothingStored(t, home);
});

t.test('several authorization servers: --issuer is required, and must be one of them', async (t) => {
  const d = await startOAuthDeployment(t, { servers: 2 });
  const home = cliHome(t);
  const none = await cli(home, oauthLogin(d, 'interactive'), { env: NO_BROWSER });
  t.equal(none.code, 2);
  t.match(none.stderr, /accepts tokens from several authorization servers/);
  t.match(none.stderr, /--issuer <issuer>/);
  t.ok(none.stderr.includes(d.providers[0]!.issuer) && none.stderr.includes(d.providers[1]!.issuer), 'both named');

  const other = await cli(home, oauthLogin(d, 'interactive', ['--issuer', 'https://idp.example.org/']), { env: NO_BROWSER });
  t.equal(other.code, 2);
  t.match(other.stderr, /--issuer https:\/\/idp\.example\.org\/ is not one of the authorization servers/);
  await nothingStored(t, home);

  const second = d.providers[1]!;
  const { result } = await signInInteractive(home, d, (address) => second.browse(address), ['--issuer', second.issuer]);
  t.equal(result.code, 0, result.stderr);
  t.equal(second.tokenRequests().authorization_code, 1, 'signed in at the issuer named');
  t.equal(d.providers[0]!.tokenRequests().authorization_code ?? 0, 0);
});

t.test('offline access not advertised: refused before anything is asked', async (t) => {
  const d = await startOAuthDeployment(t, { advertisedScopes: [] });
  const home = cliHome(t);
  const r = await cli(home, oauthLogin(d, 'interactive'), { env: NO_BROWSER });
  t.equal(r.code, 1);
  t.match(r.stderr, /does not advertise offline_access, so .* would have issued no refresh token/);
  t.match(r.stderr, /add offline_access to AdvertisedScopes/);
  t.notOk(
    d.providers[0]!.requests().some((p) => p.startsWith('/auth')),
    'no authorization request',
  );
  await nothingStored(t, home);
});

t.test('a client not granted offline access: the server issued no refresh token', async (t) => {
  const d = await startOAuthDeployment(t, { refreshTokenGrant: false });
  const home = cliHome(t);
  const { result } = await signInInteractive(home, d);
  t.equal(result.code, 1);
  t.match(result.stderr, /issued no refresh token, so the sign-in would end with its first access token; nothing was stored/);
  t.match(result.stderr, /Grant offline access \(offline_access, the refresh_token grant\) to client mailcairn-cli/);
  await nothingStored(t, home);
});

t.test('device mode against a server without the device flow', async (t) => {
  const d = await startOAuthDeployment(t, { provider: { deviceFlow: false } });
  const home = cliHome(t);
  const r = await signInDevice(home, d, null);
  t.equal(r.code, 1);
  t.match(r.stderr, /has no device authorization endpoint \(RFC 8628\); sign in with --mode interactive/);
  await nothingStored(t, home);
});
