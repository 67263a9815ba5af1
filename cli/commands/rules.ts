/**
 * `rules list | run | run-status | history`: the mail-rule routes
 * (docs/rules-and-spam.md). Rule names and what they ask are printed (the
 * operator wrote them); no subject or address is in any answer.
 *
 * - `list` prints the loaded rules in run order and whether the
 *   configuration file still says what they were read from.
 * - `run --account A [--watch]` starts a run (or returns the one under
 *   way); with `--watch` it then follows it until it ends, as
 *   `run-status --watch` does.
 * - `history --account A` prints one page, newest first; a page with more
 *   behind it names its cursor.
 */
import type { Sade } from 'sade';
import { z } from 'zod';
import { WorkProgress, read } from '../answers.ts';
import { type Connection, withConnection } from '../connection.ts';
import type { Context } from '../context.ts';
import { unchanged } from '../failure.ts';
import { optionalInteger, optionalText, requiredText, type Options } from '../options.ts';
import { progressWords, watch, watchOption } from '../watch.ts';
import type { Run } from './run.ts';

const RULES = '/api/admin/rules';
const RUNS = '/api/admin/rules/runs';
const HISTORY = '/api/admin/rules/history';

const Count = z.number().int().nonnegative();

const ListAnswer = z.looseObject({
  enabled: z.boolean(),
  rules: z.array(
    z.looseObject({
      position: Count,
      name: z.string(),
      accounts: z.array(z.string()).nullable(),
      conditions: z.record(z.string(), z.unknown()),
      actions: z.record(z.string(), z.unknown()),
    }),
  ),
  configurationFile: z.looseObject({ state: z.string(), reason: z.string().nullable() }),
});

const RuleRun = z.looseObject({
  account: z.string(),
  runId: z.number().int(),
  requestedAt: z.string(),
  isOutstanding: z.boolean(),
  judgedEmailCount: Count,
  totalEmailCount: Count,
  matchedEmailCount: Count,
  changeCount: Count,
  progress: WorkProgress,
  endedAt: z.string().nullable(),
});
type RuleRun = z.infer<typeof RuleRun>;
const StartAnswer = z.looseObject({ started: z.boolean(), run: RuleRun });
const StatusAnswer = z.looseObject({ run: RuleRun.nullable() });
type StatusAnswer = z.infer<typeof StatusAnswer>;

const HistoryAnswer = z.looseObject({
  entries: z.array(
    z.looseObject({
      id: z.number().int(),
      rule: z.string(),
      storedEmailId: z.string(),
      source: z.string(),
      asked: z.record(z.string(), z.unknown()),
      note: z.string().nullable(),
      changes: z.array(z.looseObject({ changeId: z.string(), change: z.string(), state: z.string(), outcome: z.string().nullable() })),
      concludedAt: z.string(),
    }),
  ),
  nextCursor: z.string().optional(),
});

const FILE_STATES: Readonly<Record<string, string>> = {
  Equal: 'the configuration file still says the same',
  Differs: 'the configuration file now says otherwise: restart the service to load it',
};

function written(section: Record<string, unknown>): string {
  return Object.entries(section)
    .map(([key, value]) => `${key}=${Array.isArray(value) ? value.join('+') : String(value)}`)
    .join(' ');
}

async function list(ctx: Context): Promise<void> {
  await withConnection(ctx, async ({ client }) => {
    const answer = read(ListAnswer, await client.get(RULES), client.endpoint, `GET ${RULES}`);
    const file = answer.configurationFile;
    ctx.out.reading(answer, () =>
      [
        `${answer.rules.length} rule(s), ${answer.enabled ? 'judging arriving mail' : 'not judging arriving mail (rule runs only)'}; ${FILE_STATES[file.state] ?? `unknown whether the configuration file still says the same (${file.reason ?? 'no reason given'})`}.`,
        ...(answer.rules.length === 0
          ? []
          : [
              ctx.out.table(
                ['#', 'NAME', 'ACCOUNTS', 'WHEN', 'THEN'],
                answer.rules.map((r) => [String(r.position), r.name, r.accounts?.join(', ') ?? 'every', written(r.conditions), written(r.actions)]),
              ),
            ]),
      ].join('\n'),
    );
  });
}

function describe(run: RuleRun | null, account: string): string {
  if (run === null) return `No rule run was ever asked for account ${account}.`;
  const state = run.isOutstanding ? `under way since ${run.requestedAt}` : `ended at ${run.endedAt ?? '?'} (asked at ${run.requestedAt})`;
  return `Rule run ${run.runId} of account ${run.account}: ${state}; ${progressWords(run.progress, 'judged')}; ${run.matchedEmailCount} matched, ${run.changeCount} change(s) recorded.`;
}

