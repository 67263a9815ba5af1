/**
 * Shell completion (docs/cli.md "Shell completion"), in the real shells:
 * each script is printed by the client (`mailcairn completion <shell>`) and
 * loaded the way docs/cli.md says; profile names come from the client on
 * PATH reading a credential file in the test's own XDG_CONFIG_HOME.
 * - bash: the function is called with COMP_WORDS and COMP_CWORD set; COMPREPLY is read
 *   (completion-harness/complete.bash).
 * - fish: `complete -C '<line>'`, fish's own answer.
 * - zsh: `_mailcairn` is autoloaded from fpath and called with `words` and
 *   `CURRENT` set, `compadd` replaced by a function printing the candidates
 *   that start with the word being completed (completion-harness/complete.zsh);
 *   compinit's own registration is checked once.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import sade from 'sade';
import t from 'tap';
import { completionModel } from '../../cli/completion/model.ts';
import { completionScript, SHELLS, type Shell } from '../../cli/completion/scripts.ts';
import { writeCredentialFile } from '../../cli/credential-file.ts';
import { cli, cliHome, type CliHome } from './harness.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const harness = join(root, 'test/cli/completion-harness');
const SHELL_LIMIT_MS = 60_000;
// Each profile completion starts the client (node and tsx): slow on a loaded machine.
t.setTimeout(300_000);

const missing = SHELLS.filter((shell) => spawnSync(shell, ['-c', 'exit 0'], { stdio: 'ignore' }).status !== 0);
if (missing.length > 0) t.fail(`${missing.join(', ')} not installed (apt-get install zsh fish; .ci/run does)`);

type Setup = { home: CliHome; bin: string; dir: string };

/** A PATH directory whose `mailcairn` is this checkout's client, and each shell's script as the client prints it. */
async function setup(test: Parameters<typeof cliHome>[0]): Promise<Setup> {
  const home = cliHome(test);
  const bin = join(home.home, 'bin');
  mkdirSync(bin);
  const wrapper = join(bin, 'mailcairn');
  // tsx by its path: the shells run elsewhere than the checkout, as a user's would.
  const tsx = join(root, 'node_modules/tsx/dist/loader.mjs');
  writeFileSync(wrapper, `#!/bin/sh\nexec '${process.execPath}' --import '${tsx}' '${join(root, 'bin/mailcairn.ts')}' "$@"\n`);
  chmodSync(wrapper, 0o755);
  const dir = join(home.home, 'scripts');
  mkdirSync(join(dir, 'zsh-functions'), { recursive: true });
  const places: Record<Shell, string> = { bash: 'mailcairn.bash', zsh: 'zsh-functions/_mailcairn', fish: 'mailcairn.fish' };
  for (const shell of SHELLS) {
    const printed = await cli(home, ['completion', shell]);
    if (printed.code !== 0) throw new Error(`completion ${shell} exited ${printed.code}: ${printed.stderr}`);
    writeFileSync(join(dir, places[shell]), printed.stdout);
  }
  return { home, bin, dir };
}

function run(s: Setup, command: string, args: string[]): string[] {
  const done = spawnSync(command, args, {
    cwd: s.home.home,
    env: { PATH: `${s.bin}:${process.env.PATH ?? ''}`, HOME: s.home.home, XDG_CONFIG_HOME: s.home.config, TERM: 'dumb' },
    encoding: 'utf8',
    timeout: SHELL_LIMIT_MS,
  });
  if (done.error) throw done.error;
  if (done.status !== 0) throw new Error(`${command} exited ${done.status}: ${done.stderr}`);
  return done.stdout
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => line.split('\t')[0]!);
}

/** The candidates a shell offers for `words`, the last being the word under the cursor ('' after a space). */
function complete(s: Setup, shell: Shell, words: string[]): string[] {
  if (shell === 'bash') return run(s, 'bash', ['--norc', '--noprofile', join(harness, 'complete.bash'), join(s.dir, 'mailcairn.bash'), ...words]);
  if (shell === 'fish') return run(s, 'fish', ['--no-config', '-c', 'source $argv[1]; complete -C $argv[2]', join(s.dir, 'mailcairn.fish'), words.join(' ')]);
  return run(s, 'zsh', ['-f', join(harness, 'complete.zsh'), join(s.dir, 'zsh-functions'), ...words]);
}

const sorted = (words: string[]): string[] => [...words].sort();

t.test('the completion command', async (t) => {
  const home = cliHome(t);
  for (const args of [['completion'], ['completion', 'tcsh']]) {
    const answer = await cli(home, args);
    t.equal(answer.code, 2, `${args.join(' ')} is a usage error`);
    t.match(answer.stderr, /bash, zsh or fish/, 'naming the shells');
    t.equal(answer.stdout, '');
  }
  const none = await cli(home, ['completion', '--profiles']);
  t.same([none.code, none.stdout, none.stderr], [0, '', ''], 'no credential file: nothing printed, no failure');
  mkdirSync(home.dir, { recursive: true });
  writeFileSync(join(home.dir, 'credentials.json'), '{ damaged');
  const damaged = await cli(home, ['completion', '--profiles']);
  t.same([damaged.code, damaged.stdout, damaged.stderr], [0, '', ''], 'a damaged credential file: nothing printed, no failure');
  const script = await cli(home, ['completion', 'bash']);
  t.equal(script.code, 0);
  t.match(script.stdout, /complete -F _mailcairn mailcairn/);
});

const s = await setup(t);

