/**
 * The outbox's sends (migration 5): recording, the attempt lifecycle, and
 * the operator's withdrawal and re-offer. Sole writer: the outbox actor
 * (actors/outbox/). Stages as docs/admin-api.md "Outbox" names them:
 *
 *   Recorded ──claim──► (attempt) ──body begins──► TransmissionBegun
 *      ▲   │                │                            │
 *      │   │ cancel         │ final replies              │ final replies: Sent | Refused | Recorded (4xx left)
 *      │   ▼                ▼                            │ none: stays, the operator decides
 *      │ Cancelled     Sent | Refused | Recorded (retry) ◄┘
 *      └──── requeue (any stage but a Sent with nothing owed; Refused only restated)
 *
 * Every transition is one statement guarded by the state it leaves, so a
 * cancellation racing the claim of an attempt has exactly one winner.
 *
 * Importable by the outbox actor and the query pool (readers).
 */
import type { Database } from '../open.ts';
import { many, one, run } from '../rows.ts';
import { perConnection } from '../mailbox/prepared.ts';
import type { Stage } from './vocabulary.ts';

// Named in the shape-only vocabulary, so protocols and tools need not load this writer.
export { OUTGOING_ID_PATTERN, outgoingIdOf, outgoingRowOf, STAGES, type Stage } from './vocabulary.ts';
export const ORIGINS = ['new', 'reply', 'forward', 'draft'] as const;
export type Origin = (typeof ORIGINS)[number];
export type RecipientHeader = 'to' | 'cc' | 'bcc';
export type RecipientState = 'pending' | 'accepted' | 'refused';

export type Recipient = {
  position: number;
  address: string;
  header: RecipientHeader;
  state: RecipientState;
  replyCode: number | null;
  repliedAt: number | null;
};

export type Outgoing = {
  id: number;
  accountId: string;
  requester: string;
  origin: Origin;
  draftId: number | null;
  messageId: string;
  envelopeFrom: string;
  sizeBytes: number;
  stage: Stage;
  /** An attempt holds it (Recorded, between claim and the body's first byte). */
  claimed: boolean;
  attemptCount: number;
  dueAt: number;
  failureCode: string | null;
  failureReplyCode: number | null;
  recordedAt: number;
  endedAt: number | null;
  sentCopy: 'owed' | 'recorded' | 'none';
  sentCopyJob: number | null;
  /** Its MIME and recipients' addresses were erased under retention (retention.ts): a tombstone, never offered again. */
  erased: boolean;
};

type Row = {
  id: number;
  account_id: string;
  requester: string;
  origin: Origin;
  draft_id: number | null;
  message_id: string;
  envelope_from: string;
  size_bytes: number;
  stage: Stage;
  claimed_at: number | null;
  attempt_count: number;
  due_at: number;
  failure_code: string | null;
  failure_reply_code: number | null;
  recorded_at: number;
  ended_at: number | null;
  sent_copy: 'owed' | 'recorded' | 'none';
  sent_copy_job: number | null;
  erased_at: number | null;
  fingerprint: string;
};
type RecipientRow = { position: number; address: string; header: RecipientHeader; state: RecipientState; reply_code: number | null; replied_at: number | null };

const columns =
  'id, account_id, requester, origin, draft_id, message_id, envelope_from, size_bytes, stage, claimed_at, attempt_count, due_at, failure_code, failure_reply_code, recorded_at, ended_at, sent_copy, sent_copy_job, erased_at, fingerprint';

function outgoingOf(row: Row): Outgoing {
  return {
    id: row.id,
    accountId: row.account_id,
    requester: row.requester,
    origin: row.origin,
    draftId: row.draft_id,
    messageId: row.message_id,
    envelopeFrom: row.envelope_from,
    sizeBytes: row.size_bytes,
    stage: row.stage,
    claimed: row.claimed_at !== null,
    attemptCount: row.attempt_count,
    dueAt: row.due_at,
    failureCode: row.failure_code,
    failureReplyCode: row.failure_reply_code,
    recordedAt: row.recorded_at,
    endedAt: row.ended_at,
    sentCopy: row.sent_copy,
    sentCopyJob: row.sent_copy_job,
    erased: row.erased_at !== null,
  };
}

