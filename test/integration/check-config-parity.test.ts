/**
 * `mailcairnd check-config` and `mailcairnd` refuse alike: for every
 * configuration in the list, check-config refuses with startup's exit code
 * and the same problem lines, and startup refuses it before it opens the
 * database or binds a socket. (What needs the running system, a port held by
 * another process or a locked database, is startup's alone.)
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { listenerPort, spawnDaemon, tempDir, writeConfig } from '../helpers/daemon.ts';
import { reservePort } from '../helpers/ports.ts';
import { createCa, type IssueOptions, issue } from '../harness/test-ca.ts';

// Two processes per case, each loading the sources through tsx.
t.setTimeout(300_000);

const profile = (name: string, dir: string) => ({
  Name: name,
  Domain: `${name}.example.org`,
  Port: 0,
  ServerCertificate: {
    CertificateChain: { Name: `${name}-chain`, SecretReference: `file:${join(dir, 'absent', 'chain.pem')}` },
    PrivateKey: { Name: `${name}-key`, SecretReference: `file:${join(dir, 'absent', 'key.pem')}` },
  },
});

/** A profile serving `domain` from a leaf of a test authority made under `dir`, with what `leaf` overrides (names, validity). */
const issuedProfile = (name: string, dir: string, leaf: Partial<IssueOptions> = {}) => {
  const issued = issue(createCa(dir, `${name}-ca`), { name, dns: [`${name}.example.org`], eku: ['serverAuth'], ...leaf });
  return {
    Name: name,
    Domain: `${name}.example.org`,
    BindAddress: '127.0.0.1',
    Port: 0,
    ServerCertificate: {
      CertificateChain: { Name: `${name}-chain`, SecretReference: `file:${issued.certPath}` },
      PrivateKey: { Name: `${name}-key`, SecretReference: `file:${issued.keyPath}` },
    },
  };
};

type Case = { name: string; config: (dir: string) => Record<string, unknown> | Promise<Record<string, unknown>>; env?: NodeJS.ProcessEnv; expect: RegExp };

const REFUSED: Case[] = [
  {
    name: 'MCP HttpsOnly with certificate files that do not exist',
    config: (dir) => ({ McpEndpoint: { Enabled: true, Port: 0, Transport: 'HttpsOnly', Https: { Endpoints: [profile('mcp', dir)] } } }),
    expect: /^McpEndpoint:Https:Endpoints:0:ServerCertificate:CertificateChain:SecretReference: could not be read at startup/,
  },
  {
    name: 'an administrative HTTPS profile whose certificate has expired, with a redirect listener',
    config: (dir) => ({
      AdminEndpoint: {
        Enabled: true,
        Port: 0,
        Https: {
          Endpoints: [issuedProfile('admin', dir, { validFromDays: -30, validToDays: -1 })],
          Redirect: { BindAddress: '127.0.0.1', Port: 0 },
        },
      },
    }),
    expect: /^AdminEndpoint:Https:Endpoints:0:ServerCertificate:CertificateChain: the leaf certificate is not valid now: it expired on /,
  },
  {
    name: 'health over HttpsOnly with a certificate for another name',
    config: (dir) => ({
      HealthEndpoints: { Port: 0, Transport: 'HttpsOnly', Https: { Endpoints: [issuedProfile('health', dir, { dns: ['other.example.org'] })] } },
    }),
    expect: /^HealthEndpoints:Https:Endpoints:0:ServerCertificate:CertificateChain: no subject alternative name of the leaf certificate covers Domain/,
  },
  {
    name: 'an API key file that does not exist',
    config: (dir) => ({
      McpEndpoint: {
        Enabled: true,
        BindAddress: '127.0.0.1',
        Port: 0,
        Authentication: [{ ApiKey: { Name: 'agent', SecretReference: `file:${join(dir, 'absent.key')}`, Lifetime: 'NoLimit' } }],
      },
    }),
    expect: /^McpEndpoint:Authentication:0:ApiKey:SecretReference: /,
  },
  {
    name: 'an API key no client can send in a header',
    config: () => ({
      AdminEndpoint: {
        Enabled: true,
        Port: 0,
        Authentication: [{ ApiKey: { Name: 'operator', SecretReference: 'env:PARITY_ADMIN_KEY', Lifetime: 'NoLimit' } }],
      },
    }),
    env: { PARITY_ADMIN_KEY: 'has a space' },
    expect: /^AdminEndpoint:Authentication:0:ApiKey:SecretReference: holds a space/,
  },
  {
    name: 'unreadable certificate files and an unreadable key together',
    config: (dir) => ({
      McpEndpoint: {
        Enabled: true,
        Transport: 'HttpsOnly',
        Https: { Endpoints: [profile('mcp', dir)] },
        Authentication: [{ ApiKey: { Name: 'agent', SecretReference: `file:${join(dir, 'absent.key')}`, Lifetime: 'NoLimit' } }],
      },
    }),
    expect: /^McpEndpoint:Authentication:0:ApiKey:SecretReference: /,
  },
  {
    name: 'a misspelled key',
    config: () => ({ HealthEndpoints: { Port: 0 }, Outbox: { Enabeld: true } }),
    expect: /^Outbox:Enabeld: unknown setting \(did you mean Enabled\?\)/,
  },
  {
    name: 'two listeners on one port',
    config: async () => {
      const port = await reservePort();
      return { HealthEndpoints: { Port: port }, AdminEndpoint: { Enabled: true, Port: port } };
    },
    expect: /^HealthEndpoints:Port: port \d+ is also bound by AdminEndpoint \(AdminEndpoint:Port\)/,
  },
  {
    name: 'a rule naming an alias no account maps',
    config: () => ({
      MailSynchronization: { Enabled: false },
      Accounts: [
        {
          Id: 'alice',
          Imap: { Host: '127.0.0.1', Security: 'None', Username: 'alice', Password: 'env:PARITY_UNUSED' },
          Folders: [{ Alias: 'inbox', Path: 'INBOX' }],
        },
      ],
      MailRules: { Rules: [{ Name: 'r', When: { SenderDomain: 'example.org' }, Then: { MoveTo: 'nowhere' } }] },
    }),
    expect: /^MailRules:Rules:0:Then:MoveTo: names alias nowhere/,
  },
];