t.test('every shell completes commands, sub-commands, options, values and profile names', async (t) => {
  const profile = (endpoint: string) => ({ endpoint, mode: 'key' as const, signedInAt: '2026-01-01T00:00:00Z' });
  writeCredentialFile(s.home.dir, {
    format: 1,
    current: 'prod',
    profiles: { prod: profile('https://admin.example.org:8090'), 'staging-eu': profile('https://staging.example.org:8090') },
  });
  for (const shell of SHELLS) {
    t.test(shell, async (t) => {
      const top = complete(s, shell, ['mailcairn', '']);
      for (const word of ['status', 'profiles', 'switch', 'logout', 'login', 'mailbox', 'outbox', 'contact', 'completion'])
        t.ok(top.includes(word), `top level: ${word}`);
      t.equal(top.filter((w) => w === 'mailbox').length, 1, 'a group is offered once');
      t.notOk(top.includes('status --watch') || top.some((w) => w.includes(' ')), 'one word at a time');
      t.same(complete(s, shell, ['mailcairn', 'mailbox', 'st']), ['status'], 'mailbox st → status');
      t.same(
        sorted(complete(s, shell, ['mailcairn', 'mailbox', ''])),
        ['authorize', 'rederive', 'rederive-status', 'rewind', 'status'],
        "mailbox's sub-commands",
      );
      t.same(complete(s, shell, ['mailcairn', 'contact', 'li']), ['list'], 'contact li → list');
      t.same(complete(s, shell, ['mailcairn', 'outbox', 'list', '--st']), ['--stage'], 'outbox list --st → --stage');
      const statusOptions = complete(s, shell, ['mailcairn', 'mailbox', 'status', '--']);
      for (const flag of ['--watch', '--interval', '--endpoint', '--output', '--help']) t.ok(statusOptions.includes(flag), `mailbox status ${flag}`);
      t.notOk(statusOptions.includes('--account'), "another command's option is not offered");
      t.ok(complete(s, shell, ['mailcairn', '--']).includes('--version'), 'the program alone: --version');
      t.same(sorted(complete(s, shell, ['mailcairn', '--output', ''])), ['json', 'table'], '--output values');
      t.same(sorted(complete(s, shell, ['mailcairn', 'login', '--mode', ''])), ['device', 'interactive', 'key', 'keypair'], 'login --mode values');
      t.same(complete(s, shell, ['mailcairn', '--endpoint', 'prod', 'mailbox', 'st']), ['status'], "an option's value is not a command word");
      t.notOk(complete(s, shell, ['mailcairn', 'mailbox', 'status', '--interval', '']).includes('authorize'), 'after a value option, no command word');
      // --option=value: one word in zsh and fish; bash splits it at '=' (COMP_WORDBREAKS).
      const joined = (flag: string, value: string): string[] => (shell === 'bash' ? [flag, '=', value] : [`${flag}=${value}`]);
      t.same(complete(s, shell, ['mailcairn', ...joined('--output', 'json'), 'mailbox', 'st']), ['status'], '--output=json is no command word');
      if (shell === 'bash') t.same(sorted(complete(s, shell, ['mailcairn', '--output', '='])), ['json', 'table'], 'bash: --output= values');

      t.same(complete(s, shell, ['mailcairn', 'switch', '']), ['prod', 'staging-eu'], 'switch: the stored profiles');
      t.same(complete(s, shell, ['mailcairn', 'switch', 'st']), ['staging-eu'], 'switch st → staging-eu');
      t.same(complete(s, shell, ['mailcairn', 'logout', '']), ['prod', 'staging-eu'], 'logout: the stored profiles');
      t.same(complete(s, shell, ['mailcairn', 'status', '--endpoint', 'p']), ['prod'], '--endpoint p → prod');
      t.same(complete(s, shell, ['mailcairn', 'switch', 'prod', '']), [], 'switch takes one profile');
    });
  }
});

t.test('zsh: compinit finds the script in fpath, and a script sourced after compinit registers itself', async (t) => {
  const found = 'fpath=("$1" $fpath); autoload -Uz compinit && compinit -u -D; print -r -- "$_comps[mailcairn]"';
  t.same(run(s, 'zsh', ['-f', '-c', found, 'zsh', join(s.dir, 'zsh-functions')]), ['_mailcairn'], 'from fpath');
  const sourced = 'autoload -Uz compinit && compinit -u -D; source "$1"; print -r -- "$_comps[mailcairn]"';
  t.same(run(s, 'zsh', ['-f', '-c', sourced, 'zsh', join(s.dir, 'zsh-functions', '_mailcairn')]), ['_mailcairn'], 'sourced');
});

t.test('a command and an option added to the program are completed with no change to the completion code', async (t) => {
  const home = cliHome(t);
  const program = sade('mailcairn').version('9.9.9').option('--endpoint', 'Profile name or endpoint address');
  program.command('widget frob').describe('Frobnicate a widget.').option('--speed', 'slow | fast');
  program.command('widget list');
  const dir = join(home.home, 'scripts');
  mkdirSync(dir);
  writeFileSync(join(dir, 'mailcairn.bash'), completionScript('bash', completionModel(program)));
  const own: Setup = { home, bin: dir, dir };
  t.same(sorted(complete(own, 'bash', ['mailcairn', 'widget', ''])), ['frob', 'list']);
  t.same(complete(own, 'bash', ['mailcairn', 'widget', 'frob', '--sp']), ['--speed']);
  t.same(sorted(complete(own, 'bash', ['mailcairn', 'widget', 'frob', '--speed', ''])), ['fast', 'slow']);
});
