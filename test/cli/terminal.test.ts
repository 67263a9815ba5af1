/**
 * The client on a terminal (a pty from util-linux `script`; skipped where
 * it is missing): an API key typed at the prompt is not echoed; questions
 * are asked and answered on the terminal (clear text declined, a rewind
 * confirmed with "y"); colour appears on a terminal and not with NO_COLOR.
 */
import { spawnSync } from 'node:child_process';
import t from 'tap';
import { cliHome, onTerminal, startCliService } from './harness.ts';

t.setTimeout(300_000);

const ESC = '\u001b[';

t.test('on a terminal', { skip: spawnSync('script', ['--version']).status !== 0 && 'util-linux script is not installed' }, async (t) => {
  const svc = await startCliService(t, { accounts: [{ id: 'pat', user: 'pat', folders: [{ Alias: 'inbox' }] }] });
  const home = cliHome(t);

  const login = await onTerminal(home, ['login', '--endpoint', svc.admin], [{ after: /API key for .*: $/, send: `${svc.keys.operator}\r` }]);
  t.equal(login.code, 0, login.screen);
  t.match(login.screen, /Signed in to/);
  t.notOk(login.screen.includes(svc.keys.operator), 'the key typed is not echoed');

  const coloured = await onTerminal(home, ['status'], []);
  t.equal(coloured.code, 0, coloured.screen);
  t.ok(coloured.screen.includes(ESC), 'colour on a terminal');
  const plain = await onTerminal(home, ['status'], [], { NO_COLOR: '1' });
  t.equal(plain.code, 0);
  t.notOk(plain.screen.includes(ESC), 'no colour with NO_COLOR');

  const declined = await onTerminal(
    home,
    ['login', '--endpoint', 'http://192.0.2.1:8090', '--name', 'far'],
    [{ after: /Send them anyway\? \[y\/N\] /, send: 'n\r' }],
  );
  t.equal(declined.code, 1);
  t.match(declined.screen, /Refused to sign in to http:\/\/192\.0\.2\.1:8090 over clear text/);

  const unconfirmed = await onTerminal(home, ['mailbox', 'rewind', '--account', 'pat'], [{ after: /\[y\/N\] /, send: 'n\r' }]);
  t.equal(unconfirmed.code, 1);
  t.match(unconfirmed.screen, /would have the next run fetch 0 stored email\(s\)/);
  t.match(unconfirmed.screen, /Not confirmed; nothing was changed\./);
  const confirmed = await onTerminal(home, ['mailbox', 'rewind', '--account', 'pat'], [{ after: /\[y\/N\] /, send: 'y\r' }]);
  t.equal(confirmed.code, 0, confirmed.screen);
  t.match(confirmed.screen, /nothing was discarded|Discarded the progress/);
});
