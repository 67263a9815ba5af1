/**
 * `embedding status | activate`: the embedding routes of the administrative
 * surface (docs/admin-api.md "Embeddings").
 *
 * - `status` prints every status line: the declared profile, the serving
 *   one with how much of the stored mail it covers (with the pace and the
 *   time left), the reindex, the next pass, the provider's health, the
 *   spend of the period and why work waits. `--watch` reads it again and
 *   again (watch.ts) until no embedding is under way.
 * - `activate` reads the forecast first. Nothing declared: refused with what
 *   to declare. The declared profile already serving or being built: the
 *   POST begins nothing and spends nothing, so it asks nothing. Otherwise
 *   the estimate goes to standard output, the question to standard error,
 *   and only `--yes` or a terminal agrees (never piped input). It needs
 *   `service.admin.read` and `service.admin.spend`.
 *
 * Nothing printed names a message: the routes answer counts and profiles only.
 */
import type { Sade } from 'sade';
import type { z } from 'zod';
import { ActivationAnswer, ActivationForecastAnswer, EmbeddingStatusAnswer, read, type WorkProgress } from '../answers.ts';
import { confirm } from '../confirm.ts';
import { type Connection, withConnection } from '../connection.ts';
import type { Context } from '../context.ts';
import { CliFailure, unchanged } from '../failure.ts';
import { flag, type Options } from '../options.ts';
import { progressWords, watch, watchOption } from '../watch.ts';
import type { Run } from './run.ts';

const STATUS = '/api/admin/embeddings';
const ACTIVATION = '/api/admin/embeddings/activation';

type Status = z.infer<typeof EmbeddingStatusAnswer>;
type Forecast = z.infer<typeof ActivationForecastAnswer>;
type Profile = NonNullable<Status['declared']>;

export const NOT_DECLARED =
  'No embedding profile is declared, so there is nothing to activate: set Embeddings:Provider to Local, or Embeddings:BaseAddress, Model and Dimensions, ' +
  "in the deployment's configuration, restart it, then run mailcairn embedding activate again. Nothing was activated.";

function profileWords(p: Profile): string {
  return `${p.model} (${p.provider}, ${p.dimensions} dimensions, ${p.distance})`;
}

/** The coverage, with the pace and the time left when the deployment answers them. */
function coverage(embedded: number, total: number, progress: WorkProgress | undefined): string {
  return progress ? progressWords(progress, 'stored emails embedded') : `${embedded} of ${total} stored emails embedded`;
}

function statusLines(ctx: Context, s: Status): string {
  const waiting =
    s.waitingFor === null
      ? 'no'
      : s.waitingFor === 'spend'
        ? "for spend: the period's characters are used; work resumes when the period ends"
        : s.waitingFor === 'provider'
          ? 'for the provider: it is failing or calls to it are paused'
          : `for ${s.waitingFor}`;
  const provider =
    s.provider.state === 'not-declared'
      ? 'not declared'
      : `${s.provider.state}${s.provider.since ? ` since ${s.provider.since}` : ''}${s.provider.lastFailure ? ` (last failure: ${s.provider.lastFailure})` : ''}`;
  const reindex =
    s.reindex.state === 'building' && s.reindex.profile !== undefined
      ? `generation ${s.reindex.generation} building since ${s.reindex.startedAt}: ${profileWords(s.reindex.profile)}, ` +
        coverage(s.reindex.embeddedEmailCount ?? 0, s.reindex.emailCount ?? 0, s.reindex.progress)
      : s.reindex.state;
  return ctx.out.pairs([
    ['Declared profile', s.declared ? profileWords(s.declared) : 'none (Embeddings declares no profile)'],
    [
      'Serving profile',
      s.serving
        ? `generation ${s.serving.generation} since ${s.serving.servingSince}: ${profileWords(s.serving)}, ${coverage(s.serving.embeddedEmailCount, s.serving.emailCount, s.serving.progress)}`
        : 'none: semantic search is inactive until a declared profile is activated (mailcairn embedding activate)',
    ],
    ['Reindex', reindex],
    ['Next pass', s.nextPassAt ?? 'none'],
    ['Provider', provider],
    ['Spend', `${s.spend.usedCharacters} of ${s.spend.maxCharacters} characters, period ends at ${s.spend.periodEndsAt}`],
    ['Waiting', waiting],
  ]);
}

/** One line per refresh for a pipe: each generation's coverage, and why work waits. */
function statusLine(s: Status): string {
  const parts: string[] = [];
  if (s.serving) parts.push(`serving generation ${s.serving.generation}: ${coverage(s.serving.embeddedEmailCount, s.serving.emailCount, s.serving.progress)}`);
  else parts.push('nothing serving');
  if (s.reindex.state === 'building') {
    parts.push(
      `reindex generation ${s.reindex.generation ?? '?'}: ${coverage(s.reindex.embeddedEmailCount ?? 0, s.reindex.emailCount ?? 0, s.reindex.progress)}`,
    );
  }
  if (s.waitingFor !== null) parts.push(`waiting for ${s.waitingFor}`);
  return parts.join(' | ');
}

