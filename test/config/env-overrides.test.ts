/**
 * `MAILCAIRN__Section__Key` overrides as an operator uses them: scalars,
 * nested keys, list elements by index, coercion to the setting's kind, JSON
 * literals, removal, and refusals that name the setting and the variable
 * without repeating the value.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { loadConfig } from '../../config/load.ts';
import { refusalLines } from './fixtures.ts';

const dir = mkdtempSync(join(tmpdir(), 'mailcairn-env-'));
const base = join(dir, 'base.json');
writeFileSync(
  base,
  JSON.stringify({
    HealthEndpoints: { Port: 8081 },
    Accounts: [{ Id: 'alice', Imap: { Host: 'imap.example.org', Username: 'alice', Password: 'file:/run/secrets/alice' }, Folders: [{ Alias: 'inbox' }] }],
  }),
);

function load(env: NodeJS.ProcessEnv) {
  return loadConfig({ file: base, env });
}

t.test('a scalar override replaces the file value and becomes a number', (t) => {
  const config = load({ MAILCAIRN__HealthEndpoints__Port: '9081' });
  t.equal(config.HealthEndpoints.Port, 9081);
  t.end();
});

t.test('a nested override becomes a boolean', (t) => {
  const config = load({ MAILCAIRN__McpEndpoint__RateLimiting__Enabled: 'false', MAILCAIRN__McpEndpoint__Enabled: 'TRUE' });
  t.equal(config.McpEndpoint.RateLimiting.Enabled, false);
  t.equal(config.McpEndpoint.Enabled, true);
  t.end();
});

t.test('segments match keys regardless of case', (t) => {
  const config = load({ MAILCAIRN__MCPENDPOINT__RATELIMITING__TOKENCAPACITY: '500' });
  t.equal(config.McpEndpoint.RateLimiting.TokenCapacity, 500);
  t.end();
});

t.test('time spans are written as in the file', (t) => {
  t.equal(load({ MAILCAIRN__MailSynchronization__Interval: '00:10:00' }).MailSynchronization.Interval, 600_000);
  t.end();
});

t.test('list elements are addressed by index, and an index may add the next element', (t) => {
  const config = load({
    MAILCAIRN__McpEndpoint__Authentication__0__ApiKey__Name: 'desktop',
    MAILCAIRN__McpEndpoint__Authentication__0__ApiKey__SecretReference: 'env:DESKTOP_KEY',
    MAILCAIRN__McpEndpoint__Authentication__0__ApiKey__Lifetime: 'NoLimit',
    MAILCAIRN__McpEndpoint__Authentication__0__Permissions__0: 'service.mail.read',
    MAILCAIRN__Accounts__0__Imap__Port: '1993',
    MAILCAIRN__Accounts__0__Folders__1__Alias: 'sent',
  });
  t.equal(config.McpEndpoint.Authentication[0]?.ApiKey?.Name, 'desktop');
  t.same(config.McpEndpoint.Authentication[0]?.Permissions, ['service.mail.read']);
  t.equal(config.Accounts[0]?.Imap.Port, 1993, 'an element of the file is overridden in place');
  t.equal(config.Accounts[0]?.Imap.Host, 'imap.example.org', 'its other settings stay');
  t.same(
    config.Accounts[0]?.Folders.map((f) => f.Alias),
    ['inbox', 'sent'],
  );
  t.end();
});

t.test('index 10 is applied after index 9, not after index 1', (t) => {
  const env: NodeJS.ProcessEnv = {};
  for (let i = 0; i <= 10; i += 1) env[`MAILCAIRN__ReverseProxy__TrustedProxies__${i}`] = `10.0.0.${i}`;
  t.equal(load(env).ReverseProxy.TrustedProxies.length, 11);
  t.end();
});

t.test('a JSON literal is read where a list goes', (t) => {
  const config = load({ MAILCAIRN__McpEndpoint__Cors__AllowedOrigins: '["https://agent.example.org"]' });
  t.same(config.McpEndpoint.Cors.AllowedOrigins, ['https://agent.example.org']);
  t.end();
});

t.test('text settings are not coerced', (t) => {
  const config = load({ MAILCAIRN__Accounts__0__Imap__Username: '12345' });
  t.equal(config.Accounts[0]?.Imap.Username, '12345');
  t.end();
});

t.test('an empty value removes the setting so its default applies', (t) => {
  t.equal(load({ MAILCAIRN__HealthEndpoints__Port: '' }).HealthEndpoints.Port, 8081);
  t.end();
});

t.test('an unknown key via the environment is refused naming it and the variable', (t) => {
  const lines = refusalLines(() => load({ MAILCAIRN__McpEndpoint__RateLimiting__Burst: '5', MAILCAIRN__Mcp__Enabled: 'true' }));
  t.ok(lines.includes('McpEndpoint:RateLimiting:Burst: unknown setting (set by MAILCAIRN__McpEndpoint__RateLimiting__Burst)'), lines.join('\n'));
  t.ok(lines.some((line) => line.startsWith('Mcp: unknown section') && line.includes('MAILCAIRN__Mcp__Enabled')));
  t.end();
});

t.test('a value out of range names the setting, range and variable', (t) => {
  const lines = refusalLines(() => load({ MAILCAIRN__McpEndpoint__RateLimiting__MaxConcurrentRequests: '0' }));
  t.same(lines, [
    'McpEndpoint:RateLimiting:MaxConcurrentRequests: must be between 1 and 1000 (was 0) (set by MAILCAIRN__McpEndpoint__RateLimiting__MaxConcurrentRequests)',
  ]);
  t.end();
});

t.test('a value of the wrong kind is refused without repeating it', (t) => {
  const lines = refusalLines(() => load({ MAILCAIRN__HealthEndpoints__Port: 'hunter2', MAILCAIRN__McpEndpoint__Enabled: 'maybe-secret' }));
  t.ok(lines.includes('HealthEndpoints:Port: must be a number (set by MAILCAIRN__HealthEndpoints__Port)'));
  t.ok(lines.includes('McpEndpoint:Enabled: must be true or false (set by MAILCAIRN__McpEndpoint__Enabled)'));
  t.notMatch(lines.join('\n'), /hunter2|maybe-secret/);
  t.end();
});

t.test('a gap in a list is refused', (t) => {
  const lines = refusalLines(() => load({ MAILCAIRN__Accounts__2__Id: 'carol' }));
  t.match(lines[0], /^Accounts:2: index 2 leaves a gap: the list has 1 element\(s\) \(set by MAILCAIRN__Accounts__2__Id\)/);
  t.end();
});

t.test('malformed names and malformed JSON are refused', (t) => {
  const lines = refusalLines(() => load({ MAILCAIRN__McpEndpoint____Port: '1', MAILCAIRN__McpEndpoint__Cors__AllowedOrigins: '["x"' }));
  t.ok(lines.some((line) => line.startsWith('MAILCAIRN__McpEndpoint____Port: names no setting')));
  t.ok(lines.includes('MAILCAIRN__McpEndpoint__Cors__AllowedOrigins: is not valid JSON'));
  t.end();
});

t.test('variables without the double-underscore prefix are not overrides', (t) => {
  t.equal(load({ MAILCAIRN_HealthEndpoints__Port: '1', MAILCAIRN_CONFIG_EXTRA: 'x' }).HealthEndpoints.Port, 8081);
  t.end();
});
