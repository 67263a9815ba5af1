/**
 * The release assets of the client (issue 33, items 4 and 5; docs/cli.md
 * "Binaries"): packaging/release.ts builds the bundle and the Linux x64
 * single executable (once, cached by test/helpers/client-build.ts); SHA256SUMS
 * names both and `sha256sum -c` accepts them, and refuses a changed file;
 * the executable, run with no Node and no checkout around it, prints its
 * version, signs in with an API key on standard input and reports the session
 * of a test deployment, with the key in no output. Then the parity runs: some
 * of the client test files run again against the packaged bundle (zod in
 * the file beside it, as `npm run build` makes it) and the executable
 * (MAILCAIRN_CLI_UNDER_TEST, test/cli/harness.ts), and must pass there as
 * they pass against the sources. The release's bundle is one file: copied
 * alone, it loads every command.
 */
import { execFile, spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t from 'tap';
import { version } from '../../runtime/version.ts';
import { builtClient } from '../helpers/client-build.ts';
import { cliHome, leaks, startCliService } from './harness.ts';

t.setTimeout(600_000);

const root = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);

/** The test files run again against the bundle and the executable: the command table, sign-in (key, key pair and OAuth interactive), the conditions, the profiles. */
const PARITY_FILES = [
  'test/cli/command-line.test.ts',
  'test/cli/sign-in.test.ts',
  'test/cli/conditions.test.ts',
  'test/cli/profiles.test.ts',
  'test/cli/oauth-interactive.test.ts',
];

const client = await builtClient();
t.comment(`client assets in ${client.dir}${client.reused ? ' (reused)' : ''}`);

t.test('SHA256SUMS names each asset and sha256sum -c accepts them', async (t) => {
  const lines = readFileSync(client.sums, 'utf8').trimEnd().split('\n');
  t.same(
    lines.map((l) => l.replace(/^[0-9a-f]{64} {2}/, '')),
    ['mailcairn-linux-x64', 'mailcairn.cjs'],
  );
  const checked = await run('sha256sum', ['-c', 'SHA256SUMS'], { cwd: client.dir });
  t.equal(checked.stdout, 'mailcairn-linux-x64: OK\nmailcairn.cjs: OK\n');

  // A copy whose bundle differs by one byte is refused.
  const copy = mkdtempSync(join(tmpdir(), 'mailcairn-sums-'));
  t.teardown(() => rmSync(copy, { recursive: true, force: true }));
  copyFileSync(client.sums, join(copy, 'SHA256SUMS'));
  writeFileSync(join(copy, 'mailcairn.cjs'), `${readFileSync(client.bundle, 'utf8')} `);
  copyFileSync(client.binary, join(copy, 'mailcairn-linux-x64'));
  const refused = await run('sha256sum', ['-c', 'SHA256SUMS'], { cwd: copy }).then(
    () => null,
    (err: { code: number; stdout: string }) => err,
  );
  t.ok(refused, 'sha256sum -c fails');
  t.match(refused?.stdout, /mailcairn\.cjs: FAILED/);
  t.match(refused?.stdout, /mailcairn-linux-x64: OK/);
});

t.test("the release's mailcairn.cjs alone loads every command", async (t) => {
  const alone = mkdtempSync(join(tmpdir(), 'mailcairn-asset-'));
  t.teardown(() => rmSync(alone, { recursive: true, force: true }));
  copyFileSync(client.bundle, join(alone, 'mailcairn.cjs'));
  // --help loads every command module, zod with them: nothing may be missing beside the file.
  const help = await run(process.execPath, [join(alone, 'mailcairn.cjs'), '--help'], { cwd: alone, env: { PATH: process.env.PATH ?? '', HOME: alone } });
  t.match(help.stdout, /rules list/);
  t.match(help.stdout, /contact create/);
});

t.test('the executable alone: --version, login with a key on standard input, status', async (t) => {
  const svc = await startCliService(t);
  const home = cliHome(t);
  // Nothing of Node or of this checkout on its way: an empty PATH and another working directory.
  const exe = (args: string[], input = ''): Promise<{ code: number | null; stdout: string; stderr: string }> =>
    new Promise((resolve, reject) => {
      const child = spawn(client.binary, args, { cwd: home.home, env: { PATH: '', HOME: home.home, XDG_CONFIG_HOME: home.config }, stdio: 'pipe' });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      child.once('error', reject);
      child.once('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      });
      child.stdin.end(input);
    });

  const shown = await exe(['--version']);
  t.equal(shown.code, 0, shown.stderr);
  t.equal(shown.stdout.trim(), `mailcairn, ${version}`);

  const login = await exe(['login', '--endpoint', svc.admin, '--name', 'test', '--output', 'json'], `${svc.keys.reader}\n`);
  t.equal(login.code, 0, login.stderr);
  t.match(JSON.parse(login.stdout), { profile: 'test', mode: 'key', credential: 'reader', permissions: ['service.admin.read'] });
  const stored = JSON.parse(readFileSync(join(home.dir, 'credentials.json'), 'utf8')) as { current: string };
  t.equal(stored.current, 'test');

  const status = await exe(['status', '--output', 'json']);
  t.equal(status.code, 0, status.stderr);
  t.match(JSON.parse(status.stdout), { profile: 'test', endpoint: svc.admin, credential: 'reader', clientVersion: version, service: 'mailcairn' });

  const refused = await exe(['mailbox', 'rederive', '--account', 'pat']);
  t.equal(refused.code, 1);
  t.match(refused.stderr, /does not hold the permission service\.admin\.operate/);

  t.same(leaks(svc.secrets, shown.stdout, login.stdout, login.stderr, status.stdout, status.stderr, refused.stderr), [], 'no key in any output');
});

const tails = new Map<string, Promise<unknown>>();
/** Runs `work` after the earlier work queued under `key`: one file at a time per kind. */
function queue<T>(key: string, work: () => Promise<T>): Promise<T> {
  const next = (tails.get(key) ?? Promise.resolve()).then(work, work);
  tails.set(key, next);
  return next;
}

/** Runs one test file with the client under test chosen; its TAP output and exit code. */
function runFile(file: string, kind: 'bundle' | 'binary'): Promise<{ code: number | null; tap: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import=tsx', file], {
      cwd: root,
      env: { ...process.env, MAILCAIRN_CLI_UNDER_TEST: kind, MAILCAIRN_CLI_BUNDLE: client.packaged, MAILCAIRN_CLI_BINARY: client.binary, TAP: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let tap = '';
    child.stdout.on('data', (d: Buffer) => (tap += d.toString()));
    child.stderr.on('data', (d: Buffer) => (tap += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 300_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, tap });
    });
  });
}

t.test('the client tests pass against the bundle and the executable', async (t) => {
  // Each kind runs the files one after another; the two kinds run side by side.
  const kinds = ['bundle', 'binary'] as const;
  const runs = await Promise.all(
    kinds.map(async (kind) => Promise.all(PARITY_FILES.map(async (file) => ({ kind, file, ...(await queue(kind, () => runFile(file, kind))) })))),
  );
  for (const { kind, file, code, tap } of runs.flat()) {
    const failures = tap.split('\n').filter((line) => /^\s*not ok /.test(line));
    t.same(failures, [], `${kind}, ${file}: no failed assertion`);
    t.match(tap, /^1\.\.[1-9]\d*$/m, `${kind}, ${file}: a plan of at least one test`);
    t.equal(code, 0, `${kind}, ${file} exits 0${code === 0 ? '' : `\n${tap.slice(-3000)}`}`);
  }
});