const recipientOf = (r: RecipientRow): Recipient => ({
  position: r.position,
  address: r.address,
  header: r.header,
  state: r.state,
  replyCode: r.reply_code,
  repliedAt: r.replied_at,
});

const statements = perConnection((db: Database) => ({
  byId: db.prepare(`SELECT ${columns} FROM outgoing_emails WHERE id = ?`),
  byKey: db.prepare(`SELECT ${columns} FROM outgoing_emails WHERE account_id = ? AND requester = ? AND idempotency_key = ?`),
  insert: db.prepare(
    `INSERT INTO outgoing_emails (account_id, requester, idempotency_key, fingerprint, origin, draft_id, message_id, envelope_from, raw_mime, size_bytes, stage, due_at, recorded_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'Recorded', ?, ?)`,
  ),
  insertRecipient: db.prepare("INSERT INTO outgoing_recipients (outgoing_id, position, address, header, state) VALUES (?, ?, ?, ?, 'pending')"),
  recipients: db.prepare('SELECT position, address, header, state, reply_code, replied_at FROM outgoing_recipients WHERE outgoing_id = ? ORDER BY position'),
  raw: db.prepare('SELECT raw_mime FROM outgoing_emails WHERE id = ?'),
  // Sends withdrawn by an operator never count against a ceiling: nothing of them went out.
  countAccount: db.prepare("SELECT count(*) AS n FROM outgoing_emails WHERE account_id = ? AND recorded_at > ? AND stage <> 'Cancelled'"),
  countCaller: db.prepare("SELECT count(*) AS n FROM outgoing_emails WHERE requester = ? AND recorded_at > ? AND stage <> 'Cancelled'"),
  countAll: db.prepare("SELECT count(*) AS n FROM outgoing_emails WHERE recorded_at > ? AND stage <> 'Cancelled'"),
  due: db.prepare(`SELECT ${columns} FROM outgoing_emails WHERE stage = 'Recorded' AND claimed_at IS NULL AND due_at <= ? ORDER BY due_at, id LIMIT ?`),
  nextDue: db.prepare("SELECT min(due_at) AS at FROM outgoing_emails WHERE stage = 'Recorded' AND claimed_at IS NULL"),
  claim: db.prepare("UPDATE outgoing_emails SET claimed_at = ? WHERE id = ? AND stage = 'Recorded' AND claimed_at IS NULL"),
  unclaim: db.prepare("UPDATE outgoing_emails SET claimed_at = NULL, due_at = max(due_at, ?) WHERE id = ? AND stage = 'Recorded'"),
  releaseAll: db.prepare("UPDATE outgoing_emails SET claimed_at = NULL WHERE stage = 'Recorded' AND claimed_at IS NOT NULL"),
  bodyBegan: db.prepare(
    "UPDATE outgoing_emails SET stage = 'TransmissionBegun', claimed_at = NULL, body_began_at = ? WHERE id = ? AND stage = 'Recorded' AND claimed_at IS NOT NULL",
  ),
  setRecipient: db.prepare(
    "UPDATE outgoing_recipients SET state = ?, reply_code = ?, replied_at = ? WHERE outgoing_id = ? AND position = ? AND state = 'pending'",
  ),
  end: db.prepare(
    `UPDATE outgoing_emails SET stage = ?, claimed_at = NULL, body_began_at = NULL, attempt_count = attempt_count + 1, failure_code = ?, failure_reply_code = ?,
       due_at = ?, ended_at = ? WHERE id = ? AND stage IN ('Recorded', 'TransmissionBegun')`,
  ),
  stayBegun: db.prepare(
    "UPDATE outgoing_emails SET attempt_count = attempt_count + 1, failure_code = ?, failure_reply_code = NULL WHERE id = ? AND stage = 'TransmissionBegun'",
  ),
  cancel: db.prepare(
    `UPDATE outgoing_emails SET stage = 'Cancelled', cancelled_by = ?, ended_at = ?
     WHERE id = ? AND stage = 'Recorded' AND claimed_at IS NULL AND (? IS NULL OR requester = ?)
       AND NOT EXISTS (SELECT 1 FROM outgoing_recipients WHERE outgoing_id = ? AND state = 'accepted')`,
  ),
  hasAccepted: db.prepare("SELECT 1 AS yes FROM outgoing_recipients WHERE outgoing_id = ? AND state = 'accepted' LIMIT 1"),
  reofferRecipients: db.prepare("UPDATE outgoing_recipients SET state = 'pending' WHERE outgoing_id = ? AND state <> 'accepted'"),
  requeue: db.prepare(
    `UPDATE outgoing_emails SET stage = 'Recorded', claimed_at = NULL, body_began_at = NULL, attempt_count = 0, due_at = ?, ended_at = NULL, cancelled_by = NULL
     WHERE id = ? AND stage = ? AND claimed_at IS NULL AND erased_at IS NULL`,
  ),
  copyRecorded: db.prepare("UPDATE outgoing_emails SET sent_copy = ?, sent_copy_job = ? WHERE id = ? AND sent_copy = 'owed'"),
  copyOwed: db.prepare(`SELECT ${columns} FROM outgoing_emails WHERE stage = 'Sent' AND sent_copy = 'owed' ORDER BY id LIMIT ?`),
}));

