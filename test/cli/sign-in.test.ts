/**
 * Signing in and the profiles, the client run as a subprocess against a
 * service started for real: login with an API key piped to standard input
 * (and a refused key storing nothing), login with a key pair (only the path
 * stored; a fresh assertion per request), status / profiles / switch /
 * logout, the endpoint choice order (--endpoint, SERVICE_ENDPOINT, the
 * default profile) and its three "no profile" messages, the credential
 * file's modes and that it holds no plain secret, the clear-text rule,
 * OAuth options refused outside the OAuth modes, usage errors (exit 2), JSON output of
 * the reading commands, no colour when piped, and no key in any output.
 */
import { readFileSync, statSync, existsSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { ALL_PERMISSIONS, cli, cliHome, leaks, reservePort, startCliService, type CliResult } from './harness.ts';

t.setTimeout(300_000);

const ESC = '\u001b';

t.test('key, key pair, profiles and the endpoint order', async (t) => {
  const svc = await startCliService(t);
  const home = cliHome(t);
  const results: CliResult[] = [];
  const run = async (...args: Parameters<typeof cli>): Promise<CliResult> => {
    const result = await cli(...args);
    results.push(result);
    return result;
  };

  // Before any login: the three "no profile" conditions.
  const none = await run(home, ['status']);
  t.equal(none.code, 1);
  t.match(none.stderr, /Not signed in/);

  // A refused key stores nothing.
  const wrong = await run(home, ['login', '--endpoint', svc.admin], { input: 'mc_not-a-key\n' });
  t.equal(wrong.code, 1, 'a refused key fails the login');
  t.match(wrong.stderr, /refused this credential/);
  t.match(wrong.stderr, /nothing was stored/);
  t.notOk(existsSync(join(home.dir, 'credentials.json')), 'no credential file after a refused login');

  // An empty standard input is no credential.
  const empty = await run(home, ['login', '--endpoint', svc.admin], { input: '' });
  t.equal(empty.code, 1);
  t.match(empty.stderr, /No API key arrived on standard input/);

  // Login with the operator key on standard input.
  const login = await run(home, ['login', '--endpoint', svc.admin], { input: `${svc.keys.operator}\n` });
  t.equal(login.code, 0, login.stderr);
  t.match(login.stdout, /Signed in to http:\/\/127\.0\.0\.1:\d+ as profile 127\.0\.0\.1/);
  t.match(login.stdout, /Credential operator/);

  // The credential file: owner-only, and no plain secret in it.
  const file = join(home.dir, 'credentials.json');
  const keyFile = join(home.dir, 'credentials.key');
  t.equal(statSync(home.dir).mode & 0o777, 0o700, 'the directory is 0700');
  t.equal(statSync(file).mode & 0o777, 0o600, 'the credential file is 0600');
  t.equal(statSync(keyFile).mode & 0o777, 0o600, 'the sealing key is 0600');
  const bytes = readFileSync(file);
  t.equal(bytes.indexOf(svc.keys.operator), -1, 'the API key is not in the file');
  t.equal(readFileSync(keyFile).indexOf(svc.keys.operator), -1, 'nor in the key file');
  const stored = JSON.parse(bytes.toString()) as { current: string; profiles: Record<string, { endpoint: string; mode: string; sealedKey: string }> };
  t.equal(stored.current, '127.0.0.1', 'the profile is named after the host and selected');
  t.match(stored.profiles['127.0.0.1'], { endpoint: svc.admin, mode: 'key', sealedKey: /^v1\./ });

  // status, as a table and as JSON.
  const status = await run(home, ['status']);
  t.equal(status.code, 0, status.stderr);
  t.match(status.stdout, /Credential\s+operator/);
  t.notMatch(status.stderr, /not the same build|is unchecked|refused/, 'same build: no version warning');
  const statusJson = JSON.parse((await run(home, ['status', '--output', 'json'])).stdout) as Record<string, unknown>;
  t.match(statusJson, { profile: '127.0.0.1', default: true, endpoint: svc.admin, credential: 'operator', permissions: ALL_PERMISSIONS, service: 'mailcairn' });

  // A second profile, by name, with the read-only key; it becomes the default.
  const reader = await run(home, ['login', '--endpoint', svc.admin, '--name', 'reader'], { input: `${svc.keys.reader}\n` });
  t.equal(reader.code, 0, reader.stderr);
  const credentialOf = async (args: string[], env: Record<string, string> = {}): Promise<string> => {
    const result = await run(home, ['status', '--output', 'json', ...args], { env });
    t.equal(result.code, 0, result.stderr);
    return (JSON.parse(result.stdout) as { credential: string }).credential;
  };
  t.equal(await credentialOf([]), 'reader', 'login selects the new profile');

  // A key pair: only the path is stored; every request carries a fresh assertion.
  const relative = await run(home, ['login', '--endpoint', svc.admin, '--name', 'signer', '--mode', 'keypair', '--private-key', 'client-private.pem']);
  t.equal(relative.code, 2, 'a relative key path is a usage error');
  t.match(relative.stderr, /absolute path/);
  const signer = await run(home, ['login', '--endpoint', svc.admin, '--name', 'signer', '--mode', 'keypair', '--private-key', svc.privateKeyPath]);
  t.equal(signer.code, 0, signer.stderr);
  t.match(signer.stdout, /Credential signer/);
  const afterPair = JSON.parse(readFileSync(file, 'utf8')) as { profiles: Record<string, Record<string, unknown>> };
  t.same(
    Object.keys(afterPair.profiles.signer!).sort(),
    ['endpoint', 'mode', 'privateKey', 'signedInAt'],
    'the key-pair profile holds the path and nothing secret',
  );
  t.equal(afterPair.profiles.signer!.privateKey, svc.privateKeyPath);
  t.notMatch(readFileSync(file, 'utf8'), /PRIVATE KEY/);
  for (let i = 0; i < 2; i += 1) {
    // Two commands, two requests each: a reused jti would be refused as a replay.
    const sync = await run(home, ['mailbox', 'status', '--output', 'json']);
    t.equal(sync.code, 0, sync.stderr);
    t.match(JSON.parse(sync.stdout), { synchronizationEnabled: false, accounts: [] });
  }
  t.equal(await credentialOf([]), 'signer');

  // profiles, as JSON and as a table.
  const profiles = await run(home, ['profiles', '--output', 'json']);
  t.equal(profiles.code, 0);
  const listed = JSON.parse(profiles.stdout) as { current: string; profiles: Array<{ name: string; default: boolean; mode: string }> };
  t.equal(listed.current, 'signer');
  t.same(
    listed.profiles.map((p) => [p.name, p.default, p.mode]),
    [
      ['127.0.0.1', false, 'key'],
      ['reader', false, 'key'],
      ['signer', true, 'keypair'],
    ],
  );
  t.match((await run(home, ['profiles'])).stdout, /\*\s+signer/);

  // switch.
  t.equal((await run(home, ['switch', 'nosuch'])).code, 1);
  t.match(results.at(-1)!.stderr, /There is no profile named 'nosuch'/);
  t.equal((await run(home, ['switch', '127.0.0.1'])).code, 0);
  t.equal(await credentialOf([]), 'operator', 'switch changes the default');

  // The endpoint order: --endpoint, then SERVICE_ENDPOINT, then the default.
  t.equal(await credentialOf(['--endpoint', 'reader']), 'reader', '--endpoint names a profile');
  t.equal(await credentialOf([], { SERVICE_ENDPOINT: 'reader' }), 'reader', 'SERVICE_ENDPOINT names one');
  t.equal(await credentialOf(['--endpoint', 'signer'], { SERVICE_ENDPOINT: 'reader' }), 'signer', '--endpoint wins over SERVICE_ENDPOINT');
  t.equal(await credentialOf(['--endpoint', svc.admin]), 'operator', 'an address picks the default among the profiles using it');
  t.equal(await credentialOf([], { SERVICE_ENDPOINT: `${svc.admin}/` }), 'operator', 'an address in SERVICE_ENDPOINT, trailing slash and all');
  const unknownName = await run(home, ['status'], { env: { SERVICE_ENDPOINT: 'nosuch' } });
  t.equal(unknownName.code, 1);
  t.match(unknownName.stderr, /There is no profile named 'nosuch' \(named by SERVICE_ENDPOINT\)/);
  const unknownAddress = await run(home, ['status', '--endpoint', `http://127.0.0.1:${await reservePort()}`]);
  t.equal(unknownAddress.code, 1);
  t.match(unknownAddress.stderr, /Not signed in to http:\/\/127\.0\.0\.1:\d+ \(named by --endpoint\)/);

  // logout forgets one profile and revokes nothing.
  const out = await run(home, ['logout', 'reader']);
  t.equal(out.code, 0);
  t.match(out.stdout, /Forgot profile reader/);
  t.match(out.stdout, /Nothing was revoked/);
  const stillValid = await run(home, ['login', '--endpoint', svc.admin, '--name', 'again'], { input: `${svc.keys.reader}\n` });
  t.equal(stillValid.code, 0, 'the forgotten credential still signs in: nothing was revoked');
  t.equal((await run(home, ['logout'])).code, 0, 'logout of the default');
  const noDefault = await run(home, ['status']);
  t.equal(noDefault.code, 1);
  t.match(noDefault.stderr, /No default profile is set/);
  t.equal((await run(home, ['logout', '127.0.0.1'])).code, 0);
  t.equal((await run(home, ['logout', 'signer'])).code, 0);
  const gone = await run(home, ['status']);
  t.match(gone.stderr, /Not signed in/);
  t.same(JSON.parse((await run(home, ['profiles', '--output', 'json'])).stdout), { current: null, profiles: [] });

  // Nothing any command printed holds a key; nothing was coloured (every stream was a pipe).
  t.same(leaks(svc.secrets, ...results.flatMap((r) => [r.stdout, r.stderr])), [], 'no key in any output');
  t.notOk(
    results.some((r) => r.stdout.includes(ESC) || r.stderr.includes(ESC)),
    'no colour when piped',
  );
});

t.test('OAuth options out of place, clear text, usage errors', async (t) => {
  const svc = await startCliService(t);
  const home = cliHome(t);

  // The OAuth modes themselves: test/cli/oauth-*.test.ts. Their options belong to them.
  for (const option of ['--client-id', '--issuer', '--redirect-uri']) {
    const result = await cli(home, ['login', '--endpoint', svc.admin, option, 'x'], { input: `${svc.keys.operator}\n` });
    t.equal(result.code, 2, `${option} with --mode key`);
    t.match(result.stderr, new RegExp(`${option} belongs to the interactive and device modes`));
  }

  // Clear text to an address that is not this machine's loopback: refused before anything is sent, naming the flag.
  const external = Object.values(networkInterfaces())
    .flat()
    .find((i) => i && i.family === 'IPv4' && !i.internal)?.address;
  const remote = `http://${external ?? '192.0.2.10'}:${await reservePort()}`;
  const refused = await cli(home, ['login', '--endpoint', remote], { input: `${svc.keys.operator}\n` });
  t.equal(refused.code, 1);
  t.match(refused.stderr, /Refused to sign in to .* over clear text/);
  t.match(refused.stderr, /--allow-clear-text/);
  if (external) {
    // With the flag the check passes and the client tries the address (where nothing listens).
    const allowed = await cli(home, ['login', '--endpoint', remote, '--allow-clear-text'], { input: `${svc.keys.operator}\n` });
    t.equal(allowed.code, 1);
    t.match(allowed.stderr, /could not be reached/);
  }
  t.notOk(existsSync(join(home.dir, 'credentials.json')), 'nothing stored');

  // Usage errors exit 2.
  for (const args of [
    ['status', '--bogus'],
    ['nosuch'],
    ['mailbox', 'rewind'],
    ['switch'],
    ['login', '--endpoint', 'ftp://x'],
    ['status', '--output', 'yaml'],
  ]) {
    const result = await cli(home, args);
    t.equal(result.code, 2, `${args.join(' ')}: exit 2`);
  }
  const mixed = await cli(home, ['login', '--endpoint', svc.admin, '--private-key', '/tmp/x.pem'], { input: `${svc.keys.operator}\n` });
  t.equal(mixed.code, 2, '--private-key without --mode keypair');
});
