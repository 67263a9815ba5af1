/**
 * Public messages of an account's sync actor (`imap-sync:<account>`), and
 * its configuration slice. Everything outside this folder imports only this
 * file. The run's private steps stay in actor.ts.
 */
import { z } from 'zod';
import { CHANGE_KINDS, PLACEMENT_FLAGS, PLACEMENT_SOURCES, PLACEMENT_TARGETS } from '../../runtime/store/mailbox/change-effect.ts';
import { StoreSlice } from '../../runtime/store/store-slice.ts';
import { moduleUrl } from '../../runtime/module-url.ts';
import { type ActorId, actorIdSchema, type ProtocolOf } from '../../runtime/ref.ts';
import type { DerivationProtocol } from '../derivation/protocol.ts';
import type { MimeParseProtocol } from '../mime-parse/protocol.ts';
import type { SchedulerProtocol } from '../sync-scheduler/protocol.ts';

/** The module a sync actor runs from (one per account, hosted by the supervisor). Named here, as a URL, so that the composition root starts it without importing it. */
export const IMAP_SYNC_ENTRY = moduleUrl('./actor.ts', import.meta.url);

export const syncActorId = (account: string): ActorId<ImapSyncProtocol> => `imap-sync:${account}`;

export const ImapSyncConfig = z.strictObject({
  account: z.string().min(1),
  imap: z.strictObject({
    host: z.string(),
    port: z.number().int().min(1).max(65_535),
    security: z.enum(['Tls', 'StartTls', 'None']),
    username: z.string(),
    passwordRef: z.string().optional(),
    /** Secret reference to a PEM authority trusted for this server, read at each connection. */
    trustedCertificateRef: z.string().optional(),
    oauth: z.strictObject({ tokenEndpoint: z.string(), clientId: z.string(), clientSecretRef: z.string().optional(), scopes: z.array(z.string()) }).optional(),
  }),
  folders: z.array(z.strictObject({ alias: z.string(), path: z.string().nullable() })).min(1),
  store: StoreSlice,
  keyRingRef: z.string().optional(),
  batchSize: z.number().int().min(1),
  maxMessageBytes: z.number().int().min(1),
  connectTimeoutMs: z.number().int().positive(),
  commandTimeoutMs: z.number().int().positive(),
  /** Between runs, how often the change watch asks the server whether the mapped folders changed (`ChangeCheckInterval`). */
  changeCheckMs: z.number().int().positive(),
  /** Ids of the actors and pools this one talks to. */
  schedulerId: actorIdSchema<SchedulerProtocol>(),
  /** The parse pool (re-derivation) and the derivation writer (new mail). */
  parserId: actorIdSchema<MimeParseProtocol>(),
  derivationId: actorIdSchema<DerivationProtocol>(),
});
export type ImapSyncConfig = z.infer<typeof ImapSyncConfig>;

// ---------------------------------------------------------------- the change journal

/** An IMAP keyword as the journal takes it: an atom (RFC 3501), folded to lower case by whoever asks. */
export const KEYWORD_ATOM = /^[^\s"(){%*\\\]\u0000-\u001f\u007f]+$/;
export const MAX_CHANGE_KEYWORDS = 20;
export const MAX_KEYWORD_LENGTH = 100;
const Keywords = z.array(z.string().min(1).max(MAX_KEYWORD_LENGTH).regex(KEYWORD_ATOM)).max(MAX_CHANGE_KEYWORDS);
const FolderPath = z.string().min(1).max(1_000);

/** One change asked of a message (runtime/store/mailbox/change-effect.ts `ChangeEffect`). */
export const ChangeAsk = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.enum(['set-seen', 'set-flagged']), value: z.boolean() }),
  z.strictObject({ kind: z.enum(['add-keywords', 'remove-keywords']), keywords: Keywords.min(1) }),
  z.strictObject({ kind: z.literal('set-keywords'), keywords: Keywords }),
  z.strictObject({ kind: z.enum(['relocate', 'copy']), targetPath: FolderPath }),
  z.strictObject({ kind: z.literal('delete') }),
]);
export type ChangeAsk = z.infer<typeof ChangeAsk>;

export const ChangeKind = z.enum(CHANGE_KINDS);
export const ChangeState = z.enum(['pending', 'converging', 'completed', 'dead-lettered']);
export const ChangeOutcome = z.enum(['applied', 'superseded', 'gone', 'refused', 'failed']);