export function outgoingById(db: Database, id: number): Outgoing | null {
  const row = one<Row>(statements(db).byId, [id]);
  return row ? outgoingOf(row) : null;
}

/** The send a caller's key names, with the fingerprint of what it asked; null when the key is new. */
export function outgoingByKey(db: Database, accountId: string, requester: string, key: string): { outgoing: Outgoing; fingerprint: string } | null {
  const row = one<Row>(statements(db).byKey, [accountId, requester, key]);
  return row ? { outgoing: outgoingOf(row), fingerprint: row.fingerprint } : null;
}

export function recipientsOf(db: Database, id: number): Recipient[] {
  return many<RecipientRow>(statements(db).recipients, [id]).map(recipientOf);
}

export function rawMimeOf(db: Database, id: number): Uint8Array | null {
  const row = one<{ raw_mime: Uint8Array }>(statements(db).raw, [id]);
  return row ? row.raw_mime : null;
}

/** A period's ceiling; null: no ceiling. */
export type Ceilings = { periodMs: number; perAccount: number | null; perCaller: number | null; perDeployment: number | null };
export type CeilingName = 'account' | 'caller' | 'deployment';

export type NewSend = {
  accountId: string;
  requester: string;
  idempotencyKey: string;
  /** Of what was asked, so the same key asking for another message is told apart. */
  fingerprint: string;
  origin: Origin;
  draftId: number | null;
  messageId: string;
  envelopeFrom: string;
  raw: Uint8Array;
  recipients: ReadonlyArray<{ address: string; header: RecipientHeader }>;
  now: number;
};

export type RecordSendResult =
  | { outcome: 'recorded' | 'repeated'; outgoing: Outgoing }
  /** The key already names another message of this caller. */
  | { outcome: 'key-conflict' }
  | { outcome: 'ceiling'; ceiling: CeilingName; limit: number };

/**
 * Record one send, its recipients and its MIME in one transaction, after
 * the ceilings are checked against the sends already recorded in the
 * period (so the counts are as durable as the sends). The same key with
 * the same fingerprint answers the first record.
 */
