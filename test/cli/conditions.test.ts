/**
 * The client conditions of docs/cli.md "Conditions and their messages" that
 * apply to the key and key-pair modes, each provoked for real and its message
 * checked: nothing listening ("could not be reached", naming the loopback
 * caveat); another HTTP service and a service that does not speak HTTP ("did
 * not identify itself"); the MCP listener ("serves no administrative
 * endpoint"); a server that accepts and never answers ("did not answer in
 * time", after 30 s); a 403 naming the permission; the version agreement
 * across three services of other versions behind a counting proxy (another
 * release line refused with only the session request sent; same line, other
 * build warned; unstamped "is unchecked"); an untrusted certificate refused at
 * login, pinned with --trust-untrusted-certificate, and a replaced one refused
 * ("this profile has not pinned"). No key appears in any output.
 */
import { createServer } from 'node:http';
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { stamped, version } from '../../runtime/version.ts';
import { makeCertificate } from '../harness/processes.ts';
import { cli, cliHome, forwardingProxy, leaks, loginWithKey, reservePort, startCliService, tcpPeer, tempDir, type CliResult } from './harness.ts';

t.setTimeout(300_000);

const outputs = (results: CliResult[]): string[] => results.flatMap((r) => [r.stdout, r.stderr]);

t.test('what answers at the address', async (t) => {
  const svc = await startCliService(t);
  const home = cliHome(t);
  const results: CliResult[] = [];
  const login = async (endpoint: string, key = svc.keys.operator): Promise<CliResult> => {
    const result = await loginWithKey(home, endpoint, key);
    results.push(result);
    return result;
  };

  const nothing = await login(`http://127.0.0.1:${await reservePort()}`);
  t.equal(nothing.code, 1);
  t.match(nothing.stderr, /could not be reached \(ECONNREFUSED\)/);
  t.match(nothing.stderr, /loopback address .* is unreachable from other machines/);

  const page = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<html><body>hello</body></html>');
  });
  await new Promise<void>((resolve) => page.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => page.close(() => resolve())));
  const html = await login(`http://127.0.0.1:${(page.address() as { port: number }).port}`);
  t.equal(html.code, 1);
  t.match(html.stderr, /did not identify itself as a Mailcairn deployment \(its answer is not JSON\): another service answers on that port/);

  const json = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"status":"ok","version":"1.0"}');
  });
  await new Promise<void>((resolve) => json.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => json.close(() => resolve())));
  const other = await login(`http://127.0.0.1:${(json.address() as { port: number }).port}`);
  t.match(other.stderr, /did not identify itself .*not a session report/);

  const imap = await tcpPeer(t, (socket) => socket.write('* OK [CAPABILITY IMAP4rev1] ready\r\n'));
  const notHttp = await login(`http://127.0.0.1:${imap.port}`);
  t.equal(notHttp.code, 1);
  t.match(notHttp.stderr, /did not identify itself .*does not speak HTTP/);

  const mcp = await login(svc.mcp);
  t.equal(mcp.code, 1);
  t.match(mcp.stderr, /serves no administrative endpoint/);

  // A stored profile whose deployment went away.
  const proxy = await forwardingProxy(t, svc.admin);
  t.equal((await login(proxy.url)).code, 0);
  await new Promise<void>((resolve) => {
    proxy.server.closeAllConnections();
    proxy.server.close(() => resolve());
  });
  const gone = await cli(home, ['status']);
  results.push(gone);
  t.equal(gone.code, 1);
  t.match(gone.stderr, /could not be reached/);

  t.same(leaks(svc.secrets, ...outputs(results)), [], 'no key in any output');
});

t.test('a server that never answers', async (t) => {
  const home = cliHome(t);
  let requests = 0;
  const silent = await tcpPeer(t, (socket) => socket.on('data', (d: Buffer) => (requests += (d.toString().match(/^GET /gm) ?? []).length)));
  const began = Date.now();
  const result = await cli(home, ['login', '--endpoint', `http://127.0.0.1:${silent.port}`], { input: 'mc_anything\n', timeoutMs: 60_000 });
  const took = Date.now() - began;
  t.equal(result.code, 1);
  t.match(result.stderr, /did not answer in time \(30 seconds\)/);
  t.ok(took >= 29_000 && took < 45_000, `gave up after 30 s (took ${took} ms)`);
  // undici opens a spare connection as the request is abandoned; it carries nothing.
  t.equal(requests, 1, 'one request, not retried');
  t.ok(silent.connections() >= 1);
});

t.test('a permission the credential does not hold', async (t) => {
  const svc = await startCliService(t);
  const home = cliHome(t);
  t.equal((await loginWithKey(home, svc.admin, svc.keys.nothing, ['--name', 'nothing'])).code, 0);
  const status = await cli(home, ['mailbox', 'status']);
  t.equal(status.code, 1);
  t.match(
    status.stderr,
    /The deployment refused the operation: the credential does not hold the permission service\.admin\.read\. Add service\.admin\.read to the Permissions/,
  );
  t.equal((await loginWithKey(home, svc.admin, svc.keys.reader, ['--name', 'reader'])).code, 0);
  const rederive = await cli(home, ['mailbox', 'rederive', '--account', 'pat']);
  t.equal(rederive.code, 1);
  t.match(rederive.stderr, /the credential does not hold the permission service\.admin\.operate/);
  const erase = await cli(home, ['folder', 'erase', '--account', 'pat', '--folder', 'old']);
  t.match(erase.stderr, /does not hold the permission service\.admin\.erase/);
  t.notMatch(erase.stderr, /before the erasure was interrupted/, 'a refused first pass is no interruption');
});

