/**
 * Public surface of the spam actor (`spam`): the one classifier of stored
 * mail (docs/rules-and-spam.md "Spam"). It judges arriving mail when
 * `Spam:Enabled` (the derivation writer rings `spam.derived` when mail of an
 * account was derived), and carries admin runs (`spam.run`, one per account,
 * dry run unless asked to apply). A verdict's change is asked of the
 * account's sync actor (`imap-sync.record-changes`, requester `spam`).
 * Everything outside `actors/spam/` imports this file only.
 *
 * No message, reply or log line carries a subject, an address or content:
 * ids, counts, scores, codes.
 */
import { z } from 'zod';
import { moduleUrl } from '../../runtime/module-url.ts';
import type { ActorId, ProtocolOf } from '../../runtime/ref.ts';
import { StoreSlice } from '../../runtime/store/store-slice.ts';
import { WorkProgress } from '../../runtime/work-progress.ts';

export const SPAM_ENTRY = moduleUrl('./actor.ts', import.meta.url);
export const SPAM_ID: ActorId<SpamProtocol> = 'spam';

/** The requester the mutation audit names for every change a verdict asks. */
export const SPAM_REQUESTER = 'mailcairn:spam';
/** Engine calls a stage keeps in flight while it judges a segment (bench/scenarios/rules-spam.ts calls rspamd directly the same way). */
export const SPAM_CALLS_IN_FLIGHT = 4;

export const SpamConfig = z.strictObject({
  store: StoreSlice,
  /** `Spam:Enabled`: arriving mail is classified. Admin runs work either way. */
  enabled: z.boolean(),
  threshold: z.number().min(0).max(1),
  action: z.enum(['None', 'Keyword', 'Move']),
  /** Asked in lower case (the journal's keyword rule). */
  keyword: z.string().min(1),
  folder: z.string().min(1),
  engine: z.strictObject({
    /** rspamd's normal worker, e.g. `http://127.0.0.1:11333`. */
    address: z.string().min(1),
    timeoutMs: z.number().int().positive(),
    failuresToOpen: z.number().int().min(1),
    coolDownMs: z.number().int().positive(),
    retryDelayMs: z.number().int().positive(),
    retryDelayMaxMs: z.number().int().positive(),
  }),
  trusted: z.strictObject({
    /** Host names the trusted receiving servers write after `by` in their Received: header, lower case. */
    hosts: z.array(z.string().min(1)),
    headers: z.array(z.enum(['SpamAssassin', 'Rspamd'])),
  }),
  /** The configured accounts (their sync actors are `imap-sync:<id>`). */
  accounts: z.array(z.string().min(1)),
});
export type SpamConfig = z.infer<typeof SpamConfig>;

const Account = z.string().min(1);

/** The derivation writer's doorbell: mail of the account was derived (the stage reads what is missing from the store). */
export const SpamDerived = z.strictObject({ type: z.literal('spam.derived'), account: Account });

export const SpamMessage = z.discriminatedUnion('type', [
  SpamDerived,
  /** From the admin route: start a run over the account's stored mail, or return the one under way. */
  z.strictObject({ type: z.literal('spam.run'), account: Account, apply: z.boolean() }),
  /** From the admin route: the account's latest run. */
  z.strictObject({ type: z.literal('spam.run-status'), account: Account }),
]);
export type SpamMessage = z.infer<typeof SpamMessage>;

const Instant = z.iso.datetime();
const Count = z.number().int().nonnegative();

export const SpamRunView = z.strictObject({
  account: z.string().describe('The account'),
  apply: z.boolean().describe('Whether verdicts ask for changes; false: a dry run, which changes nothing'),
  requestedAt: Instant.describe('When the run was asked for'),
  isOutstanding: z.boolean().describe('The run is under way; false once it judged every message it covers'),
  judgedEmailCount: Count.describe('Messages classified so far'),
  spamEmailCount: Count.describe('Of those, judged spam'),
  changeCount: Count.describe('Mailbox changes asked so far (0 in a dry run)'),
  waitingForEngineSince: Instant.nullable().describe('Set while the engine is unreachable: the run waits and tries again with backoff; null otherwise'),
  progress: WorkProgress.describe('Progress against the messages stored when the run was asked for (received mail only)'),
  endedAt: Instant.nullable().describe('When the run ended; null while under way'),
  outcome: z.enum(['completed']).nullable().describe('How it ended: `completed` (every message judged); null while under way'),
});
export type SpamRunView = z.infer<typeof SpamRunView>;

export const SpamRunReply = z.strictObject({
  started: z.boolean().describe('This request started the run; false when it returned the run under way, and always false on GET'),
  run: SpamRunView.nullable().describe("The account's latest run; null when none was asked for"),
});
export type SpamRunReply = z.infer<typeof SpamRunReply>;

export type SpamProtocol = ProtocolOf<
  z.input<typeof SpamMessage>,
  {
    'spam.derived': undefined;
    'spam.run': SpamRunReply;
    'spam.run-status': SpamRunReply;
  }
>;