/** A recorded change as its asker reads it: `changeId` is its job id (`j<n>`, as the dead-letter routes name it). */
export const ChangeView = z.strictObject({
  changeId: z.string(),
  change: ChangeKind,
  state: ChangeState,
  effect: ChangeAsk,
  outcome: ChangeOutcome.nullable(),
});
export type ChangeView = z.infer<typeof ChangeView>;

/**
 * `recorded`: durable, answered with each change's state (the same records when the request
 * identifier was seen with the same changes); `request-conflict`: the identifier was used for other
 * changes; `not-found`: no live email of this account by that id.
 */
export const RecordChangesReply = z.discriminatedUnion('outcome', [
  z.strictObject({ outcome: z.literal('recorded'), changes: z.array(ChangeView) }),
  z.strictObject({ outcome: z.enum(['request-conflict', 'not-found']) }),
]);
export type RecordChangesReply = z.infer<typeof RecordChangesReply>;

/** How many messages' asks one `imap-sync.record-changes-many` carries at most. */
export const RECORD_MANY_MAX = 64;
/** Each ask's answer, in the order asked. */
export const RecordChangesManyReply = z.strictObject({ replies: z.array(RecordChangesReply) });
export type RecordChangesManyReply = z.infer<typeof RecordChangesManyReply>;

// ---------------------------------------------------------------- placements (the outbox's sent copies and drafts)

/** Who asks, for the audit (the credential's name), and the asker's identifier: asking again with both answers the same job. */
const PlacementRequest = { requester: z.string().min(1).max(500), requestId: z.string().min(1).max(128) };

/** A Message-ID header value with its angle brackets (`<local@domain>`), as `outgoing_emails.message_id` / `drafts.message_id` hold it. */
export const MessageIdHeader = z
  .string()
  .max(998)
  .regex(/^<[^<>\s]+>$/);

/**
 * `imap-sync.record-append`: place the stored message of `source` (read from its row when applied) in the
 * account's sent or drafts folder with `flags`. Answered once durable (`RecordPlacementReply`).
 */
export const RecordAppend = z.strictObject({
  type: z.literal('imap-sync.record-append'),
  ...PlacementRequest,
  /** The folder mapped under this alias, else the server's folder marked `\Sent` / `\Drafts` (SPECIAL-USE). */
  target: z.enum(PLACEMENT_TARGETS),
  source: z.strictObject({ table: z.enum(PLACEMENT_SOURCES), id: z.number().int().positive() }),
  flags: z.array(z.enum(PLACEMENT_FLAGS)).max(2),
  /** Must equal the row's `message_id`: the placed copy is found again by it. */
  messageIdHeader: MessageIdHeader,
});
export type RecordAppend = z.infer<typeof RecordAppend>;

/** `imap-sync.record-removal`: remove what the append job `appendJob` placed, by the UID it recorded. Answered once durable. */
export const RecordRemoval = z.strictObject({
  type: z.literal('imap-sync.record-removal'),
  ...PlacementRequest,
  appendJob: z.number().int().positive(),
});
export type RecordRemoval = z.infer<typeof RecordRemoval>;

/**
 * A placement job's state: `pending` (not attempted yet), `converging` (attempted, not ended),
 * `completed` (ended: read `outcome`), `dead-lettered` (refused or failing: an operator may retry or
 * drop it), `dropped` (an operator dropped it: it will never apply).
 */
export const PlacementState = z.enum(['pending', 'converging', 'completed', 'dead-lettered', 'dropped']);
/**
 * How a placement ended. `applied`: placed (append) or removed (removal). `gone`: the removal found
 * nothing to remove. `no-folder`: no such folder on the account (not retried). `no-source`: the row is
 * gone or holds another Message-ID now. `withdrawn`: an append retried by an operator after a removal
 * of it ended, so not placed. `refused`, `failed`: dead-lettered.
 */
export const PlacementOutcome = z.enum(['applied', 'gone', 'no-folder', 'no-source', 'withdrawn', 'refused', 'failed']);
/** A message on the server: folder path, that folder's UIDVALIDITY, UID. */
export const Placed = z.strictObject({ path: z.string(), uidValidity: z.number().int().positive(), uid: z.number().int().positive() });

