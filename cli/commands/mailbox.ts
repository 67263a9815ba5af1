/**
 * `mailbox authorize | status | rederive | rederive-status | rewind`: the
 * mailbox routes of the administrative surface.
 *
 * - `authorize` reads the refresh token from standard input (never an
 *   argument) and answers nothing back: the route stores it sealed and
 *   returns no body.
 * - `status --watch` reads the status again and again (watch.ts) until no
 *   mirror is under way, each mirrored folder with its progress.
 * - `rewind` reads the estimate first (to standard output), asks on standard
 *   error unless `--yes`, then discards progress: it needs both
 *   `service.admin.read` and `service.admin.operate`.
 */
import type { Sade } from 'sade';
import { RederivationAnswer, RewindAnswer, RewindAssessmentAnswer, SynchronizationAnswer, read } from '../answers.ts';
import { confirm } from '../confirm.ts';
import { type Connection, withConnection } from '../connection.ts';
import type { Context } from '../context.ts';
import { unchanged } from '../failure.ts';
import { flag, optionalText, requiredText, type Options } from '../options.ts';
import { readSecret } from '../standard-input.ts';
import { progressWords, watch, watchOption } from '../watch.ts';
import type { Run } from './run.ts';

const SYNC = '/api/admin/mailbox/synchronization';
const REFRESH = '/api/admin/mailbox/refresh-token';
const REWIND = '/api/admin/mailbox/rewind';
const REDERIVE = '/api/admin/mailbox/rederivation';

type Scope = { account: string; folder?: string };

function scopeOf(options: Options): Scope {
  const folder = optionalText(options, 'folder');
  return { account: requiredText(options, 'account', 'account'), ...(folder !== undefined ? { folder } : {}) };
}

function scopeWords(scope: { account: string; folder?: string | null }): string {
  return scope.folder ? `folder ${scope.folder} of account ${scope.account}` : `every folder of account ${scope.account}`;
}

async function authorize(ctx: Context, options: Options): Promise<void> {
  const account = requiredText(options, 'account', 'account');
  await withConnection(ctx, async ({ client }) => {
    const refreshToken = await readSecret(ctx.io, 'refresh token', `Mailbox refresh token for account ${account}: `);
    await unchanged(client.post(REFRESH, { account, refreshToken }), 'Nothing was stored.');
    ctx.out.reading({ account, stored: true }, () => `Stored the refresh token for account ${account}, sealed by the deployment; it cannot be read back.`);
  });
}

function yesNo(value: boolean): string {
  return value ? 'yes' : 'no';
}

type Sync = ReturnType<typeof SynchronizationAnswer.parse>;
type SyncFolder = Sync['accounts'][number]['folders'][number];

function mirrorWords(f: SyncFolder): string {
  return f.progress ? progressWords(f.progress, 'stored') : '-';
}

function statusText(ctx: Context, answer: Sync): string {
  const lines = [answer.synchronizationEnabled ? 'Synchronization is on.' : 'Synchronization is off: nothing is fetched and every figure is still.'];
  if (answer.accounts.length === 0) return [...lines, 'No account is configured.'].join('\n');
  lines.push(
    '',
    ctx.out.table(
      ['ACCOUNT', 'PHASE', 'NEXT RUN', 'FAILURES', 'LAST RUN'],
      answer.accounts.map((a) => [
        a.account,
        a.phase,
        a.nextRunDueAt ?? '-',
        String(a.consecutiveFailureCount),
        a.lastRun ? `${a.lastRun.outcome} at ${a.lastRun.endedAt}, ${a.lastRun.foldersFailed} folder(s) failed` : 'none since start',
      ]),
    ),
    '',
    ctx.out.table(
      ['ACCOUNT', 'FOLDER', 'MIRRORED', 'UIDVALIDITY', 'LAST UID', 'ADVANCED AT', 'NOT YET INDEXED', 'MIRROR PROGRESS', 'LAST RUN'],
      answer.accounts.flatMap((a) =>
        a.folders.map((f) => [
          a.account,
          f.alias,
          yesNo(f.mirrored),
          f.uidValidity === null ? '-' : String(f.uidValidity),
          f.lastSeenUid === null ? '-' : String(f.lastSeenUid),
          f.progressAdvancedAt ?? '-',
          f.notYetIndexedEmailCount === undefined ? '-' : String(f.notYetIndexedEmailCount),
          mirrorWords(f),
          f.lastRun
            ? `${f.lastRun.outcome} at ${f.lastRun.endedAt}: ${f.lastRun.storedEmailCount} stored, ${f.lastRun.oversizedEmailCount} oversized, ${f.lastRun.unreadableEmailCount} unreadable${f.lastRun.hasMoreEmails ? ', more to fetch' : ''}`
            : 'none since start',
        ]),
      ),
    ),
  );
  return lines.join('\n');
}

