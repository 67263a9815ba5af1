/**
 * The systemd unit (packaging/mailcairn.service) and the example
 * configuration it runs with (config/examples/systemd.json) agree: every
 * `systemd:` secret reference is a `LoadCredential=` of the unit and the other
 * way round, the database lies in the unit's StateDirectory, the file the unit
 * passes is its ConfigurationDirectory's, and `mailcairnd check-config`
 * accepts the example with those credentials in $CREDENTIALS_DIRECTORY (and
 * refuses it without). The stop timeout outlasts the daemon's own deadline.
 * And the CI check (.ci/unit-check) passes on the unit and fails on broken
 * copies of it, including the ones systemd-analyze verify itself exits 0 on.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import t from 'tap';
import { keyringNew } from '../../runtime/keyring/cli.ts';
import { parseSecretRef } from '../../runtime/secret-ref.ts';
import { ALLOCATOR_ENVIRONMENT } from '../../runtime/allocator-environment.ts';
import { SHUTDOWN_DEADLINE_MS } from '../../service/app.ts';
import { spawnDaemon, tempDir } from '../helpers/daemon.ts';

t.setTimeout(120_000);

const UNIT = 'packaging/mailcairn.service';
const EXAMPLE = 'config/examples/systemd.json';

/** The unit's `[Service]` settings, each key with its values in order (a key may repeat). */
function serviceSettings(text: string): Map<string, string[]> {
  const settings = new Map<string, string[]>();
  let section = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    if (line.startsWith('[')) {
      section = line;
      continue;
    }
    if (section !== '[Service]') continue;
    const eq = line.indexOf('=');
    const key = line.slice(0, eq);
    settings.set(key, [...(settings.get(key) ?? []), line.slice(eq + 1)]);
  }
  return settings;
}

const settings = serviceSettings(readFileSync(UNIT, 'utf8'));
const one = (key: string): string | undefined => settings.get(key)?.at(-1);
const example = JSON.parse(readFileSync(EXAMPLE, 'utf8')) as unknown;

/** Every secret reference written anywhere in `tree`. */
function systemdReferences(tree: unknown): string[] {
  if (typeof tree === 'string') {
    const parsed = parseSecretRef(tree);
    return parsed?.scheme === 'systemd' ? [parsed.target] : [];
  }
  if (tree === null || typeof tree !== 'object') return [];
  return Object.values(tree).flatMap(systemdReferences);
}

const credentials = (settings.get('LoadCredential') ?? []).map((value) => {
  const colon = value.indexOf(':');
  return { name: value.slice(0, colon), source: value.slice(colon + 1) };
});

t.test('every systemd: reference of the example is a LoadCredential= of the unit, and only those', (t) => {
  const referenced = [...new Set(systemdReferences(example))].sort();
  t.ok(referenced.length >= 4, 'the example takes its secrets from systemd');
  t.same(credentials.map((c) => c.name).sort(), referenced);
  for (const { name, source } of credentials) {
    t.match(name, /^mailcairn\./, `${name}: named with the service's prefix`);
    t.equal(source, `/etc/credstore/${name}`, `${name}: loaded from root's credential store, under its own name`);
  }
  t.end();
});

t.test('the store is in the StateDirectory, the configuration in the ConfigurationDirectory', (t) => {
  const { Storage } = example as { Storage: { Database: string } };
  t.equal(one('StateDirectory'), 'mailcairn');
  t.equal(dirname(Storage.Database), '/var/lib/mailcairn', 'Storage:Database (its WAL and writer lock beside it) is /var/lib/<StateDirectory>');
  t.equal(one('ConfigurationDirectory'), 'mailcairn');
  t.match(one('ExecStart'), / --config \/etc\/mailcairn\/mailcairn\.json$/, 'the file installed from the example');
  t.end();
});

t.test('readiness, restarts and the stop agree with the daemon', (t) => {
  t.equal(one('Type'), 'notify');
  t.equal(one('NotifyAccess'), 'all', 'READY=1 comes from a systemd-notify child (service/systemd-notify.ts)');
  t.equal(one('Restart'), 'on-failure');
  t.equal(one('RestartPreventExitStatus'), '78', "a refused configuration (check-config's and startup's exit 78) is not restarted");
  const stopSeconds = Number(/^(\d+)s$/.exec(one('TimeoutStopSec') ?? '')?.[1]);
  t.ok(stopSeconds * 1000 > SHUTDOWN_DEADLINE_MS, `TimeoutStopSec (${stopSeconds} s) outlasts the drain deadline (${SHUTDOWN_DEADLINE_MS} ms)`);
  t.notOk(settings.has('MemoryDenyWriteExecute'), "not set: V8's JIT needs writable executable memory");
  t.equal(one('DynamicUser'), 'yes');
  t.end();
});