function line(answer: StatusAnswer): string {
  const run = answer.run;
  return run === null
    ? 'no run'
    : `run ${run.runId} ${run.isOutstanding ? 'under way' : 'ended'}: ${run.judgedEmailCount}/${run.totalEmailCount} judged, ${run.changeCount} changes`;
}

async function follow(ctx: Context, account: string, intervalMs: number): Promise<void> {
  await watch(ctx, {
    intervalMs,
    read: async ({ client }: Connection) => read(StatusAnswer, await client.get(RUNS, { account }), client.endpoint, `GET ${RUNS}`),
    human: (answer) => describe(answer.run, account),
    line,
    done: (answer) => answer.run === null || !answer.run.isOutstanding,
  });
}

async function startRun(ctx: Context, options: Options): Promise<void> {
  const account = requiredText(options, 'account', 'account');
  const watching = watchOption(options);
  await withConnection(ctx, async ({ client }) => {
    const answer = read(StartAnswer, await unchanged(client.post(RUNS, { account }), 'Nothing was started.'), client.endpoint, `POST ${RUNS}`);
    ctx.out.reading(answer, () => `${answer.started ? 'Started.' : 'A run was already under way; this is it.'}\n${describe(answer.run, account)}`);
  });
  if (watching !== null) await follow(ctx, account, watching.intervalMs);
}

async function runStatus(ctx: Context, options: Options): Promise<void> {
  const account = requiredText(options, 'account', 'account');
  const watching = watchOption(options);
  if (watching !== null) return follow(ctx, account, watching.intervalMs);
  await withConnection(ctx, async ({ client }) => {
    const answer = read(StatusAnswer, await client.get(RUNS, { account }), client.endpoint, `GET ${RUNS}`);
    ctx.out.reading(answer, () => describe(answer.run, account));
  });
}

function outcomeOf(entry: z.infer<typeof HistoryAnswer>['entries'][number]): string {
  const changes = entry.changes.map((c) => `${c.change} ${c.outcome ?? c.state} (${c.changeId})`);
  return [...changes, ...(entry.note !== null ? [entry.note] : [])].join(', ') || '-';
}

async function history(ctx: Context, options: Options): Promise<void> {
  const account = requiredText(options, 'account', 'account');
  const pageSize = optionalInteger(options, 'page-size', 1, 1_000_000);
  const query = {
    account,
    from: optionalText(options, 'from'),
    before: optionalText(options, 'before'),
    pageSize: pageSize === undefined ? undefined : String(pageSize),
    cursor: optionalText(options, 'cursor'),
  };
  await withConnection(ctx, async ({ client }) => {
    const page = read(HistoryAnswer, await client.get(HISTORY, query), client.endpoint, `GET ${HISTORY}`);
    ctx.out.reading(page, () =>
      page.entries.length === 0
        ? 'No rule conclusion matches.'
        : ctx.out.table(
            ['WHEN', 'RULE', 'EMAIL', 'SOURCE', 'ASKED', 'OUTCOME'],
            page.entries.map((e) => [e.concludedAt, e.rule, e.storedEmailId, e.source, written(e.asked), outcomeOf(e)]),
          ),
    );
    if (page.nextCursor && ctx.out.format === 'table')
      ctx.out.note(`More conclusions follow: add --cursor ${page.nextCursor} (with the same --account, --from and --before).`);
  });
}

export function registerRules(program: Sade, run: Run): void {
  program
    .command('rules list')
    .describe('The loaded mail rules in run order, and whether the configuration file still says what they were read from.')
    .action(run((ctx) => list(ctx)));
  program
    .command('rules run')
    .describe("Run one account's rules over all its stored mail (background work); returns the run under way, if any.")
    .option('--account', 'Configured account identifier')
    .option('--watch', 'Then follow the run until it ends')
    .option('--interval', 'With --watch: time between readings (default 2s)')
    .action(run((ctx, options) => startRun(ctx, options)));
  program
    .command('rules run-status')
    .describe("Progress or ending of the account's latest rule run.")
    .option('--account', 'Configured account identifier')
    .option('--watch', 'Read again until the run ends')
    .option('--interval', 'With --watch: time between readings (default 2s)')
    .action(run((ctx, options) => runStatus(ctx, options)));
  program
    .command('rules history')
    .describe("One account's rule conclusions, newest first, with what each asked and what came of it; a page at a time.")
    .option('--account', 'Configured account identifier')
    .option('--from', 'ISO 8601 instant: conclusions written at or after it')
    .option('--before', 'ISO 8601 instant: conclusions written before it')
    .option('--page-size', 'Conclusions per page (1 to 200, default 50)')
    .option('--cursor', 'The cursor a previous page ended with (with the same filters)')
    .action(run((ctx, options) => history(ctx, options)));
}
