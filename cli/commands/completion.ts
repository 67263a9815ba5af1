/**
 * `mailcairn completion <shell>`: prints the completion script of bash, zsh
 * or fish (docs/cli.md "Shell completion"), made from this program's command
 * table. `completion --profiles` is what the scripts call for profile names:
 * the names in the credential file, one a line, and nothing else
 * (completion/profiles.ts).
 */
import type { Sade } from 'sade';
import { completionModel } from '../completion/model.ts';
import { storedProfileNames } from '../completion/profiles.ts';
import { SHELLS, completionScript, type Shell } from '../completion/scripts.ts';
import type { Context } from '../context.ts';
import { usage } from '../failure.ts';
import { flag, type Options } from '../options.ts';
import type { Run } from './run.ts';

function completion(program: Sade, ctx: Context, options: Options, shell: string | undefined): void {
  if (flag(options, 'profiles')) {
    if (shell !== undefined) throw usage('completion --profiles takes no shell.');
    const names = storedProfileNames(ctx.dir);
    if (names.length > 0 || ctx.out.format === 'json') ctx.out.reading(names, () => names.join('\n'));
    return;
  }
  if (shell === undefined || !(SHELLS as readonly string[]).includes(shell)) {
    throw usage(`completion takes one shell: ${SHELLS.slice(0, -1).join(', ')} or ${SHELLS.at(-1)}; for example mailcairn completion bash.`);
  }
  const script = completionScript(shell as Shell, completionModel(program));
  ctx.out.reading({ shell, script }, () => script.trimEnd());
}

export function registerCompletion(program: Sade, run: Run): void {
  program
    .command('completion [shell]')
    .describe('Print the completion script of a shell (bash, zsh or fish): commands, their options and stored profile names.')
    .option('--profiles', 'Print the stored profile names, one a line (what the scripts call)')
    .example('completion bash > ~/.local/share/bash-completion/completions/mailcairn')
    .action(run(async (ctx, options, [shell]) => completion(program, ctx, options, shell)));
}
