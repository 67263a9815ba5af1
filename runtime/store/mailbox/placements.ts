/**
 * The change journal's placement kinds (issue 13): `append` places a stored
 * MIME message (an outgoing email's sent copy, a draft) in the account's
 * sent or drafts folder; `remove-appended` removes what an earlier append
 * placed. Both are `mailbox-change` jobs like the message changes of
 * changes.ts and share their queue (one at a time, in the order recorded,
 * per account), their request identifiers (`mailbox_change_requests`), their
 * retries and dead letters and the audit; they differ in having no local
 * message: no `messageId` in the payload, no overlay, nothing followed
 * locally on append (the sync fetches the placed copy like any new mail,
 * so it is stored once).
 *
 * The payload names the source row (`outgoing_emails` or `drafts`, by id),
 * never the bytes: they are read when the append is applied. An append's
 * progress holds, before the APPEND is sent, the target folder's path,
 * UIDVALIDITY and UIDNEXT (`placement`), so a later attempt looks for the
 * Message-ID among the UIDs from there before appending again; at its end,
 * `placed` (path, UIDVALIDITY, UID, or null when the server's answer gave
 * none and the search found none) and the outcome.
 *
 * Writers: the account's sync actor (every function here but
 * `readPlacement`). `readPlacement` only reads: the outbox reads a job's
 * placement with it on its own connection.
 */
import { randomUUID } from 'node:crypto';
import { completeJob, deadLetterJob, enqueueJob, jobById, type Job, type JobFailure } from '../jobs.ts';
import type { Database } from '../open.ts';
import { one, run } from '../rows.ts';
import { PLACEMENT_KINDS, type PlacementEffect, type PlacementSourceTable } from './change-effect.ts';
import { CHANGE_JOB_TYPE, mergeChangeProgress } from './changes.ts';
import { blobOf, perConnection } from './prepared.ts';
import { tombstoneMessage } from './server-changes.ts';

export type AppendEffect = Extract<PlacementEffect, { kind: 'append' }>;
export type RemovalEffect = Extract<PlacementEffect, { kind: 'remove-appended' }>;
export type AppendPayload = { effect: AppendEffect; requester: string; requestedAt: number };
export type RemovalPayload = { effect: RemovalEffect; requester: string; requestedAt: number };
export type PlacementPayload = AppendPayload | RemovalPayload;

/** A placement job with its payload read. */
export type Placement = { job: Job; payload: PlacementPayload };

/** A message on the server: its folder, that folder's UIDVALIDITY, its UID. */
export type Placed = { path: string; uidValidity: number; uid: number };
/** What an append made durable before sending APPEND: where, and the UID the next message there would get. */
export type AppendMark = { path: string; uidValidity: number; uidNext: number };

/**
 * How a placement ended:
 * - `applied`: placed (append) or removed (removal);
 * - `gone`: a removal found nothing to remove (its append placed nothing, or the copy is no longer there);
 * - `no-folder`: the account has no such folder (no mapped alias, no SPECIAL-USE folder): not retried;
 * - `no-source`: the stored message is no longer held as asked (row gone, or it holds another Message-ID now);
 * - `withdrawn`: a removal of this append ended before it was applied (after an operator's retry), so nothing was placed;
 * - `refused`, `failed`: dead-lettered, as for every change.
 */
export type PlacementOutcome = 'applied' | 'gone' | 'no-folder' | 'no-source' | 'withdrawn' | 'refused' | 'failed';
export type PlacementState = 'pending' | 'converging' | 'completed' | 'dead-lettered' | 'dropped';
export type PlacementProgress = { placement?: AppendMark; began?: boolean; outcome?: PlacementOutcome; placed?: Placed | null };

/** What the outbox reads of a placement job. `placed`: what an append placed, or what a removal removed; null otherwise. */
export type PlacementView = { state: PlacementState; outcome: PlacementOutcome | null; placed: Placed | null };