t.test('the version agreement', async (t) => {
  const [major, minor, patch] = version.split('+')[0]!.split('.').map(Number) as [number, number, number];
  const ours = await startCliService(t);
  const keys = ours.keys;
  const otherLine = await startCliService(t, { keys, version: `${major}.${minor + 1}.0+abc1234` });
  const otherBuild = await startCliService(t, { keys, version: `${major}.${minor}.${patch + 1}+fedcba9` });
  const unstamped = await startCliService(t, { keys, version: `${major}.${minor}.${patch}+unstamped` });
  const proxy = await forwardingProxy(t, ours.admin);
  const home = cliHome(t);
  const results: CliResult[] = [];
  const run = async (args: string[]): Promise<CliResult> => {
    proxy.requests.length = 0;
    const result = await cli(home, args);
    results.push(result);
    return result;
  };

  const login = await loginWithKey(home, proxy.url, keys.operator);
  results.push(login);
  t.equal(login.code, 0, login.stderr);

  proxy.setTarget(otherLine.admin);
  const refused = await run(['mailbox', 'status']);
  t.equal(refused.code, 1);
  t.match(refused.stderr, /refused rather than sent to a deployment from another release line/);
  t.match(refused.stderr, new RegExp(`runs ${major}\\.${minor + 1}\\.0\\+abc1234`));
  t.same(proxy.requests, ['GET /api/admin/session'], 'only the session was sent');
  t.equal(refused.stdout, '');

  proxy.setTarget(otherBuild.admin);
  const warned = await run(['mailbox', 'status', '--output', 'json']);
  t.equal(warned.code, 0, warned.stderr);
  if (stamped) t.match(warned.stderr, /not the same build and problems may occur/);
  else t.match(warned.stderr, /is unchecked/, 'an unstamped client cannot compare builds');
  t.same(proxy.requests, ['GET /api/admin/session', 'GET /api/admin/mailbox/synchronization'], 'the command ran');
  t.match(JSON.parse(warned.stdout), { accounts: [] }, 'the warning stays off standard output');

  proxy.setTarget(unstamped.admin);
  const unchecked = await run(['mailbox', 'status']);
  t.equal(unchecked.code, 0, unchecked.stderr);
  t.match(unchecked.stderr, /The version agreement with .* is unchecked/);
  t.equal(proxy.requests.length, 2, 'the command ran');

  proxy.setTarget(ours.admin);
  const same = await run(['mailbox', 'status']);
  t.equal(same.code, 0);
  if (stamped) t.equal(same.stderr, '', 'the same build: nothing to say');

  // Login to another release line stores nothing.
  const elsewhere = cliHome(t);
  const direct = await loginWithKey(elsewhere, otherLine.admin, keys.operator);
  results.push(direct);
  t.equal(direct.code, 1);
  t.match(direct.stderr, /another release line/);
  t.notOk(existsSync(join(elsewhere.dir, 'credentials.json')));

  t.same(leaks(ours.secrets, ...outputs(results)), [], 'no key in any output');
});

t.test('https: an untrusted certificate, pinned, then replaced', async (t) => {
  const svc = await startCliService(t);
  const first = await makeCertificate(tempDir(t));
  const second = await makeCertificate(tempDir(t));
  const tls = await forwardingProxy(t, svc.admin, { tls: { cert: first.pem, key: readFileSync(first.key, 'utf8') } });
  const home = cliHome(t);

  const untrusted = await loginWithKey(home, tls.url, svc.keys.operator);
  t.equal(untrusted.code, 1);
  t.match(untrusted.stderr, /presents a certificate this machine does not trust \(DEPTH_ZERO_SELF_SIGNED_CERT\)/);
  t.match(untrusted.stderr, /--trust-untrusted-certificate/);
  t.same(tls.requests, [], 'the credential was not sent');
  t.notOk(existsSync(join(home.dir, 'credentials.json')));

  const pinned = await loginWithKey(home, tls.url, svc.keys.operator, ['--trust-untrusted-certificate']);
  t.equal(pinned.code, 0, pinned.stderr);
  t.match(pinned.stderr, /Pinned the certificate with SHA-256 fingerprint [0-9A-F:]{95}/);
  const stored = JSON.parse(readFileSync(join(home.dir, 'credentials.json'), 'utf8')) as { profiles: Record<string, { certificateSha256?: string }> };
  t.match(stored.profiles['127.0.0.1']!.certificateSha256, /^[0-9A-F]{2}(:[0-9A-F]{2}){31}$/);
  const status = await cli(home, ['status', '--output', 'json']);
  t.equal(status.code, 0, status.stderr);
  t.match(JSON.parse(status.stdout), { credential: 'operator' });

  // The front now presents another certificate.
  (tls.server as unknown as import('node:tls').Server).setSecureContext({ cert: second.pem, key: readFileSync(second.key, 'utf8') });
  const before = tls.requests.length;
  const replaced = await cli(home, ['status']);
  t.equal(replaced.code, 1);
  t.match(replaced.stderr, /presents a certificate this profile has not pinned/);
  t.equal(tls.requests.length, before, 'nothing was sent to the other certificate');
  t.same(leaks(svc.secrets, untrusted.stderr, pinned.stdout, pinned.stderr, status.stdout, replaced.stderr), []);
});
