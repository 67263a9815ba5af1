/**
 * `login --mode device` (RFC 8628) against a real oidc-provider with its
 * device flow, the user code approved or refused by a scripted person on the
 * provider's own verification pages.
 *
 * Each polling answer: `authorization_pending` (the provider's, until the
 * code is approved: polling goes on), `slow_down` (answered by an intercept
 * in front of the provider: the next poll comes at least 5 seconds later),
 * `access_denied` (the person aborts), `expired_token` (the provider's, for
 * a code that outlived its lifetime). No token or device code reaches an
 * output or the credential file in clear.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { cli, cliHome, leaks } from './harness.ts';
import { NO_BROWSER, credentialFiles, signInDevice, startOAuthDeployment } from './oauth-harness.ts';
import { until } from '../helpers/log-capture.ts';

const polls = (requests: string[]): number => requests.filter((r) => r === '/token').length;

// Each sign-in runs the client several times; the machine may be shared.
t.setTimeout(600_000);

t.test('device sign-in: pending polls, approval, the profile stored', async (t) => {
  const d = await startOAuthDeployment(t);
  const provider = d.providers[0]!;
  const home = cliHome(t);
  const result = await signInDevice(home, d, async (code) => {
    // Approved only once the client has been told "authorization_pending" twice.
    await until(() => polls(provider.requests()) >= 2, 30_000, 'two polls');
    return provider.approveDevice(code);
  });
  t.equal(result.code, 0, result.stderr);
  t.match(result.stderr, new RegExp(`open ${provider.issuer}/device on any device and enter the code [A-Z]{4}-[A-Z]{4}`));
  t.match(result.stderr, new RegExp(`or open ${provider.issuer}/device\\?user_code=`), 'the complete address too');
  t.ok(provider.errors().filter((e) => /authorization_pending|AuthorizationPending/i.test(e)).length >= 2, 'the provider answered authorization_pending');
  t.equal(provider.tokenRequests()['urn:ietf:params:oauth:grant-type:device_code'], 1, 'one successful device grant');
  const profile = JSON.parse(readFileSync(join(home.dir, 'credentials.json'), 'utf8')).profiles['127.0.0.1'];
  t.equal(profile.mode, 'device');
  t.equal(profile.oauth.clientId, 'mailcairn-cli');

  const status = await cli(home, ['status'], { env: NO_BROWSER });
  t.equal(status.code, 0, status.stderr);
  t.match(status.stdout, /Sign-in\s+OAuth, device/);
  t.same(leaks(d.secrets(), result.stdout, result.stderr, status.stdout, status.stderr, d.service.logs.raw(), credentialFiles(home)), []);
});

t.test('slow_down adds five seconds to the interval', async (t) => {
  const seen: number[] = [];
  let slowed = false;
  const d = await startOAuthDeployment(t, {
    provider: {
      intercept: (req, res) => {
        if (req.method !== 'POST' || req.url !== '/token') return false;
        seen.push(Date.now());
        if (slowed) return false;
        slowed = true;
        req.resume();
        res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":"slow_down"}');
        return true;
      },
    },
  });
  const provider = d.providers[0]!;
  const home = cliHome(t);
  const result = await signInDevice(home, d, async (code) => {
    await until(() => seen.length >= 2, 30_000, 'the poll after slow_down');
    return provider.approveDevice(code);
  });
  t.equal(result.code, 0, result.stderr);
  t.ok(seen.length >= 3, 'polled after slow_down until approved');
  // The interval was 1 s; after slow_down it is 6 s (a lower bound: a sleep never ends early).
  t.ok(seen[1]! - seen[0]! >= 5_900, `the poll after slow_down waited ${seen[1]! - seen[0]!} ms`);
  t.ok(seen[2]! - seen[1]! >= 5_900, 'and so does every later one');
});

t.test('access_denied: the person aborts', async (t) => {
  const d = await startOAuthDeployment(t);
  const home = cliHome(t);
  const result = await signInDevice(home, d, (code) => d.providers[0]!.approveDevice(code, { deny: true }));
  t.equal(result.code, 1);
  t.match(result.stderr, /The sign-in was refused at .* \(access_denied\): the code was not approved; nothing was stored/);
  const profiles = await cli(home, ['profiles', '--output', 'json']);
  t.same(JSON.parse(profiles.stdout).profiles, []);
});

t.test('expired_token: the code outlived its lifetime', async (t) => {
  // The code lives 2 s; the first poll comes at 3 s.
  const d = await startOAuthDeployment(t, { provider: { deviceCodeTtl: 2, deviceInterval: 3 } });
  const home = cliHome(t);
  const result = await signInDevice(home, d, null);
  t.equal(result.code, 1);
  t.match(result.stderr, /expired at .* before it was approved \(expired_token\); nothing was stored\. Log in again/);
});

t.test('no --client-id: the public client must be named', async (t) => {
  const home = cliHome(t);
  const r = await cli(home, ['login', '--endpoint', 'https://127.0.0.1:1', '--mode', 'device']);
  t.equal(r.code, 2);
  t.match(r.stderr, /--mode device needs --client-id: the identifier of the public client/);
});