/** One line per refresh for a pipe: each account's phase and its mirrored folders' progress. */
function statusLine(answer: Sync): string {
  if (!answer.synchronizationEnabled) return 'synchronization is off';
  if (answer.accounts.length === 0) return 'no account is configured';
  return answer.accounts
    .map((a) => {
      const folders = a.folders.filter((f) => f.mirrored).map((f) => `${f.alias} ${mirrorWords(f)}`);
      return `${a.account} ${a.phase}${folders.length > 0 ? `: ${folders.join('; ')}` : ''}`;
    })
    .join(' | ');
}

/**
 * Whether mirroring is under way: an account runs or waits for a slot, or
 * one waiting without failures has a mirrored folder not mirrored whole
 * (stored below the server's count, or never selected since the start). A
 * failing account waits out its backoff: that is no progress to watch.
 */
export function mirrorUnderWay(answer: Sync): boolean {
  if (!answer.synchronizationEnabled) return false;
  return answer.accounts.some(
    (a) =>
      a.phase === 'running' ||
      a.phase === 'waiting-for-slot' ||
      (a.phase === 'waiting' &&
        a.consecutiveFailureCount === 0 &&
        a.folders.some((f) => {
          const p = f.progress;
          if (!f.mirrored || !p) return false;
          return p.totalEmailCount === null ? a.lastRun === null : p.completedEmailCount < p.totalEmailCount;
        })),
  );
}

async function status(ctx: Context, options: Options): Promise<void> {
  const watching = watchOption(options);
  const readStatus = async ({ client }: Connection): Promise<Sync> => read(SynchronizationAnswer, await client.get(SYNC), client.endpoint, `GET ${SYNC}`);
  if (watching !== null) {
    return watch(ctx, {
      intervalMs: watching.intervalMs,
      read: readStatus,
      human: (answer) => statusText(ctx, answer),
      line: statusLine,
      done: (answer) => !mirrorUnderWay(answer),
    });
  }
  await withConnection(ctx, async (connection) => {
    const answer = await readStatus(connection);
    ctx.out.reading(answer, () => statusText(ctx, answer));
  });
}

function describeRun(answer: ReturnType<typeof RederivationAnswer.parse>, scope: Scope): string {
  const run = answer.run;
  if (run === null) return `No re-derivation was ever asked for ${scopeWords(scope)}.`;
  const progress = `${run.rederivedEmailCount} re-read, ${run.unreadableEmailCount} unreadable, ${run.missingContentEmailCount} no longer stored`;
  const state = run.isOutstanding ? `under way since ${run.requestedAt}` : `ended at ${run.endedAt ?? '?'} (asked at ${run.requestedAt})`;
  return `Re-derivation of ${scopeWords(run)}: ${state}; ${progress}.`;
}

/** Only an outstanding run has something to warn about: a stopped run that ended was dropped on purpose. */
function warnCarriage(ctx: Context, answer: ReturnType<typeof RederivationAnswer.parse>): void {
  if (!answer.run?.isOutstanding) return;
  if (answer.carriage === 'queue-at-capacity') ctx.out.warn("The deployment's job queue had no room for this run: it is recorded but not carried yet.");
  if (answer.carriage === 'stopped') {
    ctx.out.warn('The job carrying this run was dead-lettered: the run waits at its position. See mailcairn jobs dead-letters, then jobs retry --job <job>.');
  }
}