/** Reply to `imap-sync.record-append` and `imap-sync.record-removal`: the job (its row id in `jobs`) and its state now. */
export const RecordPlacementReply = z.strictObject({ job: z.number().int().positive(), state: PlacementState });
export type RecordPlacementReply = z.infer<typeof RecordPlacementReply>;

/**
 * Reply to `imap-sync.placement` (and what `readPlacement` in runtime/store/mailbox/placements.ts
 * returns): `placed` is the copy an append placed, or the copy a removal removed; null otherwise
 * (also for an append that placed a copy whose UID the server did not report and a search did not find).
 */
export const PlacementReply = z.strictObject({ state: PlacementState, outcome: PlacementOutcome.nullable(), placed: Placed.nullable() });
export type PlacementReply = z.infer<typeof PlacementReply>;

/** Reply to `imap-sync.access-token`: an XOAUTH2 access token of the account's mailbox login, and the user it names. Never logged. */
export const AccessTokenReply = z.strictObject({ accessToken: z.string().min(1), username: z.string() });
export type AccessTokenReply = z.infer<typeof AccessTokenReply>;

export const FolderScope = z.strictObject({ folder: z.string().min(1).nullable() });

export const SyncMessage = z.discriminatedUnion('type', [
  /** From the scheduler: run once over every mapped folder; answered when the run ends. */
  z.strictObject({ type: z.literal('imap-sync.run') }),
  z.strictObject({ type: z.literal('imap-sync.rewind-assessment'), ...FolderScope.shape }),
  z.strictObject({ type: z.literal('imap-sync.rewind'), ...FolderScope.shape }),
  z.strictObject({ type: z.literal('imap-sync.erase-pass'), folder: z.string().min(1), limit: z.number().int().min(1).max(10_000) }),
  z.strictObject({ type: z.literal('imap-sync.rederive'), ...FolderScope.shape }),
  z.strictObject({ type: z.literal('imap-sync.rederivation'), ...FolderScope.shape }),
  /**
   * From the admin refresh-token route: seal the account's mailbox refresh token under the key ring
   * (purpose token-sealing) and store it in place of any earlier one; answered once durable. The
   * token is never logged and never answered back.
   */
  z.strictObject({ type: z.literal('imap-sync.store-refresh-token'), refreshToken: z.string().min(1).max(16_384) }),
  /**
   * From the flag tool (and later mail rules and spam): record changes of one message of this account
   * in the journal, in one transaction; answered once durable (`RecordChangesReply`). The actor applies
   * them to the server afterwards, in order. `requester`: the credential's name, for the audit.
   */
  z.strictObject({
    type: z.literal('imap-sync.record-changes'),
    messageId: z.number().int().positive(),
    requester: z.string().min(1).max(500),
    requestId: z.string().min(1).max(128).nullable(),
    changes: z.array(ChangeAsk).min(1).max(8),
  }),
  /**
   * From mail rules: several `record-changes` asks (each of one message, with its own request
   * identifier) in one transaction, so a segment of arriving mail costs one commit; answered once
   * durable, each ask's answer in order (`RecordChangesManyReply`).
   */
  z.strictObject({
    type: z.literal('imap-sync.record-changes-many'),
    asks: z
      .array(
        z.strictObject({
          messageId: z.number().int().positive(),
          requester: z.string().min(1).max(500),
          requestId: z.string().min(1).max(128),
          changes: z.array(ChangeAsk).min(1).max(8),
        }),
      )
      .min(1)
      .max(RECORD_MANY_MAX),
  }),
  /** From the query path (55001): content found missing or damaged; answered once the requests are durable. */
  z.strictObject({
    type: z.literal('imap-sync.record-repairs'),
    repairs: z
      .array(z.strictObject({ messageId: z.number().int().positive(), reason: z.enum(['missing', 'damaged']) }))
      .min(1)
      .max(100),
  }),
  /**
   * From the dead-letter routes: return a dead-lettered job of this account to the queue (its run
   * goes on from its position) or drop it (its run ends); answered once durable (`JobDecisionReply`).
   */
  z.strictObject({ type: z.literal('imap-sync.job-decision'), job: z.number().int().positive(), decision: z.enum(['retry', 'drop']) }),
  /** From the outbox: append a sent copy or a draft through the journal (`RecordAppend`). */
  RecordAppend,
  /** From the outbox: remove what an append placed (`RecordRemoval`). */
  RecordRemoval,
  /** The state of a placement job of this account (`PlacementReply`); `E_NOT_FOUND` for any other job. */
  z.strictObject({ type: z.literal('imap-sync.placement'), job: z.number().int().positive() }),
  /**
   * From the outbox, for SMTP with XOAUTH2: an access token redeemed from the account's sealed refresh
   * token (`AccessTokenReply`), the one the IMAP sessions use while it is valid. `fresh`: the token
   * answered before was refused, redeem a new one. An account whose login is a password is refused
   * (`E_IMAP_AUTH`, cause `no-oauth-configured`).
   */
  z.strictObject({ type: z.literal('imap-sync.access-token'), fresh: z.boolean().optional() }),
]);