const statements = perConnection((db: Database) => ({
  request: db.prepare('SELECT account_id, fingerprint, job_ids FROM mailbox_change_requests WHERE requester = ? AND request_id = ?'),
  insertRequest: db.prepare(
    'INSERT INTO mailbox_change_requests (requester, request_id, account_id, fingerprint, job_ids, recorded_at) VALUES (?, ?, ?, ?, ?, ?)',
  ),
  // The table name is one of two constants (PLACEMENT_SOURCES), never the caller's text.
  // A row erased under retention (outbox/retention.ts) holds no message: an append of it ends no-source.
  outgoing: db.prepare('SELECT message_id, raw_mime FROM outgoing_emails WHERE id = ? AND account_id = ? AND erased_at IS NULL'),
  draft: db.prepare("SELECT message_id, raw_mime FROM drafts WHERE id = ? AND account_id = ? AND state <> 'deleted' AND erased_at IS NULL"),
  outgoingId: db.prepare('SELECT message_id FROM outgoing_emails WHERE id = ? AND account_id = ?'),
  draftId: db.prepare("SELECT message_id FROM drafts WHERE id = ? AND account_id = ? AND state <> 'deleted'"),
  removalEnded: db.prepare(
    `SELECT 1 AS ended FROM jobs WHERE type = 'mailbox-change' AND account_id = ? AND state = 'done'
       AND json_extract(payload, '$.effect.kind') = 'remove-appended' AND json_extract(payload, '$.effect.appendJob') = ? LIMIT 1`,
  ),
  mirrored: db.prepare(
    `SELECT m.id FROM messages m JOIN folder_bindings b ON b.id = m.binding_id
     WHERE b.account_id = ? AND b.remote_path = ? AND b.retired_at IS NULL AND m.uidvalidity = ? AND m.uid = ? AND m.state <> 'tombstoned'`,
  ),
  audit: db.prepare(
    `INSERT INTO mutation_audit (account_id, mutation, message_id, source_path, target_path, uidvalidity, source_uid, target_uid, detail,
       requester, requested_at, ended_at, outcome)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ),
}));

export function isPlacementPayload(payload: unknown): payload is PlacementPayload {
  const kind = (payload as { effect?: { kind?: unknown } } | null)?.effect?.kind;
  return (PLACEMENT_KINDS as readonly unknown[]).includes(kind);
}

export type RecordPlacementResult =
  | { outcome: 'recorded'; job: number; view: PlacementView; repeated: boolean }
  /** The request identifier was used for something else. */
  | { outcome: 'request-conflict' }
  /** Append: no row of this account by that id holding that Message-ID. Removal: no append job of this account by that id. */
  | { outcome: 'not-found' };

export type RecordAppendInput = {
  accountId: string;
  requester: string;
  requestId: string;
  target: AppendEffect['target'];
  source: AppendEffect['source'];
  flags: readonly AppendEffect['flags'][number][];
  messageIdHeader: string;
  now: number;
};

/** Records an append, once per (requester, requestId): asking again answers the same job. One transaction. */
export function recordAppend(db: Database, input: RecordAppendInput): RecordPlacementResult {
  const effect: AppendEffect = {
    kind: 'append',
    target: input.target,
    source: { table: input.source.table, id: input.source.id },
    flags: [...new Set(input.flags)].sort(),
    messageIdHeader: input.messageIdHeader,
  };
  return recordPlacement(db, input, effect, () => {
    const held = one<{ message_id: string }>(idStatement(db, effect.source.table), [effect.source.id, input.accountId]);
    return held !== undefined && held.message_id === effect.messageIdHeader;
  });
}

export type RecordRemovalInput = { accountId: string; requester: string; requestId: string; appendJob: number; now: number };

/** Records the removal of what an append job placed, once per (requester, requestId). One transaction. */
export function recordRemoval(db: Database, input: RecordRemovalInput): RecordPlacementResult {
  const effect: RemovalEffect = { kind: 'remove-appended', appendJob: input.appendJob };
  return recordPlacement(db, input, effect, () => {
    const job = jobById(db, input.appendJob);
    return job !== null && job.type === CHANGE_JOB_TYPE && job.accountId === input.accountId && isAppend(job.payload);
  });
}

function recordPlacement(
  db: Database,
  input: { accountId: string; requester: string; requestId: string; now: number },
  effect: PlacementEffect,
  exists: () => boolean,
): RecordPlacementResult {
  const s = statements(db);
  const record = db.transaction((): RecordPlacementResult => {
    const fingerprint = JSON.stringify(['placement', effect]);
    const earlier = one<{ account_id: string; fingerprint: string; job_ids: string }>(s.request, [input.requester, input.requestId]);
    if (earlier !== undefined) {
      if (earlier.account_id !== input.accountId || earlier.fingerprint !== fingerprint) return { outcome: 'request-conflict' };
      const job = (JSON.parse(earlier.job_ids) as number[])[0]!;
      return { outcome: 'recorded', job, view: readPlacement(db, job)!, repeated: true };
    }
    if (!exists()) return { outcome: 'not-found' };
    const payload: PlacementPayload = { effect, requester: input.requester, requestedAt: input.now } as PlacementPayload;
    const { job } = enqueueJob(db, {
      type: CHANGE_JOB_TYPE,
      accountId: input.accountId,
      idempotencyKey: `${CHANGE_JOB_TYPE}:${randomUUID()}`,
      payload,
      now: input.now,
    });
    run(s.insertRequest, [input.requester, input.requestId, input.accountId, fingerprint, JSON.stringify([job.id]), input.now]);
    return { outcome: 'recorded', job: job.id, view: readPlacement(db, job.id)!, repeated: false };
  });
  return record.immediate();
}

/**
 * The state of a placement job (append or removal), or null when the job is
 * not one (or, given `accountId`, not that account's). Reads only: the
 * outbox calls it on its own connection.
 */
export function readPlacement(db: Database, jobId: number, accountId?: string): PlacementView | null {
  const job = jobById(db, jobId);
  if (job === null || job.type !== CHANGE_JOB_TYPE || !isPlacementPayload(job.payload)) return null;
  if (accountId !== undefined && job.accountId !== accountId) return null;
  const progress = (job.progress ?? {}) as PlacementProgress;
  return { state: placementState(job), outcome: progress.outcome ?? null, placed: progress.placed ?? null };
}

function placementState(job: Job): PlacementState {
  switch (job.state) {
    case 'done':
      return 'completed';
    case 'dead':
      return 'dead-lettered';
    case 'dropped':
      return 'dropped';
    default:
      return job.state === 'running' || job.attemptCount > 0 ? 'converging' : 'pending';
  }
}

function isAppend(payload: unknown): payload is AppendPayload {
  return isPlacementPayload(payload) && payload.effect.kind === 'append';
}

/** The append job a removal names, or null when there is none of this account. */
export function appendJobOf(db: Database, accountId: string, jobId: number): { job: Job; payload: AppendPayload } | null {
  const job = jobById(db, jobId);
  if (job === null || job.type !== CHANGE_JOB_TYPE || job.accountId !== accountId || !isAppend(job.payload)) return null;
  return { job, payload: job.payload };
}

/** The stored message an append places, as its row holds it now; null when the row is gone (or the draft deleted). */
export function appendSource(db: Database, accountId: string, source: AppendEffect['source']): { messageIdHeader: string; raw: Uint8Array } | null {
  const s = statements(db);
  const row = one<{ message_id: string; raw_mime: Uint8Array | ArrayBuffer | null }>(source.table === 'drafts' ? s.draft : s.outgoing, [source.id, accountId]);
  const raw = row === undefined ? null : blobOf(row.raw_mime);
  return row === undefined || raw === null ? null : { messageIdHeader: row.message_id, raw };
}

/** Whether a removal of this append already ended (an operator retried the append after it): then nothing is placed. */
export function removalEnded(db: Database, accountId: string, appendJob: number): boolean {
  return one<{ ended: number }>(statements(db).removalEnded, [accountId, appendJob]) !== undefined;
}

function idStatement(db: Database, table: PlacementSourceTable) {
  const s = statements(db);
  return table === 'drafts' ? s.draftId : s.outgoingId;
}

export type PlacementEnd = { outcome: Exclude<PlacementOutcome, 'refused' | 'failed'>; placed: Placed | null; now: number };

/**
 * The placement ended: its outcome and what it placed (or removed) kept in
 * its progress, the job done, one audit entry. A removal that removed a
 * copy the mirror holds tombstones it (`deleted`), as a delete does; an
 * append writes nothing locally: the sync stores the copy when it fetches
 * the folder. One transaction.
 */
export function endPlacement(db: Database, placement: Placement, end: PlacementEnd): void {
  const apply = db.transaction(() => {
    const accountId = placement.job.accountId!;
    let local: number | null = null;
    if (placement.payload.effect.kind === 'remove-appended' && end.outcome === 'applied' && end.placed !== null) {
      const held = one<{ id: number }>(statements(db).mirrored, [accountId, end.placed.path, end.placed.uidValidity, end.placed.uid]);
      if (held !== undefined && tombstoneMessage(db, held.id, 'deleted', end.now)) local = held.id;
    }
    mergeChangeProgress(db, placement.job.id, { outcome: end.outcome, placed: end.placed });
    completeJob(db, placement.job.id, end.now);
    audit(db, placement, { outcome: end.outcome, placed: end.placed, local, now: end.now });
  });
  apply.immediate();
}

/** The placement will not apply by itself: dead-lettered and audited; what an attempt made durable (the APPEND's mark) is kept for a retry. */
export function deadLetterPlacement(
  db: Database,
  placement: Placement,
  f: { outcome: 'refused' | 'failed'; attempts: number; failure: JobFailure; now: number },
): void {
  const apply = db.transaction(() => {
    mergeChangeProgress(db, placement.job.id, { outcome: f.outcome });
    deadLetterJob(db, placement.job.id, { attempts: f.attempts, failure: f.failure, now: f.now });
    audit(db, placement, { outcome: f.outcome, placed: null, local: null, now: f.now });
  });
  apply.immediate();
}

/**
 * One mailbox-change audit entry, as for the message changes, without a
 * local message: an append fills the target (path, UIDVALIDITY, UID), a
 * removal the source (the folder and UID it removed, and the local id when
 * the mirror held that copy and tombstoned it). `detail` holds what
 * was asked (target alias, flags, source table and id; the append job a
 * removal names), never the Message-ID or content.
 */
function audit(db: Database, placement: Placement, e: { outcome: PlacementOutcome; placed: Placed | null; local: number | null; now: number }): void {
  const { effect, requester, requestedAt } = placement.payload;
  const placed = e.placed;
  const append = effect.kind === 'append';
  const detail = append
    ? { target: effect.target, flags: effect.flags, source: effect.source.table, sourceId: effect.source.id }
    : { appendJob: effect.appendJob };
  run(statements(db).audit, [
    placement.job.accountId,
    effect.kind,
    e.local,
    append ? null : (placed?.path ?? null),
    append ? (placed?.path ?? null) : null,
    placed?.uidValidity ?? null,
    append ? null : (placed?.uid ?? null),
    append ? (placed?.uid ?? null) : null,
    JSON.stringify(detail),
    requester,
    requestedAt,
    e.now,
    e.outcome,
  ]);
}
