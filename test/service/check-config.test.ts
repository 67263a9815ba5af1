/**
 * `mailcairnd check-config`: exit codes, the posture and warnings on
 * acceptance, every problem on refusal (startup's own, TLS and credential
 * material included), and no secret material either way.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { EX_CONFIG, runCheckConfig } from '../../service/check-config.ts';
import { profile } from '../config/fixtures.ts';
import { createCa, issue } from '../harness/test-ca.ts';

const dir = mkdtempSync(join(tmpdir(), 'mailcairn-check-'));
function run(content: unknown, env: NodeJS.ProcessEnv = {}): { code: number; out: string[] } {
  const file = join(dir, `c${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(content));
  const out: string[] = [];
  const code = runCheckConfig({ file, env, out: (line) => out.push(line) });
  return { code, out };
}

t.test('an accepted configuration exits 0 and prints the posture and its warnings', (t) => {
  const keyFile = join(dir, 'admin.key');
  writeFileSync(keyFile, 'admin-key-material-9f8e');
  const { code, out } = run(
    {
      McpEndpoint: { Enabled: true },
      AdminEndpoint: { Enabled: true, Authentication: [{ ApiKey: { Name: 'operator', SecretReference: `file:${keyFile}`, Lifetime: 'NoLimit' } }] },
    },
    { MCP_KEY: 'env-material-1234' },
  );
  t.equal(code, 0);
  const text = out.join('\n');
  t.match(text, /Accepted: the service would start/);
  t.match(text, /McpEndpoint: serving \/mcp on http:\/\/0\.0\.0\.0:8080/);
  t.match(text, /AdminEndpoint:Authentication:0: ApiKey operator \(file:, no limit\); wrote no grant/);
  t.match(text, /warning \[mcp-no-authentication\] McpEndpoint:Authentication: /);
  t.match(text, /warning \[mcp-dns-rebinding\] McpEndpoint:Cors:AllowedOrigins: /);
  t.match(text, /warning \[admin-clear-text\] /);
  t.match(text, /warning \[proxy-trusts-everyone\] /);
  t.notMatch(text, /admin-key-material|env-material|admin\.key/);
  t.end();
});

t.test('a configuration without warnings says so', (t) => {
  const { code, out } = run({});
  t.equal(code, 0);
  t.ok(out.includes('No startup warnings.'));
  t.end();
});

t.test('a refused configuration exits 78 and prints every problem, without the secrets written', (t) => {
  const { code, out } = run({
    McpEndpoint: { Enabled: true, Port: 8081, Authentication: [{ ApiKey: { Name: 'agent', SecretReference: 'inline-secret-abc123', Lifetime: 'NoLimit' } }] },
    AdminEndpoint: { Enabld: true },
  });
  t.equal(code, EX_CONFIG);
  t.equal(code, 78);
  const text = out.join('\n');
  t.match(text, /Refused: the service would not start/);
  t.match(text, /McpEndpoint:Authentication:0:ApiKey:SecretReference: must be a secret reference/);
  t.match(text, /AdminEndpoint:Enabld: unknown setting \(did you mean Enabled\?\)/);
  t.notMatch(text, /inline-secret-abc123/);
  t.end();
});

t.test('port conflicts are refusals naming both sections', (t) => {
  const { code, out } = run({ McpEndpoint: { Enabled: true, Port: 8081 } });
  t.equal(code, 78);
  t.match(out.join('\n'), /HealthEndpoints:Port: port 8081 is also bound by McpEndpoint \(McpEndpoint:Port\)/);
  t.end();
});

t.test('a missing named file is a refusal; a missing default file is accepted as defaults', (t) => {
  const out: string[] = [];
  t.equal(runCheckConfig({ file: join(dir, 'absent.json'), env: {}, out: (l) => out.push(l) }), 78);
  t.match(out.join('\n'), /absent\.json does not exist/);
  const cwd = process.cwd();
  process.chdir(dir);
  t.teardown(() => process.chdir(cwd));
  const defaults: string[] = [];
  t.equal(runCheckConfig({ env: {}, out: (l) => defaults.push(l) }), 0);
  t.match(defaults[0], /mailcairn\.json \(absent: defaults apply\)/);
  t.end();
});

t.test('a TLS profile is judged by its certificate references, as startup judges them', (t) => {
  const { code, out } = run({
    McpEndpoint: { Enabled: true, Transport: 'HttpsOnly', Https: { Endpoints: [profile('mcp', 'mcp.example.org')] } },
  });
  t.equal(code, 78);
  t.same(out.slice(1), [
    'Refused: the service would not start.',
    '  McpEndpoint:Https:Endpoints:0:ServerCertificate:CertificateChain:SecretReference: could not be read at startup: a secret reference (file:) could not be read: nothing exists there (rule: the reference resolves and parses)',
    '  McpEndpoint:Https:Endpoints:0:ServerCertificate:PrivateKey:SecretReference: could not be read at startup: a secret reference (file:) could not be read: nothing exists there (rule: the reference resolves and parses)',
  ]);
  t.notMatch(out.join('\n'), /https:\/\/|\/etc\/tls/, 'no https listener is printed, nor the paths behind the references');
  t.end();
});

t.test('a TLS profile with a good certificate is accepted: one line per socket, redirect included, and no material', (t) => {
  const ca = createCa(dir, 'check-ca');
  const leaf = issue(ca, { name: 'mcp', dns: ['mcp.example.org'], eku: ['serverAuth'] });
  const { code, out } = run({
    McpEndpoint: {
      Enabled: true,
      Transport: 'HttpAndHttps',
      Https: {
        Endpoints: [
          {
            ...profile('mcp', 'mcp.example.org'),
            MinimumTlsVersion: 'Tls13',
            ServerCertificate: {
              CertificateChain: { Name: 'mcp-chain', SecretReference: `file:${leaf.certPath}` },
              PrivateKey: { Name: 'mcp-key', SecretReference: `file:${leaf.keyPath}` },
            },
          },
        ],
        Redirect: { Port: 8080 },
      },
    },
  });
  t.equal(code, 0, out.join('\n'));
  const text = out.join('\n');
  t.match(text, /McpEndpoint:Https:Endpoints:0 \(mcp\): serving \/mcp for mcp\.example\.org on https:\/\/0\.0\.0\.0:8443, TLS 1\.3, Http1 and Http2/);
  t.match(text, /McpEndpoint:Https:Redirect: clear text on 0\.0\.0\.0:8080 answers 308/);
  t.notMatch(text, /BEGIN|check-ca|mcp\.crt|mcp\.key/, 'no material and no path');
  t.end();
});

t.test('credential material is judged as startup judges it, and never printed', (t) => {
  const { code, out } = run(
    { AdminEndpoint: { Enabled: true, Authentication: [{ ApiKey: { Name: 'operator', SecretReference: 'env:ADMIN_KEY', Lifetime: 'NoLimit' } }] } },
    { ADMIN_KEY: 'two words-secret' },
  );
  t.equal(code, 78);
  t.match(out.join('\n'), /AdminEndpoint:Authentication:0:ApiKey:SecretReference: holds a space/);
  t.notMatch(out.join('\n'), /words-secret/);
  t.end();
});

t.test('a written setting this release does not serve is accepted with one warning, an override counting as written', (t) => {
  const { code, out } = run(
    {
      MailRules: { Enabled: true },
      Accounts: [{ Id: 'a', Imap: { Host: 'imap.example.org', Username: 'a', Password: 'env:PW' }, Folders: [{ Alias: 'inbox' }] }],
    },
    { MAILCAIRN__Accounts__0__Owner: 'Alice', PW: 'imap-password' },
  );
  t.equal(code, 0);
  t.same(
    out.filter((line) => line.includes('not-served')),
    ['  warning [not-served] Accounts:[]:Owner: has no effect in this release: the label is shown nowhere'],
  );
  t.match(out.join('\n'), /MailRules: on, no rules \(nothing is judged\)/, 'mail rules are served: no warning, a line saying what runs');
  t.ok(
    out.some((line) => line.includes('Spam: rspamd at http://127.0.0.1:11333') && line.endsWith('arriving mail not classified (admin runs only)')),
    'spam is served',
  );
  t.ok(out.includes('Startup warnings (1):'));
  t.end();
});

t.test('telemetry: an OTEL_ variable that does not parse is refused by name; the effective settings are printed', (t) => {
  const refused = run({ Telemetry: { Enabled: true } }, { OTEL_METRICS_EXPORTER: 'console', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' });
  t.equal(refused.code, 78);
  t.same(refused.out.slice(1), [
    'Refused: the service would not start.',
    '  OTEL_METRICS_EXPORTER: names an exporter this build does not have: must be a comma-separated list of otlp, prometheus, none',
    '  OTEL_EXPORTER_OTLP_PROTOCOL: grpc is not served by this build: use http/protobuf or http/json',
  ]);
  const ignored = run({ Telemetry: { Enabled: false } }, { OTEL_METRICS_EXPORTER: 'console' });
  t.equal(ignored.code, 0, 'with Telemetry:Enabled false no variable is read');
  t.ok(ignored.out.includes('  Telemetry: off (no OpenTelemetry SDK is loaded)'));
  const accepted = run(
    { Telemetry: { Enabled: true, Metrics: { Prometheus: { Enabled: true } } } },
    { OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' },
  );
  t.equal(accepted.code, 0);
  t.ok(
    accepted.out.includes(
      '  Telemetry (service.name mailcairn): metrics scraped at http://127.0.0.1:9464/metrics; metrics pushed to http://127.0.0.1:4318/v1/metrics (http/protobuf) every 60000 ms',
    ),
    accepted.out.join('\n'),
  );
  t.end();
});
