/**
 * The query pool's contract with the admin outbox routes: `mail-query.outbox-summary`
 * (`OutboxSummaryRequest` in, `OutboxSummaryReply` out), `mail-query.outbox`
 * (`OutboxPageRequest`, `OutboxPageReply`), `mail-query.outgoing-email`
 * (`OutgoingEmailRequest`, `OutgoingEmailReply`) and `mail-query.outgoing-lookup`
 * (`OutgoingLookupRequest`, `OutgoingLookupReply`, which account's outbox
 * a cancellation or requeue goes to), with how a send is named and the
 * page bounds. Schemas only; the handlers are in ../outbox.ts.
 *
 * The answer schemas here are also the route answers' entries (the admin
 * routes publish them in docs/admin-api.md), so each member says what it is.
 */
import { z } from 'zod';
import type { ProtocolOf } from '../../../runtime/ref.ts';
import { OUTBOX_PAGE_DEFAULT, OUTBOX_PAGE_MAX, OUTGOING_ID_PATTERN, outgoingIdOf, outgoingRowOf, STAGES } from '../../../runtime/store/outbox/vocabulary.ts';

export { OUTBOX_PAGE_DEFAULT, OUTBOX_PAGE_MAX, OUTGOING_ID_PATTERN, outgoingIdOf, outgoingRowOf };
/** The five stages a send can stand at (docs/admin-api.md "Outbox", Stages), in the order of the lifecycle. */
export const OUTBOX_STAGES = STAGES;
export const OutboxStage = z.enum(STAGES);
export type OutboxStage = z.infer<typeof OutboxStage>;

/** Configured accounts: a send of any other is neither counted, listed nor found. */
const Accounts = z.array(z.string().min(1));
const OutgoingRow = z.number().int().positive();

export const OutboxSummaryRequest = z.strictObject({ type: z.literal('mail-query.outbox-summary'), accounts: Accounts });
export type OutboxSummaryRequest = z.infer<typeof OutboxSummaryRequest>;

const Count = z.number().int().nonnegative();
const stageCounts = {
  Recorded: Count.describe('Durable, no SMTP command issued; waiting for an attempt or between attempts'),
  TransmissionBegun: Count.describe('The body began to go out and the server never answered; the operator decides'),
  Sent: Count.describe('The server accepted it for every recipient it accepted'),
  Refused: Count.describe('Will not be offered again; the ending failure is on record'),
  Cancelled: Count.describe('Withdrawn before delivery; nothing transmitted'),
} satisfies Record<OutboxStage, typeof Count>;
export const StageCounts = z.strictObject(stageCounts);

export const OutboxSummaryReply = z.strictObject({
  stageCounts: StageCounts.describe('One count per stage, every stage present, over the configured accounts; names no message'),
});
export type OutboxSummaryReply = z.infer<typeof OutboxSummaryReply>;

export const OutboxPageRequest = z.strictObject({
  type: z.literal('mail-query.outbox'),
  accounts: Accounts,
  account: z.string().min(1).optional(),
  stage: OutboxStage.optional(),
  /** Keyset position: the id of the last send already shown. */
  after: OutgoingRow.optional(),
  pageSize: z.number().int().min(1).max(OUTBOX_PAGE_MAX),
});
export type OutboxPageRequest = z.infer<typeof OutboxPageRequest>;

const Instant = z.iso.datetime();

export const OutboxEntry = z.strictObject({
  outgoingEmail: z.string().describe('The send, `o` and a number; what cancellation, requeue and the detail route take'),
  recordedAt: Instant.describe('When the send was recorded'),
  account: z.string().describe('The account it is sent from'),
  stage: OutboxStage.describe('Where the send stands'),
  attemptCount: Count.describe('Delivery attempts made since it was recorded or last requeued'),
  lastFailure: z
    .strictObject({
      code: z.string().describe('The internal failure code'),
      replyCode: z
        .number()
        .int()
        .nullable()
        .describe("The mail server's reply code that ended it; null when no single reply did (no answer, no connection, or replies differing per recipient)"),
    })
    .nullable()
    .describe('What stopped the last attempt short of every recipient; null when nothing did'),
  dueAt: Instant.nullable().describe('When the next attempt falls due; only while Recorded, null at every other stage'),
});
export type OutboxEntry = z.infer<typeof OutboxEntry>;

export const OutboxPageReply = z.strictObject({
  outgoingEmails: z.array(OutboxEntry),
  /** Where the next page starts; null: nothing follows. */
  next: OutgoingRow.nullable(),
});
export type OutboxPageReply = z.infer<typeof OutboxPageReply>;

export const OutgoingEmailRequest = z.strictObject({
  type: z.literal('mail-query.outgoing-email'),
  accounts: Accounts,
  outgoing: OutgoingRow,
});
export type OutgoingEmailRequest = z.infer<typeof OutgoingEmailRequest>;

export const OutgoingRecipientEntry = z.strictObject({
  address: z.string().describe('The address offered'),
  header: z.enum(['to', 'cc', 'bcc']).describe('The header it came from (`bcc` is in no header of the message)'),
  state: z.enum(['pending', 'accepted', 'refused']).describe('`accepted`: never offered again; `refused`: the server refused it; `pending`: still owed'),
  replyCode: z.number().int().nullable().describe("The server's last reply code for this address; null before any"),
  repliedAt: Instant.nullable().describe('When the server last answered for this address; null before any'),
});

export const OutgoingEmailDetail = OutboxEntry.extend({
  recipients: z.array(OutgoingRecipientEntry).describe('Everyone the send is offered to, in the order given, and what the server said of each'),
});
export type OutgoingEmailDetail = z.infer<typeof OutgoingEmailDetail>;

/** null: no such send of a configured account. */
export const OutgoingEmailReply = z.strictObject({ outgoingEmail: OutgoingEmailDetail.nullable() });
export type OutgoingEmailReply = z.infer<typeof OutgoingEmailReply>;

export const OutgoingLookupRequest = z.strictObject({
  type: z.literal('mail-query.outgoing-lookup'),
  accounts: Accounts,
  outgoing: OutgoingRow,
});
export type OutgoingLookupRequest = z.infer<typeof OutgoingLookupRequest>;

/** The account of the send; null: no such send of a configured account. */
export const OutgoingLookupReply = z.strictObject({ account: z.string().nullable() });
export type OutgoingLookupReply = z.infer<typeof OutgoingLookupReply>;

export type OutboxReadsProtocol = ProtocolOf<
  z.input<typeof OutboxSummaryRequest> | z.input<typeof OutboxPageRequest> | z.input<typeof OutgoingEmailRequest> | z.input<typeof OutgoingLookupRequest>,
  {
    'mail-query.outbox-summary': OutboxSummaryReply;
    'mail-query.outbox': OutboxPageReply;
    'mail-query.outgoing-email': OutgoingEmailReply;
    'mail-query.outgoing-lookup': OutgoingLookupReply;
  }
>;