async function rederive(ctx: Context, options: Options): Promise<void> {
  const scope = scopeOf(options);
  await withConnection(ctx, async ({ client }) => {
    const answer = read(RederivationAnswer, await unchanged(client.post(REDERIVE, scope), 'Nothing was started.'), client.endpoint, `POST ${REDERIVE}`);
    ctx.out.reading(answer, () => `${answer.started ? 'Started.' : 'A run was already under way; this is it.'}\n${describeRun(answer, scope)}`);
    warnCarriage(ctx, answer);
  });
}

async function rederiveStatus(ctx: Context, options: Options): Promise<void> {
  const scope = scopeOf(options);
  await withConnection(ctx, async ({ client }) => {
    const answer = read(RederivationAnswer, await client.get(REDERIVE, scope), client.endpoint, `GET ${REDERIVE}`);
    ctx.out.reading(answer, () => describeRun(answer, scope));
    warnCarriage(ctx, answer);
  });
}

async function rewind(ctx: Context, options: Options): Promise<void> {
  const scope = scopeOf(options);
  const yes = flag(options, 'yes');
  await withConnection(ctx, async ({ client }) => {
    const estimate = read(RewindAssessmentAnswer, await client.get(REWIND, scope), client.endpoint, `GET ${REWIND}`);
    // The estimate is a reading: standard output, before the question.
    if (ctx.out.format === 'table')
      ctx.out.line(`Rewinding ${scopeWords(scope)} would have the next run fetch ${estimate.storedEmailCount} stored email(s) again from the mail server.`);
    try {
      await confirm(ctx.io, `Discard the synchronization progress of ${scopeWords(scope)}? Stored mail stays; flags, keywords and dates are fetched again.`, {
        yes,
      });
    } catch (err) {
      // A JSON reader still gets the estimate, with nothing rewound.
      if (ctx.out.format === 'json') ctx.out.reading({ estimate, rewound: null }, () => '');
      throw err;
    }
    const done = read(RewindAnswer, await unchanged(client.post(REWIND, scope), 'Nothing was discarded.'), client.endpoint, `POST ${REWIND}`);
    ctx.out.reading({ estimate, rewound: done }, () =>
      done.folders.length > 0
        ? `Discarded the progress of ${done.folders.join(', ')}; the next run of account ${done.account} fetches them again.`
        : scope.folder
          ? `Folder ${scope.folder} of account ${scope.account} held no progress; nothing was discarded.`
          : `No folder of account ${scope.account} held progress; nothing was discarded.`,
    );
  });
}

export function registerMailbox(program: Sade, run: Run): void {
  program
    .command('mailbox authorize')
    .describe('Store a mailbox refresh token for one configured account; the token is read from standard input and never answered back.')
    .option('--account', 'Configured account identifier (Accounts:Id)')
    .example('mailbox authorize --account pat < refresh-token.txt')
    .action(run((ctx, options) => authorize(ctx, options)));
  program
    .command('mailbox status')
    .describe(
      "Synchronization status per account and mapped folder, with each mirrored folder's progress (stored of the server's count, per second, time left).",
    )
    .option('--watch', 'Read it again and again until no mirror is under way (Ctrl-C stops watching)')
    .option('--interval', 'Time between two readings with --watch: 2s (default), 500ms, 1m')
    .example('mailbox status --watch --interval 5s')
    .action(run((ctx, options) => status(ctx, options)));
  program
    .command('mailbox rederive')
    .describe('Re-read stored raw MIME into newly recorded properties (cheap; no mail server session). Returns the run under way, if any.')
    .option('--account', 'Configured account identifier')
    .option('--folder', 'Folder alias (default: every folder the account holds mail in)')
    .action(run((ctx, options) => rederive(ctx, options)));
  program
    .command('mailbox rederive-status')
    .describe('Progress or ending of the latest re-derivation of a scope.')
    .option('--account', 'Configured account identifier')
    .option('--folder', 'Folder alias (default: every folder)')
    .action(run((ctx, options) => rederiveStatus(ctx, options)));
  program
    .command('mailbox rewind')
    .describe(
      'Discard synchronization progress so the next run fetches the scope again (flags, keywords, dates); erases no mail. Shows the estimate, then asks.',
    )
    .option('--account', 'Configured account identifier')
    .option('--folder', 'Folder alias (default: every folder)')
    .option('--yes', 'Agree without being asked (needed when standard input is not a terminal)')
    .action(run((ctx, options) => rewind(ctx, options)));
}