export function recordSend(db: Database, send: NewSend, ceilings: Ceilings): RecordSendResult {
  const s = statements(db);
  const apply = db.transaction((): RecordSendResult => {
    const existing = one<Row>(s.byKey, [send.accountId, send.requester, send.idempotencyKey]);
    if (existing) return existing.fingerprint === send.fingerprint ? { outcome: 'repeated', outgoing: outgoingOf(existing) } : { outcome: 'key-conflict' };
    const since = send.now - ceilings.periodMs;
    const checks: Array<[CeilingName, number | null, () => number]> = [
      ['account', ceilings.perAccount, () => one<{ n: number }>(s.countAccount, [send.accountId, since])!.n],
      ['caller', ceilings.perCaller, () => one<{ n: number }>(s.countCaller, [send.requester, since])!.n],
      ['deployment', ceilings.perDeployment, () => one<{ n: number }>(s.countAll, [since])!.n],
    ];
    for (const [ceiling, limit, count] of checks) if (limit !== null && count() >= limit) return { outcome: 'ceiling', ceiling, limit };
    const { lastInsertRowid } = run(s.insert, [
      send.accountId,
      send.requester,
      send.idempotencyKey,
      send.fingerprint,
      send.origin,
      send.draftId,
      send.messageId,
      send.envelopeFrom,
      send.raw,
      send.raw.byteLength,
      send.now,
      send.now,
    ]);
    const id = Number(lastInsertRowid);
    for (const [position, r] of send.recipients.entries()) run(s.insertRecipient, [id, position, r.address, r.header]);
    return { outcome: 'recorded', outgoing: outgoingOf(one<Row>(s.byId, [id])!) };
  });
  return apply.immediate();
}

// ---------------------------------------------------------------- attempts

/** Sends due now that no attempt holds, oldest due first. */
export function dueSends(db: Database, now: number, limit: number): Outgoing[] {
  return many<Row>(statements(db).due, [now, limit]).map(outgoingOf);
}

/** When the next unclaimed send falls due; null when none waits. */
export function nextDueAt(db: Database): number | null {
  return one<{ at: number | null }>(statements(db).nextDue)?.at ?? null;
}

/** Take a send for an attempt; false when it was cancelled or taken first. */
export function claimSend(db: Database, id: number, now: number): boolean {
  return run(statements(db).claim, [now, id]).changes === 1;
}

/**
 * Give a claimed send back, no attempt counted (the attempt ended before any SMTP command), due
 * again no sooner than `dueAt`: a send given back due at once would be claimed again at once.
 */
export function unclaimSend(db: Database, id: number, dueAt: number): void {
  run(statements(db).unclaim, [dueAt, id]);
}

/** At start: claims of attempts that died with the last process (none had begun the body, or the stage would say so). */
export function releaseClaims(db: Database): number {
  return run(statements(db).releaseAll).changes;
}

/** Written before the body's first byte leaves: from here an attempt without a final reply is the operator's. */
export function markBodyBegan(db: Database, id: number, now: number): boolean {
  return run(statements(db).bodyBegan, [now, id]).changes === 1;
}

/** What one attempt learned of each recipient it offered (positions not named stay as they were). */
export type RecipientReply = { position: number; state: 'accepted' | 'refused' | 'pending'; replyCode: number | null };

export type AttemptEnd = {
  replies: readonly RecipientReply[];
  /** What stopped the attempt short of every recipient, if anything: an internal code and the server's reply code. */
  failure: { code: string; replyCode: number | null } | null;
  now: number;
  maxAttempts: number;
  /** Delay before the next attempt, given the attempts made so far (this one included). */
  retryDelayMs(attempts: number): number;
};

/**
 * End an attempt that got its answers: each recipient's reply is recorded
 * (an accepted one is never offered again), then the stage follows: Sent
 * when nothing is owed and someone accepted it, Refused when nobody did or
 * the attempts are spent, else Recorded and due after the backoff.
 */
