/**
 * `spam run | run-status | classifications`: the spam routes of the
 * administrative surface (docs/cli.md "Spam").
 *
 * - `run` starts a run over one account's stored mail, a dry run unless
 *   `--apply`; applying asks on standard error unless `--yes` (it changes
 *   the mail server). Asking while a run is under way answers that run.
 * - `run-status --watch` reads the run again and again until it ends.
 * - `classifications` pages the verdicts newest first (ids, scores, the
 *   changes asked): no subject or address is in any answer.
 */
import type { Sade } from 'sade';
import { read, SpamClassificationsAnswer, SpamRunAnswer } from '../answers.ts';
import { confirm } from '../confirm.ts';
import { type Connection, withConnection } from '../connection.ts';
import type { Context } from '../context.ts';
import { unchanged } from '../failure.ts';
import { flag, optionalInteger, optionalText, requiredText, type Options } from '../options.ts';
import { progressWords, watch, watchOption } from '../watch.ts';
import type { Run } from './run.ts';

const RUNS = '/api/admin/spam/runs';
const CLASSIFICATIONS = '/api/admin/spam/classifications';

function describeRun(answer: SpamRunAnswer, account: string): string {
  const run = answer.run;
  if (run === null) return `No spam run was asked for account ${account}.`;
  const kind = run.apply ? 'Applying spam run' : 'Dry spam run';
  const state = run.isOutstanding ? `under way since ${run.requestedAt}` : `ended at ${run.endedAt ?? '?'} (asked at ${run.requestedAt})`;
  const counts = `${progressWords(run.progress, 'classified')}; ${run.spamEmailCount} judged spam, ${run.changeCount} change(s) asked`;
  const waiting =
    run.waitingForEngineSince === null ? '' : `\nThe engine has been unreachable since ${run.waitingForEngineSince}: the run waits and tries again.`;
  return `${kind} of account ${run.account}: ${state}; ${counts}.${waiting}`;
}

async function start(ctx: Context, options: Options): Promise<void> {
  const account = requiredText(options, 'account', 'account');
  const apply = flag(options, 'apply');
  if (apply) {
    await confirm(ctx.io, `Classify every stored message of account ${account} and ask the configured action of each spam verdict on the mail server?`, {
      yes: flag(options, 'yes'),
    });
  }
  await withConnection(ctx, async ({ client }) => {
    const answer = read(SpamRunAnswer, await unchanged(client.post(RUNS, { account, apply }), 'Nothing was started.'), client.endpoint, `POST ${RUNS}`);
    ctx.out.reading(answer, () => `${answer.started ? 'Started.' : 'A run was already under way; this is it.'}\n${describeRun(answer, account)}`);
  });
}

async function status(ctx: Context, options: Options): Promise<void> {
  const account = requiredText(options, 'account', 'account');
  const readRun = async ({ client }: Connection): Promise<SpamRunAnswer> =>
    read(SpamRunAnswer, await client.get(RUNS, { account }), client.endpoint, `GET ${RUNS}`);
  const watching = watchOption(options);
  if (watching !== null) {
    await watch(ctx, {
      intervalMs: watching.intervalMs,
      read: readRun,
      human: (answer) => describeRun(answer, account),
      line: (answer) => describeRun(answer, account),
      done: (answer) => answer.run === null || !answer.run.isOutstanding,
    });
    return;
  }
  await withConnection(ctx, async (connection) => {
    const answer = await readRun(connection);
    ctx.out.reading(answer, () => describeRun(answer, account));
  });
}

async function classifications(ctx: Context, options: Options): Promise<void> {
  const pageSize = optionalInteger(options, 'page-size', 1, 1_000_000);
  const query = {
    account: requiredText(options, 'account', 'account'),
    from: optionalText(options, 'from'),
    before: optionalText(options, 'before'),
    pageSize: pageSize === undefined ? undefined : String(pageSize),
    cursor: optionalText(options, 'cursor'),
  };
  await withConnection(ctx, async ({ client }) => {
    const page = read(SpamClassificationsAnswer, await client.get(CLASSIFICATIONS, query), client.endpoint, `GET ${CLASSIFICATIONS}`);
    ctx.out.reading(page, () =>
      page.entries.length === 0
        ? 'No classification matches.'
        : ctx.out.table(
            ['CLASSIFIED AT', 'EMAIL', 'VERDICT', 'SCORE', 'SOURCE', 'RUN', 'CHANGES'],
            page.entries.map((e) => [
              e.classifiedAt,
              e.storedEmailId,
              e.verdict,
              e.score.toFixed(2),
              e.source,
              e.runId === null ? 'arrival' : String(e.runId),
              e.changes.length > 0
                ? e.changes.map((c) => `${c.changeId} ${c.change} ${c.outcome ?? c.state}`).join('; ')
                : (e.conclusion ?? (e.applied ? '-' : 'none asked')),
            ]),
          ),
    );
    if (page.nextCursor && ctx.out.format === 'table') ctx.out.note(`More classifications follow: add --cursor ${page.nextCursor} (with the same filters).`);
  });
}

export function registerSpam(program: Sade, run: Run): void {
  program
    .command('spam run')
    .describe('Classify every stored message of one account; a dry run unless --apply. Returns the run under way, if any.')
    .option('--account', 'Configured account identifier')
    .option('--apply', 'Ask the configured action (keyword or move) of each spam verdict on the mail server')
    .option('--yes', 'With --apply: do not ask for confirmation')
    .action(run((ctx, options) => start(ctx, options)));
  program
    .command('spam run-status')
    .describe("Progress or ending of the account's latest spam run.")
    .option('--account', 'Configured account identifier')
    .option('--watch', 'Read again until the run ends')
    .option('--interval', 'With --watch: time between readings (default 2s)')
    .action(run((ctx, options) => status(ctx, options)));
  program
    .command('spam classifications')
    .describe("One account's spam verdicts, newest first, with the changes each asked (needs service.admin.audit.read).")
    .option('--account', 'Configured account identifier')
    .option('--from', 'ISO 8601 instant: verdicts recorded at or after it')
    .option('--before', 'ISO 8601 instant: verdicts recorded before it')
    .option('--page-size', 'Verdicts per page (1 to 200, default 50)')
    .option('--cursor', 'The cursor a previous page gave (with the same filters)')
    .action(run((ctx, options) => classifications(ctx, options)));
}