export const StoreRefreshTokenReply = z.strictObject({ stored: z.literal(true) });
export const RecordRepairsReply = z.strictObject({ recorded: z.number().int().nonnegative() });
/** `JobUnknown`: no job of this account by that id; `JobNotDeadLettered`: the job is not dead (nothing changed). */
export const JobDecisionReply = z.strictObject({ outcome: z.enum(['Accepted', 'JobUnknown', 'JobNotDeadLettered']) });
export type JobDecisionReply = z.infer<typeof JobDecisionReply>;

// Replies of the maintenance messages (maintenance.ts); `folder` null is the whole account.
const EmailCount = z.number().int().nonnegative();
const ReplyScope = { account: z.string(), folder: z.string().nullable() };
export const RewindAssessmentReply = z.strictObject({ ...ReplyScope, storedEmailCount: EmailCount });
export const RewindReply = z.strictObject({ ...ReplyScope, folders: z.array(z.string()) });
export const ErasePassReply = z.strictObject({ erasedEmailCount: EmailCount, emailsRemain: z.boolean(), remainingEmailCount: EmailCount });
export const RederivationCarriage = z.enum(['carried', 'queue-at-capacity', 'stopped']);
export const RederivationRun = z.strictObject({
  ...ReplyScope,
  requestedAt: z.iso.datetime(),
  isOutstanding: z.boolean(),
  rederivedEmailCount: EmailCount,
  unreadableEmailCount: EmailCount,
  missingContentEmailCount: EmailCount,
  endedAt: z.iso.datetime().nullable(),
});
export const RederiveReply = z.strictObject({ started: z.boolean(), carriage: RederivationCarriage, run: RederivationRun });
/** `carriage` is absent with `run: null` (a scope never asked about). */
export const RederivationReply = z.strictObject({ carriage: RederivationCarriage.optional(), run: RederivationRun.nullable() });
export type RewindAssessmentReply = z.infer<typeof RewindAssessmentReply>;
export type RewindReply = z.infer<typeof RewindReply>;
export type ErasePassReply = z.infer<typeof ErasePassReply>;
export type RederiveReply = z.infer<typeof RederiveReply>;
export type RederivationReply = z.infer<typeof RederivationReply>;
export type SyncMessage = z.infer<typeof SyncMessage>;

export const RunSummary = z.strictObject({
  outcome: z.enum(['ok', 'partial', 'failed', 'interrupted']),
  foldersFailed: z.number().int().nonnegative(),
  hasMore: z.boolean(),
  /** Set on a failed run that found the disk under the store full: the scheduler looks again at its first delay. */
  waitsFor: z.literal('storage').optional(),
});
export type RunSummary = z.infer<typeof RunSummary>;

/** What the sync actor answers to each public message. */
export type ImapSyncProtocol = ProtocolOf<
  z.input<typeof SyncMessage>,
  {
    'imap-sync.run': RunSummary;
    'imap-sync.rewind-assessment': RewindAssessmentReply;
    'imap-sync.rewind': RewindReply;
    'imap-sync.erase-pass': ErasePassReply;
    'imap-sync.rederive': RederiveReply;
    'imap-sync.rederivation': RederivationReply;
    'imap-sync.store-refresh-token': z.infer<typeof StoreRefreshTokenReply>;
    'imap-sync.record-changes': RecordChangesReply;
    'imap-sync.record-changes-many': RecordChangesManyReply;
    'imap-sync.record-repairs': z.infer<typeof RecordRepairsReply>;
    'imap-sync.job-decision': JobDecisionReply;
    'imap-sync.record-append': RecordPlacementReply;
    'imap-sync.record-removal': RecordPlacementReply;
    'imap-sync.placement': PlacementReply;
    'imap-sync.access-token': AccessTokenReply;
  }
>;
