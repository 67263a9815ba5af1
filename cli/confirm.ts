/**
 * Confirmations (docs/cli.md "Confirmations and output"): `--yes` states
 * agreement beforehand; otherwise the question goes to standard error and only
 * a terminal may answer it. With standard input redirected and no `--yes` the
 * command is refused, never answered from whatever was piped in.
 */
import { CliFailure } from './failure.ts';
import { askYesNo, isTerminal, type Terminal } from './standard-input.ts';

export async function confirm(io: Terminal, question: string, options: { yes: boolean; flag?: string }): Promise<void> {
  if (options.yes) return;
  const flag = options.flag ?? '--yes';
  if (!isTerminal(io.stdin)) {
    throw new CliFailure(
      `Refused: this needs a confirmation, standard input is not a terminal, and piped input never answers one; pass ${flag} to agree. Nothing was changed.`,
    );
  }
  if (!(await askYesNo(io, question))) throw new CliFailure('Not confirmed; nothing was changed.');
}