/**
 * Whether embedding is under way: a live generation has stored mail left to
 * embed and the work is not waiting for the period's spend to roll over (a
 * wait of up to a whole period: no progress to watch). With
 * `EmbeddingBackfill:Enabled` false older mail is never embedded, and the
 * watch lasts until Ctrl-C.
 */
export function embeddingUnderWay(s: Status): boolean {
  if (s.waitingFor === 'spend') return false;
  const servingLeft = s.serving !== null && s.serving.embeddedEmailCount < s.serving.emailCount;
  const buildingLeft = s.reindex.state === 'building' && (s.reindex.embeddedEmailCount ?? 0) < (s.reindex.emailCount ?? 0);
  return servingLeft || buildingLeft;
}

async function status(ctx: Context, options: Options): Promise<void> {
  const watching = watchOption(options);
  const readStatus = async ({ client }: Connection): Promise<Status> => read(EmbeddingStatusAnswer, await client.get(STATUS), client.endpoint, `GET ${STATUS}`);
  if (watching !== null) {
    return watch(ctx, {
      intervalMs: watching.intervalMs,
      read: readStatus,
      human: (answer) => statusLines(ctx, answer),
      line: statusLine,
      done: (answer) => !embeddingUnderWay(answer),
    });
  }
  await withConnection(ctx, async (connection) => {
    const answer = await readStatus(connection);
    ctx.out.reading(answer, () => statusLines(ctx, answer));
  });
}

function estimateLines(f: Forecast): string[] {
  return [f.forecast, `Passages to send: ${f.passages}`, `Characters: ${f.characters} (about ${f.approximateTokens} tokens; ${f.periods} spend period(s))`];
}

function outcomeWords(a: z.infer<typeof ActivationAnswer>): string {
  const model = a.forecast.declared ? profileWords(a.forecast.declared) : 'the declared profile';
  switch (a.outcome) {
    case 'started':
      return `Activated: generation ${a.generation} of ${model} is embedding the stored mail; follow it with mailcairn embedding status.`;
    case 'reindexing':
      return `Reindexing: generation ${a.generation} of ${model} is being built; the serving generation answers searches until it is done.`;
    case 'serving':
      return `${model} serves already (generation ${a.generation}); nothing was begun and nothing spent.`;
    case 'building':
      return `${model} is being built already (generation ${a.generation}); nothing was begun and nothing spent.`;
    default:
      return `Activation answered ${a.outcome} (generation ${a.generation}).`;
  }
}

async function activate(ctx: Context, options: Options): Promise<void> {
  const yes = flag(options, 'yes');
  await withConnection(ctx, async ({ client }) => {
    const forecast = read(ActivationForecastAnswer, await client.get(ACTIVATION), client.endpoint, `GET ${ACTIVATION}`);
    if (forecast.effect === 'not-declared') throw new CliFailure(NOT_DECLARED);
    // Serving or building: the POST begins nothing and spends nothing, so there is nothing to agree to.
    if (forecast.effect === 'start' || forecast.effect === 'reindex') {
      // The estimate is a reading: standard output, before the question.
      for (const line of estimateLines(forecast)) ctx.out.line(line);
      const model = forecast.declared ? profileWords(forecast.declared) : 'the declared profile';
      const question =
        forecast.effect === 'start'
          ? `Activate ${model} and send ${forecast.passages} passages (${forecast.characters} characters) to its provider? This starts a provider bill.`
          : `Build a new generation with ${model} and send ${forecast.passages} passages (${forecast.characters} characters) to its provider? This starts a provider bill; the serving generation answers until it is done.`;
      try {
        await confirm(ctx.io, question, { yes });
      } catch (err) {
        // A JSON reader still gets the forecast, with nothing activated.
        if (ctx.out.format === 'json') ctx.out.reading(forecast, () => '');
        throw err;
      }
    }
    const done = read(ActivationAnswer, await unchanged(client.post(ACTIVATION, {}), 'Nothing was activated.'), client.endpoint, `POST ${ACTIVATION}`);
    ctx.out.reading(done, () => outcomeWords(done));
  });
}

export function registerEmbedding(program: Sade, run: Run): void {
  program
    .command('embedding status')
    .describe('Semantic search health and lag: declared and serving profiles with their progress, reindex, next pass, provider health, spend.')
    .option('--watch', 'Read it again and again until no embedding is under way (Ctrl-C stops watching)')
    .option('--interval', 'Time between two readings with --watch: 2s (default), 500ms, 1m')
    .action(run((ctx, options) => status(ctx, options)));
  program
    .command('embedding activate')
    .describe('Take up the declared embedding profile and start embedding (a provider bill). Shows the estimate, then asks.')
    .option('--yes', 'Agree without being asked (needed when standard input is not a terminal)')
    .example('embedding activate --yes')
    .action(run((ctx, options) => activate(ctx, options)));
}
