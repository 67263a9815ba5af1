/**
 * `folder erase --account --folder`: erases the mail stored for a folder the
 * account no longer mirrors, one bounded pass per request, repeated until
 * the deployment says nothing remains (docs/admin-api.md "Folder erasure").
 *
 * The running total goes to standard error after each pass (progress, not
 * the reading), with the share of the folder erased, the pace of the passes
 * and the time left (rewritten in place on a terminal); the final total to
 * standard output. An erasure cut short
 * (Ctrl-C, a lost connection, no answer in time, a failure between passes)
 * says how much was erased "before the erasure was interrupted" and to run
 * the command again: each pass is whole on the deployment, so running again
 * continues where it stopped. A refusal of the first pass (the folder "is
 * still mirrored", a missing permission) is passed on: nothing was erased.
 */
import type { Sade } from 'sade';
import { ErasureAnswer, read } from '../answers.ts';
import { withConnection } from '../connection.ts';
import type { Context } from '../context.ts';
import { CliFailure, EXIT, unchanged } from '../failure.ts';
import { requiredText, type Options } from '../options.ts';
import { RecentWork, workProgress } from '../../runtime/work-progress.ts';
import { durationWords } from '../watch.ts';
import type { Run } from './run.ts';

const ERASE = '/api/admin/folders/erasure';

async function erase(ctx: Context, options: Options): Promise<void> {
  const account = requiredText(options, 'account', 'account');
  const folder = requiredText(options, 'folder', 'folder alias');
  const what = `folder ${folder} of account ${account}`;
  const interrupt = new AbortController();
  const onInterrupt = (): void => interrupt.abort();
  process.on('SIGINT', onInterrupt);
  let total = 0;
  let passes = 0;
  // The pace of this client's passes: the erasure's rate (each pass is timed from its request to its answer).
  const recent = new RecentWork();
  // A pass cut short on the way may still have finished on the deployment: the total is what this client saw answered.
  const interrupted = (cause: string, exitCode: CliFailure['exitCode']): CliFailure =>
    new CliFailure(
      `Erased ${total} email(s) of ${what} before the erasure was interrupted (${cause}); a pass under way then may have finished too. Run the same command again to continue.`,
      exitCode,
    );
  try {
    await withConnection(
      ctx,
      async ({ client }) => {
        for (;;) {
          let pass;
          const passStarted = Date.now();
          try {
            pass = read(ErasureAnswer, await unchanged(client.post(ERASE, { account, folder }), 'Nothing was erased.'), client.endpoint, `POST ${ERASE}`);
          } catch (err) {
            if (interrupt.signal.aborted) throw interrupted('Ctrl-C', EXIT.interrupted);
            // A refused first pass erased nothing; anything else may have cut a pass short.
            if (err instanceof CliFailure && err.refusal && passes === 0) throw err;
            throw interrupted(err instanceof CliFailure ? err.message.replace(/\.$/, '') : 'an unexpected failure', EXIT.failed);
          }
          passes += 1;
          total += pass.erasedEmailCount;
          recent.add({ from: passStarted, to: Date.now(), count: pass.erasedEmailCount });
          if (!pass.emailsRemain) return;
          ctx.out.progress(`Erased ${total} email(s) of ${what} so far${progressTail(total, pass.remainingEmailCount, recent)}…`);
          if (interrupt.signal.aborted) throw interrupted('Ctrl-C', EXIT.interrupted);
        }
      },
      { signal: interrupt.signal },
    );
  } finally {
    process.removeListener('SIGINT', onInterrupt);
  }
  ctx.out.reading(
    { account, folder, erasedEmailCount: total, passes },
    () => `Erased ${total} email(s) of ${what} in ${passes} pass(es); none of its mail remains stored.`,
  );
}

/** `(41% of 600), 830 per second, about 1 s left`: from the passes so far and what the last one left; nothing from an older deployment. */
function progressTail(erased: number, remaining: number | undefined, recent: RecentWork): string {
  if (remaining === undefined) return '';
  const p = workProgress(erased, erased + remaining, recent.perSecond(Date.now()));
  const share = p.totalEmailCount ? ` (${Math.floor((100 * erased) / p.totalEmailCount)}% of ${p.totalEmailCount})` : '';
  const rate = p.emailsPerSecond === null ? '' : `, ${p.emailsPerSecond} per second`;
  const left = p.secondsLeft === null || p.secondsLeft === 0 ? '' : `, about ${durationWords(p.secondsLeft)} left`;
  return `${share}${rate}${left}`;
}

export function registerFolder(program: Sade, run: Run): void {
  program
    .command('folder erase')
    .describe(
      'Erase the mail stored for a folder the account no longer mirrors, pass after pass until none remains. Irreversible; an interrupted erasure continues when run again.',
    )
    .option('--account', 'Configured account identifier')
    .option('--folder', 'Folder alias the account no longer maps')
    .action(run((ctx, options) => erase(ctx, options)));
}