/** The problem lines of a check-config refusal (after the "Refused" line, indented by two spaces). */
function checkConfigProblems(stdout: string): string[] {
  const lines = stdout.split('\n');
  const at = lines.indexOf('Refused: the service would not start.');
  return at < 0
    ? []
    : lines
        .slice(at + 1)
        .filter((line) => line.startsWith('  '))
        .map((line) => line.slice(2));
}

/** The problem lines of a startup refusal (after "mailcairnd: refused to start (CODE)" on standard error). */
function startupProblems(stderr: string): string[] {
  const lines = stderr.split('\n');
  const at = lines.findIndex((line) => line.startsWith('mailcairnd: refused to start ('));
  return at < 0 ? [] : lines.slice(at + 1).filter((line) => line !== '');
}

for (const refused of REFUSED) {
  t.test(`refused alike: ${refused.name}`, async (t) => {
    const dir = tempDir(t);
    const database = join(dir, 'data', 'mailcairn.db');
    const file = writeConfig(dir, { HealthEndpoints: { Port: 0 }, Storage: { Database: database }, ...(await refused.config(dir)) });
    const env = refused.env ?? {};
    const check = spawnDaemon(['check-config', '--config', file], { env });
    const start = spawnDaemon(['--config', file], { env });
    t.teardown(() => void start.child.kill('SIGKILL'));
    const checked = await check.exited;
    // Should check-config accept it, the service would run: stop it rather than wait.
    if (checked.code !== 78) start.child.kill('SIGTERM');
    const started = await start.exited;
    t.equal(checked.code, 78, 'check-config refuses with EX_CONFIG');
    t.equal(started.code, checked.code, 'startup exits with the same code');
    const problems = checkConfigProblems(check.stdout());
    t.ok(
      problems.some((line) => refused.expect.test(line)),
      `check-config names the problem: ${problems.join(' | ')}`,
    );
    t.same(startupProblems(start.stderr()), problems, 'startup gives the same problem lines');
    t.notOk(existsSync(database), 'startup refused before it opened the database');
    t.notOk(
      start.lines().some((l) => l.event === 'listener.open'),
      'no listener opened',
    );
  });
}

t.test('a missing configuration file is refused alike', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'absent.json');
  const check = spawnDaemon(['check-config', '--config', file]);
  const start = spawnDaemon(['--config', file]);
  const [checked, started] = await Promise.all([check.exited, start.exited]);
  t.equal(checked.code, 78);
  t.equal(started.code, 78);
  t.same(startupProblems(start.stderr()), checkConfigProblems(check.stdout()));
  t.match(checkConfigProblems(check.stdout()).join('\n'), /absent\.json does not exist/);
});

t.test('accepted alike: MCP over TLS with a good certificate, and the redirect listener', async (t) => {
  const dir = tempDir(t);
  const database = join(dir, 'data', 'mailcairn.db');
  const file = writeConfig(dir, {
    HealthEndpoints: { Port: 0 },
    Storage: { Database: database },
    McpEndpoint: {
      Enabled: true,
      Transport: 'HttpAndHttps',
      Https: { Endpoints: [issuedProfile('mcp', dir)], Redirect: { BindAddress: '127.0.0.1', Port: 0 } },
    },
  });
  const check = spawnDaemon(['check-config', '--config', file]);
  const start = spawnDaemon(['--config', file]);
  t.teardown(() => void start.child.kill('SIGKILL'));
  t.equal((await check.exited).code, 0, check.stdout());
  t.match(check.stdout(), /McpEndpoint:Https:Endpoints:0 \(mcp\): serving \/mcp for mcp\.example\.org on https:\/\/127\.0\.0\.1:0/);
  t.ok((await listenerPort(start, 'McpEndpoint:Https:Endpoints:0')) > 0, 'the TLS socket opened');
  t.ok((await listenerPort(start, 'McpEndpoint:Https:Redirect')) > 0, 'the redirect listener opened');
  start.child.kill('SIGTERM');
  t.equal((await start.exited).code, 0, 'and it stops cleanly');
});