t.test("glibc's allocator settings: the unit's and `npm start`'s are the service's own (runtime/allocator-environment.ts)", (t) => {
  const given = new Map((settings.get('Environment') ?? []).map((entry) => entry.split('=', 2) as [string, string]));
  for (const [name, value] of Object.entries(ALLOCATOR_ENVIRONMENT)) t.equal(given.get(name), value, `Environment=${name}=${value}`);
  const start = (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> }).scripts.start ?? '';
  const assignments = Object.entries(ALLOCATOR_ENVIRONMENT).map(([name, value]) => `${name}=${value}`);
  t.ok(start.startsWith(`${assignments.join(' ')} node `), `npm start sets ${assignments.join(' ')} for node`);
  t.end();
});

t.test('check-config accepts the example with the unit credentials in $CREDENTIALS_DIRECTORY, and refuses it without', async (t) => {
  const dir = tempDir(t);
  const store = join(dir, 'credentials');
  mkdirSync(store, { mode: 0o700 });
  // What an operator puts in /etc/credstore: a key ring from `mailcairnd keyring new`, opaque API keys, a password.
  for (const { name } of credentials) {
    const material = name === 'mailcairn.keyring' ? keyringNew({}).text : `mc_${randomBytes(24).toString('base64url')}\n`;
    writeFileSync(join(store, name), material, { mode: 0o600 });
  }
  const checked = async (env: NodeJS.ProcessEnv): Promise<{ code: number | null; out: string }> => {
    const run = spawnDaemon(['check-config', '--config', EXAMPLE], { env });
    const { code } = await run.exited;
    return { code, out: run.stdout() };
  };
  const accepted = await checked({ CREDENTIALS_DIRECTORY: store });
  t.equal(accepted.code, 0, accepted.out);
  t.match(accepted.out, /Accepted: the service would start/);
  t.match(accepted.out, /Storage:Database: file \/var\/lib\/mailcairn\/mailcairn\.db/);
  t.match(accepted.out, /McpEndpoint:Authentication:0: ApiKey agent \(systemd:, no limit\)/);
  t.match(accepted.out, /AdminEndpoint:Authentication:0: ApiKey operator \(systemd:, no limit\)/);
  t.match(accepted.out, /DataEncryption:KeyRing: systemd: reference/);
  t.same(
    [...accepted.out.matchAll(/warning \[([a-z-]+)\]/g)].map((m) => m[1]),
    ['admin-clear-text'],
    'the one warning the docs explain: the administrative endpoint on loopback in clear text',
  );
  const refused = await checked({ CREDENTIALS_DIRECTORY: '' });
  t.equal(refused.code, 78);
  t.match(refused.out, /CREDENTIALS_DIRECTORY is not set/);
});

function unitCheck(unitFile: string): Promise<{ code: number; out: string }> {
  return new Promise((resolve) =>
    execFile('bash', ['.ci/unit-check', unitFile], { timeout: 60_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, out: stdout + stderr }),
    ),
  );
}

t.test('the CI check passes on the unit and fails on broken copies of it', async (t) => {
  const good = await unitCheck(UNIT);
  t.equal(good.code, 0, good.out);
  t.match(good.out, /Overall exposure level for mailcairn\.service: [01]\.\d/);

  const dir = tempDir(t);
  const unit = readFileSync(UNIT, 'utf8');
  const broken: Array<[string, string]> = [
    // systemd-analyze verify exits 0 on these three: it prints "…, ignoring" and goes on.
    ['a misspelt key', unit.replace(/^ProtectSystem=/m, 'ProtectSystm=')],
    ['a value systemd cannot parse', unit.replace(/^Type=notify$/m, 'Type=notifyy')],
    ['an unknown address family', unit.replace(/^RestrictAddressFamilies=.*$/m, 'RestrictAddressFamilies=AF_INET AF_INETX')],
    ['an executable by a name not found', unit.replace(/^ExecStart=\/usr\/bin\/node /m, 'ExecStart=no-such-node ')],
    ['the file-system hardening dropped', unit.replace(/^(Protect|Private)\w+=.*$/gm, '')],
  ];
  for (const [what, text] of broken) {
    t.not(text, unit, `${what}: the copy differs`);
    const file = join(dir, 'mailcairn.service');
    writeFileSync(file, text);
    const result = await unitCheck(file);
    t.not(result.code, 0, `${what}: the check fails`);
  }
});

t.test('docs/operations.md shows the unit file and its example configuration as they are', async (t) => {
  const doc = readFileSync('docs/operations.md', 'utf8');
  const shown = (heading: string, fence: string): string => {
    const at = doc.indexOf(heading);
    const open = doc.indexOf(`\`\`\`${fence}\n`, at);
    const close = doc.indexOf('\n```', open + fence.length + 4);
    return at < 0 || open < 0 ? '' : doc.slice(open + fence.length + 4, close + 1);
  };
  t.equal(shown('### The unit file', 'ini'), readFileSync(UNIT, 'utf8'), `"The unit file" is ${UNIT}`);
  t.equal(shown('### The example configuration', 'json'), readFileSync(EXAMPLE, 'utf8'), `"The example configuration" is ${EXAMPLE}`);
});
