/**
 * Public surface of the outbox actor (`outbox`), the sole writer of the
 * outbox and drafts tables (migration 5): its configuration slice, the
 * messages the tools and the admin routes send, their replies, and the
 * child spec. Everything outside this folder imports this file only.
 *
 * A send is recorded in one transaction and answered at once; delivery runs
 * afterwards, off the request (actors/outbox/delivery.ts). The outbox asks
 * for `service.mail.send` again when a send is written (a third check, so
 * an entry from elsewhere meets the same refusal): the asker states the
 * caller's grant.
 */
import { z } from 'zod';
import { moduleUrl } from '../../runtime/module-url.ts';
import { type ActorId, actorIdSchema, type ProtocolOf } from '../../runtime/ref.ts';
import { StoreSlice } from '../../runtime/store/store-slice.ts';
import type { ImapSyncProtocol } from '../imap-sync/protocol.ts';

export const OUTBOX_ENTRY = moduleUrl('./actor.ts', import.meta.url);
export const OUTBOX_ID: ActorId<OutboxProtocol> = 'outbox';
export const SEND_PERMISSION = 'service.mail.send';
export const DRAFTS_PERMISSION = 'service.mail.drafts.write';

/** How the tools name a send and a draft: `o` or `d` and the row id (the outbox answers with these names). */
export { DRAFT_ID_PATTERN, draftRowOf, OUTGOING_ID_PATTERN, outgoingRowOf } from '../../runtime/store/outbox/vocabulary.ts';

/** Bounds of what one send or draft may hold; refusals name the bound (docs/sending.md). */
export const SEND_LIMITS = {
  recipients: 50,
  addressLength: 254,
  subjectLength: 998,
  bodyCharacters: 200_000,
  /** Attachments a forward carries from the original. */
  attachments: 20,
  attachmentBytes: 20 * 1024 * 1024,
  idempotencyKeyLength: 128,
} as const;

const Smtp = z.strictObject({
  host: z.string(),
  port: z.number().int().min(1).max(65_535),
  security: z.enum(['Tls', 'StartTls', 'None']),
  username: z.string(),
  passwordRef: z.string().optional(),
  trustedCertificateRef: z.string().optional(),
  /** XOAUTH2 with the account's sealed refresh token, redeemed by its sync actor. */
  oauth: z.boolean(),
  /** Whether a copy of each Sent message is appended to the sent folder (`Smtp:SentCopy`). */
  sentCopy: z.boolean(),
});

export const OutboxConfig = z.strictObject({
  store: StoreSlice,
  enabled: z.boolean(),
  maxAttempts: z.number().int().min(1),
  retryDelayMs: z.number().int().positive(),
  sendTimeoutMs: z.number().int().positive(),
  /** Sends offered at once, across accounts. */
  concurrency: z.number().int().min(1),
  accounts: z.array(
    z.strictObject({
      id: z.string(),
      /** The envelope sender and the From address: the SMTP login when it is an address, else the IMAP one. */
      address: z.string().nullable(),
      smtp: Smtp.nullable(),
      syncActorId: actorIdSchema<ImapSyncProtocol>(),
    }),
  ),
  policy: z.strictObject({
    allowedDomains: z.array(z.string()),
    allowedAddresses: z.array(z.string()),
    deniedDomains: z.array(z.string()),
    deniedAddresses: z.array(z.string()),
    /** Whether a recipient must be in the contact book (`Outbox:RecipientPolicy:Contacts`). */
    contacts: z.enum(['Any', 'Asserted', 'AssertedOrCollected']),
  }),
  ceilings: z.strictObject({
    periodMs: z.number().int().positive(),
    perAccount: z.number().int().positive().nullable(),
    perCaller: z.number().int().positive().nullable(),
    perDeployment: z.number().int().positive().nullable(),
  }),
  /** `Outbox:Retention`: how long ended sends and deleted drafts keep their content (docs/sending.md "Retention"). */
  retention: z.strictObject({ endedSendsMs: z.number().int().positive(), deletedDraftsMs: z.number().int().positive() }),
});
export type OutboxConfig = z.infer<typeof OutboxConfig>;

const Address = z.string().min(3).max(SEND_LIMITS.addressLength);
const Addresses = z.array(Address).max(SEND_LIMITS.recipients);
const Body = z.string().max(SEND_LIMITS.bodyCharacters);

/** What the message says; the outbox composes the MIME from it (nodemailer's composer). */
export const Composition = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('new'), to: Addresses, cc: Addresses, bcc: Addresses, subject: z.string(), plainTextBody: Body, htmlBody: Body.nullable() }),
  z.strictObject({
    kind: z.literal('reply'),
    /** The stored email answered (local row id; the asker checked the caller may read it). */
    original: z.number().int().positive(),
    audience: z.enum(['senderOnly', 'everyone']),
    cc: Addresses,
    plainTextBody: Body,
    htmlBody: Body.nullable(),
  }),
  z.strictObject({
    kind: z.literal('forward'),
    original: z.number().int().positive(),
    to: Addresses,
    cc: Addresses,
    bcc: Addresses,
    plainTextBody: Body,
    htmlBody: Body.nullable(),
  }),
]);
export type Composition = z.infer<typeof Composition>;

const Caller = { requester: z.string().min(1).max(500), permissions: z.array(z.string()) };
const OutgoingRow = z.number().int().positive();

