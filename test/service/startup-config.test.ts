/**
 * `loadStartupConfig`, what startup and check-config both run: validation,
 * then the refusals of what this build does not serve and of credential
 * material, reported together, then the posture with its warnings.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { loadStartupConfig } from '../../service/startup-config.ts';
import { profile, refusalLines } from '../config/fixtures.ts';

const dir = mkdtempSync(join(tmpdir(), 'mailcairn-startup-'));
function file(content: unknown): string {
  const path = join(dir, `c${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(path, JSON.stringify(content));
  return path;
}

t.test('an accepted configuration gives the frozen configuration and its posture', (t) => {
  const { config, posture } = loadStartupConfig({ file: file({ Spam: {} }), env: {} });
  t.ok(Object.isFrozen(config));
  t.ok(posture.lines.some((line) => line.startsWith('HealthEndpoints: serving')));
  t.same(
    posture.warnings.map((w) => `${w.code} ${w.setting}`),
    ['not-served Spam'],
  );
  t.end();
});

t.test('what is not served, unreadable credential material and unreadable certificates are refused together, in that order', (t) => {
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
  t.equal(lines.length, 4);
  t.match(lines[0], /^McpEndpoint:Transport: only Http is served by this release/);
  t.match(lines[1], /^McpEndpoint:Authentication:0:ApiKey:SecretReference: /);
  t.match(lines[2], /^McpEndpoint:Https:Endpoints:0:ServerCertificate:CertificateChain:SecretReference: could not be read at startup/);
  t.match(lines[3], /^McpEndpoint:Https:Endpoints:0:ServerCertificate:PrivateKey:SecretReference: could not be read at startup/);
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
