/**
 * The command table as a user meets it, now that cli/main.ts loads a
 * command's module only when the command line names it: `--help` still
 * lists every command of every module, a command's own `--help` (with
 * `--endpoint` before the command) shows that command's options, a
 * mistyped command is a usage error naming it, and `--version` prints the
 * version. No deployment is needed: none of these sends a request.
 */
import t from 'tap';
import { version } from '../../runtime/version.ts';
import { cli, cliHome } from './harness.ts';

t.setTimeout(120_000);

t.test('--help lists the commands of every module', async (t) => {
  const help = await cli(cliHome(t), ['--help']);
  t.equal(help.code, 0, help.stderr);
  for (const command of [
    'login',
    'status',
    'profiles',
    'logout',
    'mailbox status',
    'embedding activate',
    'folder erase',
    'jobs retry',
    'spam run',
    'outbox list',
    'contact create',
    'rules history',
  ]) {
    t.match(help.stdout, new RegExp(`^\\s+${command}\\s`, 'm'), command);
  }
});

t.test("a command's own --help, with --endpoint before the command", async (t) => {
  const help = await cli(cliHome(t), ['--endpoint', 'prod', 'outbox', 'list', '--help']);
  t.equal(help.code, 0, help.stderr);
  t.match(help.stdout, /\$ mailcairn outbox list/);
  t.match(help.stdout, /--page-size/);
  t.notMatch(help.stdout, /mailbox rewind/, 'only that command');
});

t.test('a mistyped command is a usage error', async (t) => {
  const wrong = await cli(cliHome(t), ['mailbox', 'stauts']);
  t.equal(wrong.code, 2);
  t.match(wrong.stderr + wrong.stdout, /Invalid command: mailbox stauts/);
});

t.test('--version', async (t) => {
  const shown = await cli(cliHome(t), ['--version']);
  t.equal(shown.code, 0, shown.stderr);
  t.equal(shown.stdout.trim(), `mailcairn, ${version}`);
});
