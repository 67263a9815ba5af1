/**
 * A written setting this release does not serve (`config/not-served.ts`) is
 * accepted by `mailcairnd check-config` and by `mailcairnd`, with exactly one
 * "no effect" warning each, the same words in both, and never said to be on.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { NO_EFFECT } from '../../config/not-served.ts';
import { spawnDaemon, tempDir, writeConfig } from '../helpers/daemon.ts';

/** Every setting this release does not serve, written; with the warning each must give. */
const NOT_SERVED_SETTINGS = ['Accounts:[]:Owner'];

t.test('the list below covers the whole table', (t) => {
  t.same(
    NO_EFFECT.map((row) => row.setting),
    NOT_SERVED_SETTINGS,
  );
  t.end();
});

function notServedConfig(dir: string): Record<string, unknown> {
  const password = join(dir, 'imap-password');
  writeFileSync(password, 'not-used');
  return {
    HealthEndpoints: { Port: 0 },
    Storage: { Database: join(dir, 'm.db') },
    MailSynchronization: { Enabled: false },
    Accounts: [
      {
        Id: 'alice',
        Owner: 'Alice',
        Imap: { Host: '127.0.0.1', Security: 'None', Username: 'alice', Password: `file:${password}` },
        Folders: [{ Alias: 'inbox', Path: 'INBOX' }, { Alias: 'junk' }],
      },
      {
        Id: 'bob',
        Imap: { Host: '127.0.0.1', Security: 'None', Username: 'bob', Password: `file:${password}` },
        Folders: [{ Alias: 'inbox', Path: 'INBOX' }, { Alias: 'junk' }],
      },
    ],
    Answering: { Endpoints: [{ Alias: 'local', BaseAddress: 'http://127.0.0.1:9/v1', Model: 'chat' }] },
    MailRules: { Enabled: true, Rules: [{ Name: 'file', When: { SenderDomain: 'example.org' }, Then: { MoveTo: 'junk' } }] },
    Spam: { Enabled: true, Action: 'Move', Folder: 'junk' },
  };
}

t.test('written settings this release does not serve: one "no effect" warning each in check-config and in the startup log, never "on"', async (t) => {
  const dir = tempDir(t);
  const file = writeConfig(dir, notServedConfig(dir));

  const check = spawnDaemon(['check-config', '--config', file], { env: {} });
  t.equal((await check.exited).code, 0, 'check-config accepts it');
  const out = check.stdout().split('\n');
  for (const setting of NOT_SERVED_SETTINGS) {
    const lines = out.filter((line) => line.includes(` ${setting}: `));
    t.equal(lines.length, 1, `one line names ${setting}`);
    t.ok(lines[0]?.startsWith(`  warning [not-served] ${setting}: has no effect in this release: `), `and it is the warning: ${lines[0] ?? ''}`);
  }
  t.match(check.stdout(), /MailRules: 1 rule, judging arriving mail/, 'mail rules are served: their line says what runs, no rule value');
  t.notMatch(check.stdout(), /example\.org/, 'no condition value is printed');
  t.match(
    check.stdout(),
    /Spam: rspamd at http:\/\/127\.0\.0\.1:11333, threshold 0\.9, action Move to junk, .*; classifying arriving mail/,
    'spam is described',
  );
  t.match(
    check.stdout(),
    /Answering: endpoint local at 127\.0\.0\.1:9, .*; ask_mail is not offered until an embedding profile is declared and activated/,
    'a chat endpoint without an embedding profile is described as waiting for one, never as answering',
  );
  t.notMatch(check.stdout(), /SMTP 127\.0\.0\.1/, 'no SMTP server is described as in use');
  t.match(check.stdout(), /Not served by this release \(accepted, no effect\): Accounts:\[\]:Owner\n/);

  const daemon = spawnDaemon(['--config', file], { env: {} });
  t.teardown(() => void daemon.child.kill('SIGKILL'));
  for (const end = Date.now() + 30_000; !daemon.lines().some((l) => l.event === 'service.ready'); ) {
    if (Date.now() > end) throw new Error(`the service did not start: ${daemon.stderr()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const warned = daemon.lines().filter((l) => l.event === 'config.warning' && l.code === 'not-served');
  t.same(
    warned.map((l) => l.setting),
    NOT_SERVED_SETTINGS,
    'one warn line per setting, in table order',
  );
  for (const line of warned) {
    t.equal(line.level, 40, `${String(line.setting)} is logged at warn`);
    const fromCheck = out.find((o) => o.startsWith(`  warning [not-served] ${String(line.setting)}: `));
    t.equal(`  warning [not-served] ${String(line.setting)}: ${String(line.msg)}`, fromCheck, 'the same words as check-config');
  }
  const said = daemon
    .lines()
    .filter((l) => l.event === 'config.warning')
    .map((l) => String(l.msg));
  t.notOk(
    said.some((msg) => /(^|: )(on|exported)\b|\bis on\b/.test(msg)),
    'no warning says a not-served setting is on',
  );
  daemon.child.kill('SIGTERM');
  t.equal((await daemon.exited).code, 0);
});

t.test('a configuration writing none of them gets no not-served warning', async (t) => {
  const dir = tempDir(t);
  const file = writeConfig(dir, { HealthEndpoints: { Port: 0 }, Storage: { Database: join(dir, 'm.db') } });
  const check = spawnDaemon(['check-config', '--config', file], { env: {} });
  t.equal((await check.exited).code, 0);
  t.notMatch(check.stdout(), /not-served/);
  t.match(check.stdout(), /No startup warnings\./);
});
