/**
 * `jobs dead-letters` and `jobs retry --job`: stopped background work, newest
 * first, a page at a time, and returning one stopped job to the queue.
 * A page with more behind it carries a cursor; the walk ends when none comes
 * back. A retry's outcome other than `Accepted` is not a refusal by the
 * deployment, but the job was not retried, so the command exits 1.
 */
import type { Sade } from 'sade';
import { DeadLettersAnswer, RetryAnswer, read } from '../answers.ts';
import { withConnection } from '../connection.ts';
import type { Context } from '../context.ts';
import { CliFailure, unchanged } from '../failure.ts';
import { optionalInteger, optionalText, requiredText, type Options } from '../options.ts';
import type { Run } from './run.ts';

const DEAD_LETTERS = '/api/admin/jobs/dead-letters';
const RETRY = '/api/admin/jobs/dead-letters/retry';

const OUTCOMES: Readonly<Record<string, string>> = {
  Accepted: 'is back in the queue under the identity it was enqueued with',
  JobUnknown: 'is not known to the deployment; nothing was retried',
  JobNotDeadLettered: 'is not stopped (it is queued, running or done); nothing was retried',
};

async function deadLetters(ctx: Context, options: Options): Promise<void> {
  const pageSize = optionalInteger(options, 'page-size', 1, 1_000_000);
  const query = {
    type: optionalText(options, 'type'),
    account: optionalText(options, 'account'),
    pageSize: pageSize === undefined ? undefined : String(pageSize),
    cursor: optionalText(options, 'cursor'),
  };
  await withConnection(ctx, async ({ client }) => {
    const page = read(DeadLettersAnswer, await client.get(DEAD_LETTERS, query), client.endpoint, `GET ${DEAD_LETTERS}`);
    ctx.out.reading(page, () =>
      page.jobs.length === 0
        ? 'No stopped job matches.'
        : ctx.out.table(
            ['JOB', 'TYPE', 'ACCOUNT', 'ATTEMPTS', 'STOPPED AT', 'ENDED BY'],
            page.jobs.map((j) => [
              j.job,
              j.type,
              j.account ?? '-',
              String(j.attemptCount),
              j.deadLetteredAt ?? '-',
              [j.failureClassification, j.failureReason].filter((v) => v).join(': ') || '-',
            ]),
          ),
    );
    if (page.nextCursor && ctx.out.format === 'table') ctx.out.note(`More jobs follow: add --cursor ${page.nextCursor} (with the same filters).`);
  });
}

async function retry(ctx: Context, options: Options): Promise<void> {
  const job = requiredText(options, 'job', 'job identifier');
  await withConnection(ctx, async ({ client }) => {
    const answer = read(RetryAnswer, await unchanged(client.post(RETRY, { job }), 'Nothing was retried.'), client.endpoint, `POST ${RETRY}`);
    ctx.out.reading(answer, () => `Job ${answer.job} ${OUTCOMES[answer.outcome] ?? `: ${answer.outcome}`}.`);
    if (answer.outcome !== 'Accepted') throw new CliFailure(`The job was not retried (${answer.outcome}).`);
  });
}

export function registerJobs(program: Sade, run: Run): void {
  program
    .command('jobs dead-letters')
    .describe('Stopped background work, newest first, with what ended each; a page at a time.')
    .option('--type', 'Only jobs of this type')
    .option('--account', 'Only jobs of this account')
    .option('--page-size', 'Jobs per page')
    .option('--cursor', 'The cursor a previous page ended with (same filters)')
    .action(run((ctx, options) => deadLetters(ctx, options)));
  program
    .command('jobs retry')
    .describe('Return one stopped job to the queue under the identity it was enqueued with.')
    .option('--job', 'Job identifier (from jobs dead-letters)')
    .action(run((ctx, options) => retry(ctx, options)));
}