export const OutboxMessage = z.discriminatedUnion('type', [
  /** From the send tools: compose and record one send (`SendReply`). */
  z.strictObject({
    type: z.literal('outbox.record-send'),
    ...Caller,
    accountId: z.string(),
    idempotencyKey: z.string().min(1).max(SEND_LIMITS.idempotencyKeyLength),
    composition: Composition,
  }),
  /** From `send_draft`: record the draft's exact message as a send. */
  z.strictObject({ type: z.literal('outbox.send-draft'), ...Caller, draftId: z.number().int().positive(), idempotencyKey: z.string().min(1).max(128) }),
  /** From `get_outgoing_email`: one send of this caller (`OutgoingView`, or null). */
  z.strictObject({ type: z.literal('outbox.outgoing'), requester: z.string(), outgoing: OutgoingRow }),
  /** Withdraw (`requester` set: only that caller's send; null: the operator's route). */
  z.strictObject({ type: z.literal('outbox.cancel'), outgoing: OutgoingRow, by: z.string(), requester: z.string().nullable() }),
  z.strictObject({ type: z.literal('outbox.requeue'), outgoing: OutgoingRow, by: z.string(), refusalRestated: z.boolean() }),
  /** Drafts: save a new one (`draftId` null) or restate one whole; delete one. */
  z.strictObject({
    type: z.literal('outbox.save-draft'),
    ...Caller,
    accountId: z.string(),
    draftId: z.number().int().positive().nullable(),
    composition: Composition,
  }),
  z.strictObject({ type: z.literal('outbox.delete-draft'), ...Caller, draftId: z.number().int().positive() }),
]);
export type OutboxMessage = z.infer<typeof OutboxMessage>;

export const MCP_STATES = ['queued', 'sending', 'sent', 'refused', 'cancelled'] as const;
export const OutgoingState = z.enum(MCP_STATES);

export const SendReply = z.discriminatedUnion('outcome', [
  z.strictObject({
    outcome: z.literal('recorded'),
    outgoingEmailId: z.string(),
    accountId: z.string(),
    state: OutgoingState,
    recipientCount: z.number().int(),
    queuedAt: z.string(),
  }),
  /**
   * Refusals with a constant sentence naming the bound or rule (never an address):
   * `invalid` (51xxx), `key-conflict`, `not-found` (53xxx), `policy` (a recipient the policy refuses),
   * `ceiling` (57001), `not-permitted`, `no-smtp`.
   */
  z.strictObject({
    outcome: z.enum(['invalid', 'key-conflict', 'not-found', 'policy', 'ceiling', 'not-permitted', 'no-smtp']),
    sentence: z.string(),
  }),
]);
export type SendReply = z.infer<typeof SendReply>;

export const OutgoingView = z.strictObject({
  outgoingEmailId: z.string(),
  accountId: z.string(),
  state: OutgoingState,
  recipientCount: z.number().int(),
  queuedAt: z.string(),
  attemptCount: z.number().int(),
  failureCode: z.string().nullable(),
  recipients: z.array(
    z.strictObject({
      address: z.string(),
      header: z.enum(['to', 'cc', 'bcc']),
      state: z.enum(['pending', 'accepted', 'refused']),
      replyCode: z.number().int().nullable(),
    }),
  ),
});
export type OutgoingView = z.infer<typeof OutgoingView>;
export const OutgoingReply = z.strictObject({ outgoing: OutgoingView.nullable() });
export type OutgoingReply = z.infer<typeof OutgoingReply>;

export const OperatorOutcome = z.enum(['Accepted', 'RecordUnknown', 'StageDoesNotAllowIt', 'AttemptUnderWay', 'RefusalNotRestated']);
export const OperatorReply = z.strictObject({ outcome: OperatorOutcome });
export type OperatorReply = z.infer<typeof OperatorReply>;

const DraftSaved = z.strictObject({
  outcome: z.literal('saved'),
  draftId: z.string(),
  accountId: z.string(),
  state: z.enum(['held', 'filed']),
  revision: z.number().int(),
});
const DraftDeleted = z.strictObject({ outcome: z.literal('deleted'), draftId: z.string(), result: z.enum(['deleted', 'copyLeftBehind']) });
const DraftRefusal = z.strictObject({ outcome: z.enum(['invalid', 'not-found', 'not-permitted', 'state-passed']), sentence: z.string() });
/** Reply to `outbox.save-draft`. */
export const SaveDraftReply = z.discriminatedUnion('outcome', [DraftSaved, DraftRefusal]);
export type SaveDraftReply = z.infer<typeof SaveDraftReply>;
/** Reply to `outbox.delete-draft`. */
export const DeleteDraftReply = z.discriminatedUnion('outcome', [DraftDeleted, DraftRefusal]);
export type DeleteDraftReply = z.infer<typeof DeleteDraftReply>;
export const DraftReply = z.discriminatedUnion('outcome', [DraftSaved, DraftDeleted, DraftRefusal]);
export type DraftReply = z.infer<typeof DraftReply>;

/** What the outbox answers to each message. */
export type OutboxProtocol = ProtocolOf<
  z.input<typeof OutboxMessage>,
  {
    'outbox.record-send': SendReply;
    'outbox.send-draft': SendReply;
    'outbox.outgoing': OutgoingReply;
    'outbox.cancel': OperatorReply;
    'outbox.requeue': OperatorReply;
    'outbox.save-draft': SaveDraftReply;
    'outbox.delete-draft': DeleteDraftReply;
  }
>;
