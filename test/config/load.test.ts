/**
 * Loading: the file (named, from $MAILCAIRN_CONFIG, default, missing,
 * malformed), strict binding as an operator meets it, the host listener
 * settings the spec refuses, defaults and freezing, and the examples.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { loadConfig } from '../../config/load.ts';
import { refusalLines } from './fixtures.ts';

const dir = mkdtempSync(join(tmpdir(), 'mailcairn-config-'));
function file(name: string, content: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

t.test('{} is a whole configuration with the documented defaults', (t) => {
  const config = loadConfig({ file: file('empty.json', {}), env: {} });
  t.equal(config.McpEndpoint.Enabled, false);
  t.equal(config.McpEndpoint.Port, 8080);
  t.equal(config.McpEndpoint.BindAddress, '0.0.0.0');
  t.same(config.McpEndpoint.Cors.AllowedOrigins, ['*']);
  t.equal(config.McpEndpoint.RateLimiting.MaxConcurrentRequests, 20);
  t.equal(config.McpEndpoint.RateLimiting.ReplenishmentPeriod, 60_000, 'spans are milliseconds');
  t.equal(config.McpEndpoint.RequestTimeout.Duration, 600_000);
  t.equal(config.AdminEndpoint.BindAddress, '127.0.0.1');
  t.equal(config.AdminEndpoint.Port, 8090);
  t.equal(config.HealthEndpoints.Port, 8081);
  t.equal(config.ReverseProxy.MaximumForwardedHops, 1);
  t.equal(config.MailSynchronization.MaxConcurrentAccounts, 4);
  t.equal(config.Storage.Database, './data/mailcairn.db');
  t.equal(config.Logging.Level, 'info');
  t.same(config.Accounts, []);
  t.end();
});

t.test('the result is deeply frozen', (t) => {
  const config = loadConfig({ file: file('frozen.json', {}), env: {} });
  t.ok(Object.isFrozen(config));
  t.ok(Object.isFrozen(config.McpEndpoint.RateLimiting));
  t.ok(Object.isFrozen(config.McpEndpoint.Cors.AllowedOrigins));
  t.end();
});

t.test('which file is read', async (t) => {
  t.test('a missing default file means defaults', (t) => {
    const cwd = process.cwd();
    process.chdir(dir);
    t.teardown(() => process.chdir(cwd));
    t.equal(loadConfig({ env: {} }).McpEndpoint.Port, 8080);
    t.end();
  });
  t.test('$MAILCAIRN_CONFIG names the file', (t) => {
    const path = file('from-env.json', { HealthEndpoints: { Port: 9181 } });
    t.equal(loadConfig({ env: { MAILCAIRN_CONFIG: path } }).HealthEndpoints.Port, 9181);
    t.end();
  });
  t.test('a missing named file is refused', (t) => {
    const lines = refusalLines(() => loadConfig({ file: join(dir, 'nope.json'), env: {} }));
    t.match(lines[0], /nope\.json does not exist/);
    const fromEnv = refusalLines(() => loadConfig({ env: { MAILCAIRN_CONFIG: join(dir, 'gone.json') } }));
    t.match(fromEnv[0], /gone\.json does not exist/);
    t.end();
  });
  t.test('malformed JSON gives the place, not the text around it', (t) => {
    const path = file('bad.json', '{\n  "Storage": { "AuthToken": "sk-live-abc" \n}');
    const lines = refusalLines(() => loadConfig({ file: path, env: {} }));
    t.match(lines[0], /is not valid JSON/);
    t.notMatch(lines.join('\n'), /sk-live-abc/);
    t.end();
  });
  t.test('a JSON value that is not an object is refused', (t) => {
    t.match(refusalLines(() => loadConfig({ file: file('list.json', []), env: {} }))[0], /must be a JSON object/);
    t.end();
  });
});

t.test('strict binding names each unknown key in Section:Key:0:Sub form, all at once', (t) => {
  const path = file('typos.json', {
    McpEndpoint: {
      Prot: 8080,
      Authentication: [{ ApiKy: { Name: 'a' } }],
      RateLimiting: { MaxConcurrentRequests: 0, Burst: 5 },
    },
    Storag: {},
  });
  const lines = refusalLines(() => loadConfig({ file: path, env: {} }));
  t.ok(lines.includes('McpEndpoint:Prot: unknown setting (did you mean Port?)'), 'section key');
  t.ok(lines.includes('McpEndpoint:Authentication:0:ApiKy: unknown setting (did you mean ApiKey?)'), 'list element key');
  t.ok(lines.includes('McpEndpoint:RateLimiting:Burst: unknown setting'), 'nested object key');
  t.ok(lines.includes('Storag: unknown section (did you mean Storage?)'), 'section');
  t.ok(lines.includes('McpEndpoint:RateLimiting:MaxConcurrentRequests: must be between 1 and 1000 (was 0)'), 'range');
  t.equal(lines.length, 5, 'every problem of the schema is listed, one per line');
  t.end();
});

t.test('file keys are case-sensitive; a miscased key is refused with the right spelling', (t) => {
  const lines = refusalLines(() => loadConfig({ file: file('case.json', { McpEndpoint: { port: 1 } }), env: {} }));
  t.same(lines, ['McpEndpoint:port: unknown setting (did you mean Port?)']);
  t.end();
});

t.test('wrong kinds and missing values say what is expected', (t) => {
  const path = file('kinds.json', {
    McpEndpoint: { Enabled: 'yes', Authentication: { ApiKey: {} }, Port: '8080' },
    Accounts: [{ Id: 'alice', Imap: { Host: 'imap.example.org' } }],
  });
  const lines = refusalLines(() => loadConfig({ file: path, env: {} }));
  t.ok(lines.includes('McpEndpoint:Enabled: must be true or false'));
  t.ok(lines.includes('McpEndpoint:Authentication: must be a list'), 'a non-list where the list belongs');
  t.ok(lines.includes('McpEndpoint:Port: must be a number'));
  t.ok(lines.includes('Accounts:0:Imap:Username: is required'));
  t.ok(lines.includes('Accounts:0:Folders: is required'));
  t.end();
});

t.test('the host listener settings of the spec are refused', (t) => {
  const empty = file('host.json', {});
  for (const variable of ['ASPNETCORE_URLS', 'ASPNETCORE_HTTP_PORTS']) {
    const lines = refusalLines(() => loadConfig({ file: empty, env: { [variable]: 'http://*:5000' } }));
    t.match(lines[0], new RegExp(`^${variable}: is refused: listeners are set only in McpEndpoint, AdminEndpoint and HealthEndpoints`));
  }
  const kestrel = refusalLines(() => loadConfig({ file: file('kestrel.json', { Kestrel: { Endpoints: {} } }), env: {} }));
  t.same(kestrel, ['Kestrel: is refused: listeners are set only in McpEndpoint, AdminEndpoint and HealthEndpoints']);
  const viaEnv = refusalLines(() => loadConfig({ file: empty, env: { MAILCAIRN__Kestrel__Endpoints__Http__Url: 'http://*:1' } }));
  t.match(viaEnv[0], /^Kestrel: is refused/);
  t.end();
});

t.test('an inline secret is refused without repeating it', (t) => {
  const path = file('inline.json', {
    McpEndpoint: { Authentication: [{ ApiKey: { Name: 'agent', SecretReference: 'correct-horse-battery', Lifetime: 'NoLimit' } }] },
    Storage: { Database: 'libsql://db.example.org', AuthToken: 'eyJhbGciOi.secret' },
  });
  const lines = refusalLines(() => loadConfig({ file: path, env: {} }));
  t.match(lines.join('\n'), /McpEndpoint:Authentication:0:ApiKey:SecretReference: must be a secret reference/);
  t.match(lines.join('\n'), /Storage:AuthToken: must be a secret reference/);
  t.notMatch(lines.join('\n'), /correct-horse|eyJhbGciOi/);
  t.end();
});

t.test('the examples load', (t) => {
  const start = loadConfig({ file: 'config/examples/mailcairn.json', env: {} });
  t.equal(start.HealthEndpoints.Port, 8081);
  t.equal(start.HealthEndpoints.BindAddress, '127.0.0.1');
  t.equal(start.McpEndpoint.Enabled, false);
  t.equal(start.AdminEndpoint.Enabled, false);
  t.equal(start.Storage.Database, './data/mailcairn.db');
  t.same(start.Accounts, []);
  const full = loadConfig({ file: 'config/examples/full.json', env: {} });
  t.equal(full.McpEndpoint.Enabled, true, 'validation reads no secret: the references need not exist');
  t.equal(full.Accounts.length, 2);
  t.end();
});
