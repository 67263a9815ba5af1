/**
 * `outbox status | list | show | cancel | requeue`: the outbox routes of the
 * administrative surface (docs/admin-api.md "Outbox"; docs/cli.md "Commands":
 * `show`, for `GET /api/admin/outbox/{id}`, is this client's own).
 *
 * - `status` prints one count per stage; `list` a page of sends, newest
 *   first, with a cursor while more follow. Neither prints a recipient or
 *   a subject: the routes answer none.
 * - `show --message o12` is the one command that prints recipients (the
 *   route needs `service.admin.audit.read`).
 * - `cancel` withdraws a send that has not begun transmitting. It asks no
 *   question: nothing of the send has gone out, and `requeue` offers a
 *   cancelled send again.
 * - `requeue` may put a second copy in a mailbox, so it needs a
 *   confirmation (client rule 1: `--yes`, or a terminal's yes; redirected
 *   input without `--yes` is refused and nothing is sent but the session
 *   check). `--despite-refusal` restates the refusal of a Refused send.
 *
 * An outcome other than `Accepted` is not a refusal by the deployment, but
 * nothing was done, so the command prints the outcome's sentence and exits
 * 1 (as `jobs retry` does).
 */
import type { Sade } from 'sade';
import { OutboxDecisionAnswer, OutboxListingAnswer, OutboxSummaryAnswer, OutgoingEmailAnswer, read } from '../answers.ts';
import { confirm } from '../confirm.ts';
import { withConnection } from '../connection.ts';
import type { Context } from '../context.ts';
import { CliFailure, unchanged } from '../failure.ts';
import { flag, optionalInteger, optionalText, requiredText, type Options } from '../options.ts';
import type { Run } from './run.ts';

const OUTBOX = '/api/admin/outbox';
const SUMMARY = `${OUTBOX}/summary`;
const CANCEL = `${OUTBOX}/cancellation`;
const REQUEUE = `${OUTBOX}/requeue`;
const STAGES = ['Recorded', 'TransmissionBegun', 'Sent', 'Refused', 'Cancelled'] as const;

type Outcome = 'Accepted' | 'RecordUnknown' | 'StageDoesNotAllowIt' | 'AttemptUnderWay' | 'RefusalNotRestated';

const CANCEL_OUTCOMES: Readonly<Record<Outcome, (id: string) => string>> = {
  Accepted: (id) => `Send ${id} is withdrawn: nothing of it was transmitted, and its record stays.`,
  RecordUnknown: (id) => `The deployment holds no send ${id} of a configured account; nothing was withdrawn.`,
  StageDoesNotAllowIt: (id) => `Send ${id} is past the stage a withdrawal applies at (only a Recorded send can be withdrawn); nothing was withdrawn.`,
  AttemptUnderWay: (id) => `An attempt to deliver send ${id} is under way; nothing was withdrawn. Ask again once it ends.`,
  RefusalNotRestated: (id) => `Send ${id} was refused by the mail server; nothing was withdrawn.`,
};

const REQUEUE_OUTCOMES: Readonly<Record<Outcome, (id: string) => string>> = {
  Accepted: (id) => `Send ${id} is offered again: its attempts are given back, and the next pass offers every address not yet accepted.`,
  RecordUnknown: (id) => `The deployment holds no send ${id} of a configured account; nothing was requeued.`,
  StageDoesNotAllowIt: (id) => `Send ${id} has nothing to offer again (every address accepted it, or its stage does not allow it); nothing was requeued.`,
  AttemptUnderWay: (id) => `An attempt to deliver send ${id} is under way; nothing was requeued. Ask again once it ends.`,
  RefusalNotRestated: (id) =>
    `Send ${id} was refused by the mail server; offering it again needs the refusal restated (--despite-refusal). Nothing was requeued.`,
};

function messageOf(options: Options): string {
  return requiredText(options, 'message', 'send identifier, such as o12');
}

function failureWords(failure: { code: string; replyCode: number | null } | null): string {
  if (failure === null) return '-';
  return failure.replyCode === null ? failure.code : `${failure.code} (${failure.replyCode})`;
}

async function status(ctx: Context): Promise<void> {
  await withConnection(ctx, async ({ client }) => {
    const answer = read(OutboxSummaryAnswer, await client.get(SUMMARY), client.endpoint, `GET ${SUMMARY}`);
    const counts = answer.stageCounts;
    ctx.out.reading(answer, () =>
      ctx.out.table(
        ['STAGE', 'SENDS'],
        STAGES.map((stage) => [stage, String(counts[stage])]),
      ),
    );
    if (counts.TransmissionBegun > 0 && ctx.out.format === 'table') {
      ctx.out.note(
        `${counts.TransmissionBegun} send(s) began transmitting and the server never answered: nothing retries them by itself. See mailcairn outbox list --stage TransmissionBegun, then requeue each one or leave it.`,
      );
    }
  });
}

