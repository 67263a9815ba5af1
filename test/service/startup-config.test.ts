/**
 * `loadStartupConfig`, what startup and check-config both run: validation,
 * then the refusals of what this build does not serve, of credential
 * material and of server certificates, reported together, then the posture
 * with its warnings.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { loadStartupConfig } from '../../service/startup-config.ts';
import { profile, refusalLines } from '../config/fixtures.ts';
import { createCa, issue } from '../harness/test-ca.ts';

const dir = mkdtempSync(join(tmpdir(), 'mailcairn-startup-'));
function file(content: unknown): string {
  const path = join(dir, `c${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(path, JSON.stringify(content));
  return path;
}

t.test('an accepted configuration gives the frozen configuration and its posture', (t) => {
  const { config, posture } = loadStartupConfig({ file: file({ Spam: {}, MailRules: {} }), env: {} });
  t.ok(Object.isFrozen(config));
  t.ok(posture.lines.some((line) => line.startsWith('HealthEndpoints: serving')));
  t.ok(posture.lines.some((line) => line.startsWith('Spam: rspamd at ')));
  t.ok(posture.lines.some((line) => line.startsWith('MailRules: 0 rules')));
  t.same(
    posture.warnings.map((w) => `${w.code} ${w.setting}`),
    [],
    'mail rules and spam are served: no not-served warning',
  );
  t.end();
});

t.test('unreadable credential material and unreadable certificates are refused together, in that order', (t) => {
  const lines = refusalLines(() =>
    loadStartupConfig({
      file: file({
        McpEndpoint: {
          Enabled: true,
          Transport: 'HttpsOnly',
          Https: { Endpoints: [profile('mcp', 'mcp.example.org')] },
          Authentication: [{ ApiKey: { Name: 'agent', SecretReference: 'env:AGENT_KEY', Lifetime: 'NoLimit' } }],
        },
      }),
      env: {},
    }),
  );
  t.equal(lines.length, 3, 'the TLS transport itself is not refused');
  t.match(lines[0], /^McpEndpoint:Authentication:0:ApiKey:SecretReference: /);
  t.match(lines[1], /^McpEndpoint:Https:Endpoints:0:ServerCertificate:CertificateChain:SecretReference: could not be read at startup/);
  t.match(lines[2], /^McpEndpoint:Https:Endpoints:0:ServerCertificate:PrivateKey:SecretReference: could not be read at startup/);
  t.end();
});

t.test('a TLS profile whose certificate passes is accepted, and its socket is in the posture', (t) => {
  const ca = createCa(dir, 'startup-ca');
  const leaf = issue(ca, { name: 'mcp', dns: ['mcp.example.org'], eku: ['serverAuth'], keyUsage: ['digitalSignature'] });
  const { posture } = loadStartupConfig({
    file: file({
      McpEndpoint: {
        Enabled: true,
        Transport: 'HttpsOnly',
        Https: {
          Endpoints: [
            {
              ...profile('mcp', 'mcp.example.org'),
              ServerCertificate: {
                CertificateChain: { Name: 'mcp-chain', SecretReference: `file:${leaf.certPath}` },
                PrivateKey: { Name: 'mcp-key', SecretReference: `file:${leaf.keyPath}` },
              },
            },
          ],
        },
      },
    }),
    env: {},
  });
  t.ok(
    posture.lines.includes('McpEndpoint:Https:Endpoints:0 (mcp): serving /mcp for mcp.example.org on https://0.0.0.0:8443, TLS 1.2 or later, Http1 and Http2'),
    posture.lines.join('\n'),
  );
  t.end();
});

t.test('a validation refusal comes alone: nothing further is judged', (t) => {
  const lines = refusalLines(() =>
    loadStartupConfig({
      file: file({ McpEndpoint: { Enabled: true, Transport: 'HttpsOnly', Https: { Endpoints: [profile('mcp', 'mcp.example.org')] } }, Outbox: { Tries: 3 } }),
      env: {},
    }),
  );
  t.same(lines, ['Outbox:Tries: unknown setting']);
  t.end();
});

t.test('an expired key is not read, and a disabled endpoint neither', (t) => {
  const { posture } = loadStartupConfig({
    file: file({
      McpEndpoint: { Enabled: true, Authentication: [{ ApiKey: { Name: 'old', SecretReference: 'env:GONE', Lifetime: '2001-01-01T00:00:00Z' } }] },
      AdminEndpoint: { Authentication: [{ ApiKey: { Name: 'admin', SecretReference: 'env:ALSO_GONE', Lifetime: 'NoLimit' } }] },
    }),
    env: {},
  });
  t.ok(posture.lines.some((line) => /McpEndpoint:Authentication:0: ApiKey old \(env:, expired/.test(line)));
  t.end();
});
