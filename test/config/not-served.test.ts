/**
 * The table of what this build does not serve: which written settings count
 * (a section, or a key of any list element), which values are refused (only
 * on an enabled endpoint), and that every row names a real setting, so the
 * docs can mark it.
 */
import t from 'tap';
import { renderConfigurationDocs } from '../../config/docs.ts';
import { validateConfig } from '../../config/load.ts';
import { NO_EFFECT, NOT_SERVED, notServedProblems, writtenWithoutEffect } from '../../config/not-served.ts';
import type { Config } from '../../config/schema.ts';
import { formatProblem } from '../../config/problem.ts';
import { profile } from './fixtures.ts';

function config(raw: unknown): Config {
  const result = validateConfig(raw);
  if (!result.ok) throw new Error(result.problems.map(formatProblem).join('\n'));
  return result.config;
}

const written = (tree: unknown): string[] => writtenWithoutEffect(tree).map((row) => row.setting);

const account = (id: string, extra: Record<string, unknown> = {}) => ({
  Id: id,
  Imap: { Host: 'imap.example.org', Username: id, Password: 'env:PW' },
  Folders: [{ Alias: 'inbox' }],
  ...extra,
});

t.test('a section counts as written when the tree holds it, even empty or at its defaults', (t) => {
  t.same(written({}), []);
  t.same(written({ MailRules: {} }), [], 'mail rules are served');
  t.same(written({ Spam: {} }), [], 'spam classification is served');
  t.same(written({ Telemetry: { Enabled: true } }), [], 'telemetry is served');
  t.same(written({ Outbox: {} }), [], 'the outbox is served');
  t.same(
    written({ Spam: { Enabled: false }, MailRules: { Enabled: false }, Accounts: [account('a', { Owner: 'A' })] }),
    ['Accounts:[]:Owner'],
    'mail rules and spam are served',
  );
  t.same(written({ McpEndpoint: { Enabled: true }, Storage: {}, Logging: {} }), [], 'served sections never count');
  t.same(written(null), []);
  t.same(written([]), []);
  t.end();
});

t.test('an account key counts once, whichever accounts write it', (t) => {
  t.same(written({ Accounts: [account('a'), account('b')] }), []);
  t.same(written({ Accounts: [account('a'), account('b', { Owner: 'B' })] }), ['Accounts:[]:Owner']);
  t.same(written({ Accounts: [account('a', { Owner: 'A', Smtp: {} }), account('b', { Owner: 'B', Smtp: {} })] }), ['Accounts:[]:Owner'], 'Smtp is served');
  t.same(written({ Accounts: {} }), [], 'not a list');
  t.end();
});

t.test('TLS is served: no row refuses a TLS transport, and the docs mark no TLS setting', (t) => {
  const enabled = {
    McpEndpoint: { Enabled: true, Transport: 'HttpsOnly', Https: { Endpoints: [profile('mcp', 'mcp.example.org')] } },
    AdminEndpoint: { Enabled: true, Https: { Endpoints: [profile('admin', 'admin.example.org', 9443)] } },
    HealthEndpoints: { Enabled: true, Transport: 'HttpsOnly', Https: { Endpoints: [profile('health', 'health.example.org', 10443)] } },
  };
  t.same(notServedProblems(config(enabled)), [], 'every endpoint on TLS: nothing refused as not served');
  t.same(written(enabled), [], 'and nothing written counts as without effect');
  t.same(
    NOT_SERVED.filter((row) => /Https|Transport|ClientCertificate/.test(row.setting)),
    [],
    'the table names no TLS setting',
  );
  const tlsRows = renderConfigurationDocs()
    .split('\n')
    .filter((line) => /^\| `[A-Za-z]+:(Https|Transport|ClientCertificateProfiles)/.test(line));
  t.ok(tlsRows.length > 30, 'the docs have rows for the TLS settings');
  t.same(
    tlsRows.filter((line) => line.includes('Not served yet')),
    [],
    'none of them is marked not served',
  );
  t.end();
});

t.test('the rows that remain still warn: a written no-effect setting beside TLS counts, the TLS does not', (t) => {
  const tree = {
    McpEndpoint: { Enabled: true, Transport: 'HttpsOnly', Https: { Endpoints: [profile('mcp', 'mcp.example.org')] } },
    MailRules: { Enabled: true },
    Accounts: [account('a', { Owner: 'A' })],
  };
  t.same(written(tree), ['Accounts:[]:Owner']);
  t.same(notServedProblems(config(tree)), []);
  t.end();
});

t.test('every row names a setting the docs have a row or section for, and the docs mark it', (t) => {
  const page = renderConfigurationDocs();
  const lines = page.split('\n');
  for (const row of NOT_SERVED) {
    const paths = row.kind === 'refused' ? [row.setting, ...row.covers] : [row.setting];
    for (const path of paths) {
      const tableRow = lines.find((line) => line.startsWith(`| \`${path}\` |`));
      const heading = lines.indexOf(`## ${path}`);
      if (tableRow !== undefined) t.match(tableRow, /\*\*Not served yet\*\* \(/, `${path} is marked in its row`);
      else {
        t.ok(heading >= 0, `${path} is a section or a row`);
        t.match(lines[heading + 2] ?? '', /\*\*Not served yet:\*\* accepted, but has no effect in this release: /, `${path} is marked under its heading`);
      }
    }
  }
  t.match(page, /\*\*Not served yet\.\*\* /, 'the introduction lists them');
  t.equal(new Set(NOT_SERVED.map((row) => row.setting)).size, NOT_SERVED.length, 'one row per setting');
  t.ok(NO_EFFECT.length > 0);
  t.end();
});