export function endAttempt(db: Database, id: number, end: AttemptEnd): Stage {
  const s = statements(db);
  const apply = db.transaction((): Stage => {
    const before = one<Row>(s.byId, [id]);
    if (!before || (before.stage !== 'Recorded' && before.stage !== 'TransmissionBegun')) return before?.stage ?? 'Refused';
    for (const r of end.replies) if (r.state !== 'pending') run(s.setRecipient, [r.state, r.replyCode, end.now, id, r.position]);
    for (const r of end.replies) if (r.state === 'pending' && r.replyCode !== null) run(s.setRecipient, ['pending', r.replyCode, end.now, id, r.position]);
    const recipients = many<RecipientRow>(s.recipients, [id]);
    const pending = recipients.some((r) => r.state === 'pending');
    const accepted = recipients.some((r) => r.state === 'accepted');
    const attempts = before.attempt_count + 1;
    let stage: Stage;
    let failure = end.failure;
    if (!pending) stage = accepted ? 'Sent' : 'Refused';
    else if (attempts >= end.maxAttempts) {
      stage = 'Refused';
      failure ??= { code: 'attempts-spent', replyCode: null };
    } else stage = 'Recorded';
    if (!pending && accepted) failure = recipients.some((r) => r.state === 'refused') ? (failure ?? { code: 'recipient-refused', replyCode: null }) : null;
    const ended = stage === 'Recorded' ? null : end.now;
    const dueAt = stage === 'Recorded' ? end.now + end.retryDelayMs(attempts) : before.due_at;
    run(s.end, [stage, failure?.code ?? null, failure?.replyCode ?? null, dueAt, ended, id]);
    return stage;
  });
  return apply.immediate();
}

/** The body began and no final reply came: the send stays TransmissionBegun for the operator; the attempt is counted. */
export function leaveBegun(db: Database, id: number, code: string): void {
  run(statements(db).stayBegun, [code, id]);
}

// ---------------------------------------------------------------- the operator and the caller

export type OperatorOutcome = 'Accepted' | 'RecordUnknown' | 'StageDoesNotAllowIt' | 'AttemptUnderWay' | 'RefusalNotRestated';

/**
 * Withdraw a send: one conditional write that succeeds only while it is
 * Recorded, no attempt holds it and no recipient has accepted it.
 * `requester` narrows it to the caller who queued it (the tool); a send of
 * someone else is then unknown.
 */
export function cancelSend(db: Database, id: number, by: string, requester: string | null, now: number): OperatorOutcome {
  const s = statements(db);
  if (run(s.cancel, [by, now, id, requester, requester, id]).changes === 1) return 'Accepted';
  const row = one<Row>(s.byId, [id]);
  if (!row || (requester !== null && row.requester !== requester)) return 'RecordUnknown';
  if (row.stage === 'Recorded' && row.claimed_at !== null) return 'AttemptUnderWay';
  return 'StageDoesNotAllowIt';
}

/**
 * Offer a send again: attempts given back, every recipient not accepted
 * offered again, due now. A Refused send needs the refusal restated; a Sent
 * one with nobody left to offer, and one erased under retention, have
 * nothing to re-offer; `underWay` (the
 * actor's attempts in flight) refuses one an attempt holds.
 */
export function requeueSend(db: Database, id: number, refusalRestated: boolean, underWay: ReadonlySet<number>, now: number): OperatorOutcome {
  const s = statements(db);
  const apply = db.transaction((): OperatorOutcome => {
    const row = one<Row>(s.byId, [id]);
    if (!row) return 'RecordUnknown';
    if (underWay.has(id) || row.claimed_at !== null) return 'AttemptUnderWay';
    // An erased send has no message left to offer (docs/sending.md "Retention").
    if (row.erased_at !== null) return 'StageDoesNotAllowIt';
    if (row.stage === 'Refused' && !refusalRestated) return 'RefusalNotRestated';
    const recipients = many<RecipientRow>(s.recipients, [id]);
    if (!recipients.some((r) => r.state !== 'accepted')) return 'StageDoesNotAllowIt';
    run(s.reofferRecipients, [id]);
    return run(s.requeue, [now, id, row.stage]).changes === 1 ? 'Accepted' : 'AttemptUnderWay';
  });
  return apply.immediate();
}

// ---------------------------------------------------------------- the sent copy

/** Sends whose copy in the sent folder the journal has not recorded yet. */
export function sentCopiesOwed(db: Database, limit: number): Outgoing[] {
  return many<Row>(statements(db).copyOwed, [limit]).map(outgoingOf);
}

/** The journal recorded the copy (`job`), or there is none to make (`none`). */
export function settleSentCopy(db: Database, id: number, outcome: { job: number } | 'none'): void {
  run(statements(db).copyRecorded, [outcome === 'none' ? 'none' : 'recorded', outcome === 'none' ? null : outcome.job, id]);
}