async function list(ctx: Context, options: Options): Promise<void> {
  const pageSize = optionalInteger(options, 'page-size', 1, 1_000_000);
  const query = {
    stage: optionalText(options, 'stage'),
    account: optionalText(options, 'account'),
    pageSize: pageSize === undefined ? undefined : String(pageSize),
    cursor: optionalText(options, 'cursor'),
  };
  await withConnection(ctx, async ({ client }) => {
    const page = read(OutboxListingAnswer, await client.get(OUTBOX, query), client.endpoint, `GET ${OUTBOX}`);
    ctx.out.reading(page, () =>
      page.outgoingEmails.length === 0
        ? 'No send matches.'
        : ctx.out.table(
            ['MESSAGE', 'RECORDED AT', 'ACCOUNT', 'STAGE', 'ATTEMPTS', 'LAST FAILURE', 'DUE AT'],
            page.outgoingEmails.map((e) => [
              e.outgoingEmail,
              e.recordedAt,
              e.account,
              e.stage,
              String(e.attemptCount),
              failureWords(e.lastFailure),
              e.dueAt ?? '-',
            ]),
          ),
    );
    if (page.nextCursor && ctx.out.format === 'table') ctx.out.note(`More sends follow: add --cursor ${page.nextCursor} (with the same filters).`);
  });
}

async function show(ctx: Context, options: Options): Promise<void> {
  const message = messageOf(options);
  const path = `${OUTBOX}/${encodeURIComponent(message)}`;
  await withConnection(ctx, async ({ client }) => {
    const detail = read(OutgoingEmailAnswer, await client.get(path), client.endpoint, `GET ${OUTBOX}/{id}`);
    ctx.out.reading(detail, () =>
      [
        ctx.out.pairs([
          ['Message', detail.outgoingEmail],
          ['Account', detail.account],
          ['Stage', detail.stage],
          ['Recorded at', detail.recordedAt],
          ['Attempts', String(detail.attemptCount)],
          ['Last failure', failureWords(detail.lastFailure)],
          ['Due at', detail.dueAt ?? '-'],
        ]),
        '',
        detail.recipients.length === 0
          ? 'No recipient.'
          : ctx.out.table(
              ['RECIPIENT', 'HEADER', 'STATE', 'REPLY', 'REPLIED AT'],
              detail.recipients.map((r) => [r.address, r.header, r.state, r.replyCode === null ? '-' : String(r.replyCode), r.repliedAt ?? '-']),
            ),
      ].join('\n'),
    );
  });
}

async function cancel(ctx: Context, options: Options): Promise<void> {
  const outgoingEmail = messageOf(options);
  await withConnection(ctx, async ({ client }) => {
    const answer = read(
      OutboxDecisionAnswer,
      await unchanged(client.post(CANCEL, { outgoingEmail }), 'Nothing was withdrawn.'),
      client.endpoint,
      `POST ${CANCEL}`,
    );
    ctx.out.reading(answer, () => CANCEL_OUTCOMES[answer.outcome as Outcome]?.(answer.outgoingEmail) ?? `Send ${answer.outgoingEmail}: ${answer.outcome}.`);
    if (answer.outcome !== 'Accepted') throw new CliFailure(`The send was not withdrawn (${answer.outcome}).`);
  });
}

async function requeue(ctx: Context, options: Options): Promise<void> {
  const outgoingEmail = messageOf(options);
  const despiteRefusal = flag(options, 'despite-refusal');
  const yes = flag(options, 'yes');
  await withConnection(ctx, async ({ client }) => {
    const restated = despiteRefusal ? ' You also restate its refusal: a send the mail server refused is offered to it again.' : '';
    await confirm(ctx.io, `Offer send ${outgoingEmail} again? If an earlier attempt did reach a mailbox, this may put a second copy there.${restated}`, {
      yes,
    });
    const body = { outgoingEmail, ...(despiteRefusal ? { refusalRestated: true } : {}) };
    const answer = read(OutboxDecisionAnswer, await unchanged(client.post(REQUEUE, body), 'Nothing was requeued.'), client.endpoint, `POST ${REQUEUE}`);
    ctx.out.reading(answer, () => REQUEUE_OUTCOMES[answer.outcome as Outcome]?.(answer.outgoingEmail) ?? `Send ${answer.outgoingEmail}: ${answer.outcome}.`);
    if (answer.outcome !== 'Accepted') throw new CliFailure(`The send was not requeued (${answer.outcome}).`);
  });
}

export function registerOutbox(program: Sade, run: Run): void {
  program
    .command('outbox status')
    .describe('How many sends stand at each stage; names no message.')
    .action(run((ctx) => status(ctx)));
  program
    .command('outbox list')
    .describe('Sends, newest first, a page at a time: stage, attempts, last failure, due time. No recipient, no subject.')
    .option('--stage', 'Only sends at this stage: Recorded, TransmissionBegun, Sent, Refused or Cancelled')
    .option('--account', 'Only sends of this account')
    .option('--page-size', 'Sends per page (1 to 200, default 50)')
    .option('--cursor', 'The cursor a previous page ended with (same filters)')
    .action(run((ctx, options) => list(ctx, options)));
  program
    .command('outbox show')
    .describe('One send with everyone it is offered to and what the mail server said of each (needs service.admin.audit.read).')
    .option('--message', 'Send identifier, such as o12 (from outbox list)')
    .action(run((ctx, options) => show(ctx, options)));
  program
    .command('outbox cancel')
    .describe('Withdraw one send that has not begun transmitting; its record stays.')
    .option('--message', 'Send identifier, such as o12 (from outbox list)')
    .action(run((ctx, options) => cancel(ctx, options)));
  program
    .command('outbox requeue')
    .describe('Offer one send again, to every address not yet accepted; may put a second copy in a mailbox. Asks first.')
    .option('--message', 'Send identifier, such as o12 (from outbox list)')
    .option('--despite-refusal', 'Restate the refusal of a send the mail server refused, so it is offered again')
    .option('--yes', 'Agree without being asked (needed when standard input is not a terminal)')
    .action(run((ctx, options) => requeue(ctx, options)));
}
