/**
 * The mailbox change journal (migration 4). Sole writer: the account's sync
 * actor, which also holds the account's IMAP sessions and applies the
 * changes (actors/imap-sync/change-journal.ts). Each change is a `jobs`
 * row of type `mailbox-change` (jobs.ts gives the lifecycle: queued →
 * running → done, retries with backoff, dead letters, retry and drop); its
 * payload states the change and where the message was when it was asked.
 *
 * Recording is one transaction: the request identifier (answered again, or
 * refused when it asked for something else), the jobs, and the overlay of
 * requested flags on the message, so the local copy shows the requested
 * state at once, marked unconfirmed. The server's own flags stay in
 * `messages.flags` / `keywords`, written only from the server's answers.
 * Ending a change is one transaction too: the server's state written, the
 * job ended, the overlay laid again from what is still outstanding, and one
 * mailbox-change audit entry (no subject, address or content: folder
 * paths, UIDs, local id, requester, instants, outcome).
 *
 * Importable by the sync actor only (the query pool reads the columns).
 */
import { randomUUID } from 'node:crypto';
import { deadLetterJob, enqueueJob, enqueueNewJob, type Enqueue, JOB_COLUMNS, jobById, jobFromRow, jobIdOf, type Job, type JobFailure } from '../jobs.ts';
import type { Database } from '../open.ts';
import { many, one, run } from '../rows.ts';
import { applyEffect, type ChangeEffect, type ChangeKind, FLAG_KINDS, type FlagState } from './change-effect.ts';
import type { PlacementPayload } from './placements.ts';
import { flagSet, perConnection } from './prepared.ts';
import { tombstoneMessage, type TombstoneReason } from './server-changes.ts';
import { moveMessageVectors } from './vectors.ts';

export const CHANGE_JOB_TYPE = 'mailbox-change';

/** Where the message was when the change was recorded, and what the mirror knew of it then. */
export type ChangePayload = {
  effect: ChangeEffect;
  messageId: number;
  bindingId: number;
  uidValidity: number;
  uid: number;
  sourcePath: string;
  /** The message's MODSEQ as the mirror knew it (decimal: it may exceed 2^53), for UNCHANGEDSINCE; null without CONDSTORE. */
  baseModseq: string | null;
  /** The server's flags and keywords as the mirror held them. */
  base: FlagState;
  /**
   * What the asker saw just before this change: `base` with the changes still
   * outstanding then, and the earlier changes of the same request, laid over
   * it (the overlay). The journal's own earlier changes move the server's
   * MODSEQ and the touched part; they are no server-side conflict.
   */
  shown: FlagState;
  requester: string;
  requestedAt: number;
};

/** A job of the journal with its payload read. */
export type Change = { job: Job; payload: ChangePayload };
/** Any job of the journal: a change of a stored message, or a placement (placements.ts), which has no local message. */
export type JournalEntry = Change | { job: Job; payload: PlacementPayload };

/** How an applied change ended (audit `outcome`, and the tool's `outcome`). */
export type ChangeOutcome =
  /** The server holds the requested state (set by this change, or found so after an interrupted attempt). */
  | 'applied'
  /** The server changed the same flag or keywords after the change was asked: the server wins. */
  | 'superseded'
  /** The message is no longer on the server where it was (expunged, or the folder renumbered). */
  | 'gone'
  /** The server refused it (a read-only folder, a keyword the folder does not accept); dead-lettered. */
  | 'refused'
  /** It kept failing and was dead-lettered. */
  | 'failed';

/** The tool's view of one change (`set_mail_flags` in docs/mcp-tools.md: pending, converging, completed, dead-lettered). */
export type ChangeState = 'pending' | 'converging' | 'completed' | 'dead-lettered';
export type ChangeView = { changeId: string; change: ChangeKind; state: ChangeState; effect: ChangeEffect; outcome: ChangeOutcome | null };

export type ChangeAsk = ChangeEffect;

export type RecordInput = {
  accountId: string;
  messageId: number;
  requester: string;
  /** The caller's request identifier, or null. */
  requestId: string | null;
  changes: readonly ChangeAsk[];
  now: number;
};

export type RecordResult =
  | { outcome: 'recorded'; changes: ChangeView[]; repeated: boolean }
  /** The request identifier was used for another change (or another email). */
  | { outcome: 'request-conflict' }
  /** No live email of this account by that id, or its folder is no longer bound. */
  | { outcome: 'not-found' };

type MessageRow = {
  id: number;
  binding_id: number;
  uidvalidity: number;
  uid: number;
  flags: string;
  keywords: string;
  requested_flags: string | null;
  requested_keywords: string | null;
  modseq: string | null;
  remote_path: string | null;
};

const statements = perConnection((db: Database) => ({
  message: db.prepare(
    `SELECT m.id, m.binding_id, m.uidvalidity, m.uid, m.flags, m.keywords, m.requested_flags, m.requested_keywords,
       CAST(m.modseq AS TEXT) AS modseq, b.remote_path
     FROM messages m JOIN folder_bindings b ON b.id = m.binding_id
     WHERE m.id = ? AND m.account_id = ? AND m.state <> 'tombstoned' AND b.retired_at IS NULL AND b.unresolved_since IS NULL`,
  ),
  serverState: db.prepare('SELECT flags, keywords FROM messages WHERE id = ?'),
  request: db.prepare('SELECT account_id, fingerprint, job_ids FROM mailbox_change_requests WHERE requester = ? AND request_id = ?'),
  insertRequest: db.prepare(
    'INSERT INTO mailbox_change_requests (requester, request_id, account_id, fingerprint, job_ids, recorded_at) VALUES (?, ?, ?, ?, ?, ?)',
  ),
  views: db.prepare(`SELECT id, state, attempt_count, payload, progress FROM jobs WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id`),
  outstanding: db.prepare(
    `SELECT payload FROM jobs WHERE type = 'mailbox-change' AND account_id = ? AND json_extract(payload, '$.messageId') = ?
       AND state IN ('queued', 'running') ORDER BY id`,
  ),
  overlay: db.prepare('UPDATE messages SET requested_flags = ?, requested_keywords = ? WHERE id = ?'),
  // Oldest first: changes are applied in the order they were recorded.
  head: db.prepare(`SELECT id FROM jobs WHERE type = 'mailbox-change' AND account_id = ? AND state IN ('queued', 'running') ORDER BY id LIMIT 1`),
  // What follows the head, in the order it is applied: the candidates of a batch (flagBatch).
  following: db.prepare(
    `SELECT ${JOB_COLUMNS} FROM jobs WHERE type = 'mailbox-change' AND account_id = ? AND state IN ('queued', 'running')
       AND id > ? ORDER BY id LIMIT ?`,
  ),
  progress: db.prepare("UPDATE jobs SET progress = ? WHERE id = ? AND state IN ('queued', 'running', 'done', 'dead')"),
  mergeProgress: db.prepare("UPDATE jobs SET progress = json_patch(ifnull(progress, '{}'), ?) WHERE id = ? AND state IN ('queued', 'running', 'done', 'dead')"),
  serverFlags: db.prepare(
    `UPDATE messages SET flags = ?, keywords = ?, modseq = CASE WHEN ? IS NULL THEN modseq ELSE CAST(? AS INTEGER) END, updated_at = ?
     WHERE id = ? AND binding_id = ? AND uidvalidity = ? AND uid = ? AND state <> 'tombstoned'`,
  ),
  // The server's flags and the overlay laid over them in one write of the row (endOne).
  serverFlagsAndOverlay: db.prepare(
    `UPDATE messages SET flags = ?, keywords = ?, modseq = CASE WHEN ? IS NULL THEN modseq ELSE CAST(? AS INTEGER) END, updated_at = ?,
       requested_flags = ?, requested_keywords = ?
     WHERE id = ? AND binding_id = ? AND uidvalidity = ? AND uid = ? AND state <> 'tombstoned'`,
  ),
  // The outcome and the ending in one write of the job (endOne); jobs.ts `completeJob` without the progress.
  completeWithProgress: db.prepare("UPDATE jobs SET progress = ?, state = 'done', ended_at = ? WHERE id = ? AND state IN ('queued', 'running')"),
  audit: db.prepare(
    `INSERT INTO mutation_audit (account_id, mutation, message_id, source_path, target_path, uidvalidity, source_uid, target_uid, detail,
       requester, requested_at, ended_at, outcome)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ),
  // A batch's endings (endChanges): one statement for what is one per change in endOne.
  // Audit entries from a JSON list of `audit`'s rows, inserted in the list's order.
  audits: db.prepare(
    `INSERT INTO mutation_audit (account_id, mutation, message_id, source_path, target_path, uidvalidity, source_uid, target_uid, detail,
       requester, requested_at, ended_at, outcome)
     SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6, value ->> 7, value ->> 8,
       value ->> 9, value ->> 10, value ->> 11, value ->> 12
     FROM json_each(?) ORDER BY key`,
  ),
  // completeWithProgress for jobs with the same progress; one no longer queued or running takes the progress alone, as endOne does.
  completeManyWithProgress: db.prepare(
    `UPDATE jobs SET progress = ?, state = CASE WHEN state IN ('queued', 'running') THEN 'done' ELSE state END,
       ended_at = CASE WHEN state IN ('queued', 'running') THEN ? ELSE ended_at END
     WHERE id IN (SELECT value FROM json_each(?)) AND state IN ('queued', 'running', 'done', 'dead')`,
  ),
  // `outstanding` for several messages at once, and only the effects (what an overlay is laid from). CROSS JOIN: each
  // message looked up in jobs_change_message, not every change of the account scanned.
  outstandingEffects: db.prepare(
    `SELECT json_extract(j.payload, '$.messageId') AS message_id, json_extract(j.payload, '$.effect') AS effect
     FROM json_each(?) m CROSS JOIN jobs j
     WHERE j.account_id = ? AND json_extract(j.payload, '$.messageId') = m.value AND j.type = 'mailbox-change' AND j.state IN ('queued', 'running')
     ORDER BY j.id`,
  ),
  targetBinding: db.prepare(
    `SELECT id FROM folder_bindings WHERE account_id = ? AND remote_path = ? AND retired_at IS NULL AND unresolved_since IS NULL AND mirrored = 1`,
  ),
  relocate: db.prepare(
    `UPDATE messages SET binding_id = ?, uidvalidity = ?, uid = ?, updated_at = ? WHERE id = ? AND state <> 'tombstoned'
       AND NOT EXISTS (SELECT 1 FROM messages o WHERE o.binding_id = ? AND o.uidvalidity = ? AND o.uid = ?)`,
  ),
  copyMessage: db.prepare(
    `INSERT INTO messages (account_id, binding_id, uidvalidity, uid, state, internal_date, size, flags, keywords, modseq,
       header_message_id, in_reply_to, references_json, thread_id, from_json, to_json, cc_json, subject, sent_at,
       has_attachments, attachments_json, parse_version, derived_at, stored_at, updated_at)
     SELECT account_id, ?, ?, ?, state, internal_date, size, flags, keywords, NULL,
       header_message_id, in_reply_to, references_json, thread_id, from_json, to_json, cc_json, subject, sent_at,
       has_attachments, attachments_json, parse_version, derived_at, ?, ?
     FROM messages WHERE id = ? AND state <> 'tombstoned'
     ON CONFLICT (binding_id, uidvalidity, uid) DO NOTHING`,
  ),
  copyRaw: db.prepare('INSERT INTO message_raw (message_id, mime, sha256, stored_at) SELECT ?, mime, sha256, ? FROM message_raw WHERE message_id = ?'),
  copyDocument: db.prepare(
    `INSERT INTO search_documents (message_id, subject, from_text, recipients_text, body_text, attachment_names)
     SELECT ?, subject, from_text, recipients_text, body_text, attachment_names FROM search_documents WHERE message_id = ?`,
  ),
  copyPassages: db.prepare(
    'INSERT INTO passages (message_id, ordinal, text, parse_version) SELECT ?, ordinal, text, parse_version FROM passages WHERE message_id = ?',
  ),
}));

/** A fingerprint of what a request asked, to tell "the same again" from "something else under the same identifier". */
function fingerprintOf(messageId: number, changes: readonly ChangeAsk[]): string {
  return JSON.stringify([messageId, changes]);
}

/** Records the changes asked of one message, in one transaction (see the module comment). */
export function recordChanges(db: Database, input: RecordInput): RecordResult {
  return db.transaction(() => recordOne(db, input, new Set())).immediate();
}

/**
 * Several messages' asks in one transaction, each exactly as `recordChanges`
 * records it (its own request identifier, jobs and overlay), in order: a
 * rule's conclusions for a segment of arriving mail cost one commit, not
 * one per message (docs/rules-and-spam.md).
 */
export function recordChangesMany(db: Database, inputs: readonly RecordInput[]): RecordResult[] {
  return db
    .transaction(() => {
      const laidHere = new Set<number>();
      return inputs.map((input) => recordOne(db, input, laidHere));
    })
    .immediate();
}

/** `laidHere`: messages whose overlay this transaction laid over the server's state it read (nothing writes that state meanwhile). */
function recordOne(db: Database, input: RecordInput, laidHere: Set<number>): RecordResult {
  const s = statements(db);
  const fingerprint = fingerprintOf(input.messageId, input.changes);
  if (input.requestId !== null) {
    const earlier = one<{ account_id: string; fingerprint: string; job_ids: string }>(s.request, [input.requester, input.requestId]);
    if (earlier !== undefined) {
      if (earlier.account_id !== input.accountId || earlier.fingerprint !== fingerprint) return { outcome: 'request-conflict' };
      return { outcome: 'recorded', changes: views(db, JSON.parse(earlier.job_ids) as number[]), repeated: true };
    }
  }
  const message = one<MessageRow>(s.message, [input.messageId, input.accountId]);
  if (message === undefined || message.remote_path === null) return { outcome: 'not-found' };
  const base: FlagState = { flags: JSON.parse(message.flags) as string[], keywords: JSON.parse(message.keywords) as string[] };
  // The overlay (outstanding changes laid over the server's state), then each change of this request in order.
  let shown: FlagState = {
    flags: message.requested_flags === null ? base.flags : (JSON.parse(message.requested_flags) as string[]),
    keywords: message.requested_keywords === null ? base.keywords : (JSON.parse(message.requested_keywords) as string[]),
  };
  const jobIds = input.changes.map((effect) => {
    const seen = shown;
    shown = applyEffect(shown, effect);
    const payload: ChangePayload = {
      effect,
      messageId: message.id,
      bindingId: message.binding_id,
      uidValidity: message.uidvalidity,
      uid: message.uid,
      sourcePath: message.remote_path!,
      baseModseq: message.modseq,
      base,
      shown: seen,
      requester: input.requester,
      requestedAt: input.now,
    };
    const enqueue: Enqueue = {
      type: CHANGE_JOB_TYPE,
      accountId: input.accountId,
      idempotencyKey: `${CHANGE_JOB_TYPE}:${randomUUID()}`,
      payload,
      now: input.now,
    };
    return enqueueNewJob(db, enqueue) ?? enqueueJob(db, enqueue).job.id;
  });
  if (input.requestId !== null) run(s.insertRequest, [input.requester, input.requestId, input.accountId, fingerprint, JSON.stringify(jobIds), input.now]);
  // The overlay is the outstanding changes laid over the server's state. With none outstanding before (no overlay), or
  // one this transaction laid, it is so already: this request's changes go over it (`shown`), without reading back what
  // was just written. Otherwise a run may have rewritten the server's flags since it was laid: laid again from all that is
  // outstanding, over the row this transaction just read (nothing here writes it).
  const fresh = (message.requested_flags === null && message.requested_keywords === null) || laidHere.has(message.id);
  if (!fresh) layOverlay(db, input.accountId, message.id, base);
  else if (input.changes.some((effect) => FLAG_KINDS.includes(effect.kind))) run(s.overlay, [flagSet(shown.flags), flagSet(shown.keywords), message.id]);
  laidHere.add(message.id);
  // Just recorded, so each is queued and unattempted: pending, no outcome (what `views` would read back).
  const changes = jobIds.map((id, i): ChangeView => {
    const effect = input.changes[i]!;
    return { changeId: jobIdOf(id), change: effect.kind, state: 'pending', effect, outcome: null };
  });
  return { outcome: 'recorded', changes, repeated: false };
}

/** The tool's view of the given changes, in id order. */
export function views(db: Database, jobIds: readonly number[]): ChangeView[] {
  const rows = many<{ id: number; state: Job['state']; attempt_count: number; payload: string; progress: string | null }>(statements(db).views, [
    JSON.stringify(jobIds),
  ]);
  return rows.map((row) => {
    const payload = JSON.parse(row.payload) as ChangePayload;
    const progress = row.progress === null ? null : (JSON.parse(row.progress) as { outcome?: ChangeOutcome });
    return {
      changeId: jobIdOf(row.id),
      change: payload.effect.kind,
      state: stateOf(row.state, row.attempt_count),
      effect: payload.effect,
      outcome: progress?.outcome ?? null,
    };
  });
}

function stateOf(state: Job['state'], attempts: number): ChangeState {
  if (state === 'done') return 'completed';
  if (state === 'dead' || state === 'dropped') return 'dead-lettered';
  return state === 'running' || attempts > 0 ? 'converging' : 'pending';
}

/** The oldest change of the account not yet ended (queued or running), or null: a message change or a placement. */
export function headChange(db: Database, accountId: string): JournalEntry | null {
  const row = one<{ id: number }>(statements(db).head, [accountId]);
  if (row === undefined) return null;
  return changeById(db, row.id);
}

export function changeById(db: Database, jobId: number): JournalEntry | null {
  const job = jobById(db, jobId);
  return job === null || job.type !== CHANGE_JOB_TYPE ? null : ({ job, payload: job.payload } as JournalEntry);
}

/** Changes a batch may carry: one STORE means the same for every message, whatever else each holds. */
const BATCHABLE: ReadonlySet<ChangeKind> = new Set(['set-seen', 'set-flagged', 'add-keywords']);
/** Outstanding changes looked at past the head for one batch. */
const BATCH_SCAN = 1_000;

/**
 * The head change and the outstanding changes after it that can go to the
 * server with it as one `UID STORE` over a UID set (docs/sync.md "Changes
 * in batches"): the same effect in the same folder (same UIDVALIDITY), not
 * yet attempted and due, each of another message, and none of a message
 * that a change left out in between concerns (the order of two changes
 * of one message is kept). A placement in between ends the scan. The head
 * alone when it cannot be batched.
 */
export function flagBatch(db: Database, head: Change, now: number, limit: number): Change[] {
  const p = head.payload;
  if (!BATCHABLE.has(p.effect.kind) || head.job.attemptCount !== 0 || limit <= 1) return [head];
  const effect = JSON.stringify(p.effect);
  const batch: Change[] = [head];
  const members = new Set([p.messageId]);
  const passedOver = new Set<number>();
  // Whole jobs, each payload parsed once: a member needs no second read.
  const jobs = many<Record<string, unknown>>(statements(db).following, [head.job.accountId, head.job.id, BATCH_SCAN]).map(jobFromRow);
  for (const job of jobs) {
    const payload = job.payload as ChangePayload | PlacementPayload;
    if (!('messageId' in payload)) break;
    const fits =
      job.state === 'queued' &&
      job.attemptCount === 0 &&
      job.dueAt <= now &&
      payload.sourcePath === p.sourcePath &&
      payload.uidValidity === p.uidValidity &&
      !members.has(payload.messageId) &&
      !passedOver.has(payload.messageId) &&
      JSON.stringify(payload.effect) === effect;
    if (!fits) {
      passedOver.add(payload.messageId);
      continue;
    }
    batch.push({ job, payload });
    members.add(payload.messageId);
    if (batch.length >= limit) break;
  }
  return batch;
}

/** Progress durable before a command whose effect must be found again after a crash (the target's UIDNEXT before COPY or MOVE). */
export function recordChangeProgress(db: Database, jobId: number, progress: Readonly<Record<string, unknown>>): void {
  run(statements(db).progress, [JSON.stringify(progress), jobId]);
}

/**
 * Progress laid over what the job holds (a JSON merge patch: a member set to
 * null is removed), read afresh from the row: what an attempt made durable
 * before its command (a placement's mark) stays beside the outcome.
 */
export function mergeChangeProgress(db: Database, jobId: number, progress: Readonly<Record<string, unknown>>): void {
  run(statements(db).mergeProgress, [JSON.stringify(progress), jobId]);
}

/** What the server holds now, when the applying session read it. */
export type ServerState = FlagState & { modseq: string | null };

export type ChangeEnd = {
  outcome: Exclude<ChangeOutcome, 'refused' | 'failed'>;
  /** The message's flags as the server answered them (flag kinds), written as the server's truth. */
  server?: ServerState | null;
  /** Where the message went (relocate, copy) when the server reported it. */
  target?: { path: string; uidValidity: number; uid: number } | null;
  now: number;
};

/**
 * The change ended with the server's answer: the local copy follows it (the
 * server's flags written; a relocation moves the local row to the target
 * folder's binding, or out of the mirror; a copy is stored under the target
 * binding without a refetch; a deletion tombstones), the job is done, the
 * overlay is laid again, and one audit entry is written. One transaction.
 */
export function endChange(db: Database, change: Change, end: ChangeEnd): { targetMessageId: number | null } {
  return db.transaction(() => endOne(db, change, end)).immediate();
}

/**
 * The changes of one batch ended together, in one transaction: each as
 * `endChange` ends it (its own outcome, overlay and audit entry), so a kill
 * leaves either all of them ended or none, and none half.
 */
export function endChanges(db: Database, ended: ReadonlyArray<{ change: Change; end: ChangeEnd }>): void {
  if (ended.length === 0) return;
  // A batch (flag changes, each of another message) ends in a few statements; anything else one change at a time.
  const messages = new Set(ended.map((e) => e.change.payload.messageId));
  const batch = messages.size === ended.length && ended.every((e) => FLAG_KINDS.includes(e.change.payload.effect.kind));
  db.transaction(() => {
    if (batch) endBatch(db, ended, [...messages]);
    else for (const e of ended) endOne(db, e.change, e.end);
  }).immediate();
}

/**
 * What endOne does for each change, for flag changes of distinct messages: the jobs ended in one statement per outcome,
 * what is still outstanding for all the messages read in one, each message row written once, the audit entries in one
 * insert, in order. Ending one message's change leaves the others' outstanding changes as they are, so laying each
 * overlay after all the jobs ended is laying it after its own.
 */
function endBatch(db: Database, ended: ReadonlyArray<{ change: Change; end: ChangeEnd }>, messageIds: readonly number[]): void {
  const s = statements(db);
  const endings = new Map<string, { progress: string; now: number; ids: number[] }>();
  for (const { change, end } of ended) {
    if (end.outcome === 'gone') tombstoneMessage(db, change.payload.messageId, 'expunged', end.now);
    const progress = JSON.stringify({ outcome: end.outcome, ...(end.target ? { targetUid: end.target.uid } : {}) });
    const key = `${progress} ${end.now}`;
    const group = endings.get(key) ?? { progress, now: end.now, ids: [] };
    group.ids.push(change.job.id);
    endings.set(key, group);
  }
  for (const g of endings.values()) run(s.completeManyWithProgress, [g.progress, g.now, JSON.stringify(g.ids)]);
  const outstanding = new Map<number, ChangeEffect[]>();
  const accountId = ended[0]!.change.job.accountId!;
  for (const row of many<{ message_id: number; effect: string }>(s.outstandingEffects, [JSON.stringify(messageIds), accountId])) {
    const effect = JSON.parse(row.effect) as ChangeEffect;
    if (!FLAG_KINDS.includes(effect.kind)) continue;
    const list = outstanding.get(row.message_id);
    if (list === undefined) outstanding.set(row.message_id, [effect]);
    else list.push(effect);
  }
  const audits: AuditRow[] = [];
  for (const { change, end } of ended) {
    const p = change.payload;
    const written = end.server ? writeServerFlags(db, change, end.server, end.now, outstanding.get(p.messageId) ?? []) : false;
    if (!written) layOverlay(db, change.job.accountId!, p.messageId);
    audits.push(auditRow(change, { outcome: end.outcome, targetUid: end.target?.uid ?? null, now: end.now }));
  }
  run(s.audits, [JSON.stringify(audits)]);
}

function endOne(db: Database, change: Change, end: ChangeEnd): { targetMessageId: number | null } {
  const s = statements(db);
  const p = change.payload;
  let targetMessageId: number | null = null;
  if (end.outcome === 'applied') targetMessageId = followLocally(db, change, end);
  else if (end.outcome === 'gone') tombstoneMessage(db, p.messageId, 'expunged', end.now);
  // One write of the job: its outcome and its ending (a job no longer queued or running keeps its state, as completeJob does).
  const progress = JSON.stringify({ outcome: end.outcome, ...(end.target ? { targetUid: end.target.uid } : {}) });
  if (run(s.completeWithProgress, [progress, end.now, change.job.id]).changes === 0) run(s.progress, [progress, change.job.id]);
  // One write of the message row: the server's flags and the overlay laid again over them, now that this change is no
  // longer outstanding. A row that moved or went meanwhile is not the server's answer's to write; its overlay is laid alone.
  const written = end.server && FLAG_KINDS.includes(p.effect.kind) ? writeServerFlags(db, change, end.server, end.now) : false;
  if (!written) layOverlay(db, change.job.accountId!, p.messageId);
  audit(db, change, { outcome: end.outcome, targetUid: end.target?.uid ?? null, now: end.now });
  return { targetMessageId };
}

/** The server's flags written as its truth with the overlay of what is still outstanding over them; false when the row is not where the change found it. */
function writeServerFlags(
  db: Database,
  change: Change,
  server: ServerState,
  now: number,
  flagChanges: readonly ChangeEffect[] = outstandingFlagChanges(db, change.job.accountId!, change.payload.messageId),
): boolean {
  const p = change.payload;
  const overlay = flagChanges.length === 0 ? null : laid(server, flagChanges);
  const flags = flagSet(server.flags);
  const keywords = flagSet(server.keywords);
  const args = [flags, keywords, server.modseq, server.modseq, now];
  const where = [p.messageId, p.bindingId, p.uidValidity, p.uid];
  if (overlay === null) return run(statements(db).serverFlagsAndOverlay, [...args, null, null, ...where]).changes === 1;
  return run(statements(db).serverFlagsAndOverlay, [...args, flagSet(overlay.flags), flagSet(overlay.keywords), ...where]).changes === 1;
}

/**
 * The change will never apply by itself: dead-lettered (refused by the
 * server, or failing too often), overlay lifted, audited. A copy's or
 * move's placement (the target's UIDNEXT made durable before the command)
 * stays in the progress, so an operator's retry still finds a copy an
 * earlier attempt made instead of making another.
 */
export function deadLetterChange(db: Database, change: Change, f: { outcome: 'refused' | 'failed'; attempts: number; failure: JobFailure; now: number }): void {
  const apply = db.transaction(() => {
    mergeChangeProgress(db, change.job.id, { outcome: f.outcome });
    deadLetterJob(db, change.job.id, { attempts: f.attempts, failure: f.failure, now: f.now });
    layOverlay(db, change.job.accountId!, change.payload.messageId);
    audit(db, change, { outcome: f.outcome, targetUid: null, now: f.now });
  });
  apply.immediate();
}

/** After an operator's retry or drop: the overlay follows what is outstanding again. */
export function relayOverlay(db: Database, accountId: string, messageId: number): void {
  layOverlay(db, accountId, messageId);
}

function followLocally(db: Database, change: Change, end: ChangeEnd): number | null {
  const s = statements(db);
  const p = change.payload;
  const effect = p.effect;
  if (effect.kind === 'delete') {
    tombstoneMessage(db, p.messageId, 'deleted', end.now);
    return null;
  }
  if (effect.kind !== 'relocate' && effect.kind !== 'copy') return null;
  const target = end.target ?? null;
  const binding = one<{ id: number }>(s.targetBinding, [change.job.accountId, effect.targetPath]);
  if (effect.kind === 'relocate') {
    // The local id follows the message (storedEmailId stays valid) when the target is mirrored and its UID known.
    const moved =
      binding !== undefined &&
      target !== null &&
      run(s.relocate, [binding.id, target.uidValidity, target.uid, end.now, p.messageId, binding.id, target.uidValidity, target.uid]).changes === 1;
    if (moved) moveMessageVectors(db, p.messageId, binding.id);
    else tombstoneMessage(db, p.messageId, 'relocated' satisfies TombstoneReason, end.now);
    return moved ? p.messageId : null;
  }
  if (binding === undefined || target === null) return null;
  const inserted = run(s.copyMessage, [binding.id, target.uidValidity, target.uid, end.now, end.now, p.messageId]);
  if (inserted.changes !== 1) return null;
  const copyId = Number(inserted.lastInsertRowid);
  run(s.copyRaw, [copyId, end.now, p.messageId]);
  run(s.copyDocument, [copyId, p.messageId]);
  run(s.copyPassages, [copyId, p.messageId]);
  return copyId;
}

/**
 * Requested flags = the outstanding changes laid, in order, over the server's state; NULL when none is outstanding.
 * `server`: the row's flags when the caller read them in this transaction; read here otherwise.
 */
function layOverlay(db: Database, accountId: string, messageId: number, server?: FlagState): void {
  const s = statements(db);
  const flagChanges = outstandingFlagChanges(db, accountId, messageId);
  if (flagChanges.length === 0) {
    run(s.overlay, [null, null, messageId]);
    return;
  }
  const base = server ?? serverStateOf(db, messageId);
  if (base === null) return;
  const state = laid(base, flagChanges);
  run(s.overlay, [flagSet(state.flags), flagSet(state.keywords), messageId]);
}

function serverStateOf(db: Database, messageId: number): FlagState | null {
  const row = one<{ flags: string; keywords: string }>(statements(db).serverState, [messageId]);
  return row === undefined ? null : { flags: JSON.parse(row.flags) as string[], keywords: JSON.parse(row.keywords) as string[] };
}

/** The message's flag changes still outstanding (queued or running), in the order recorded. */
function outstandingFlagChanges(db: Database, accountId: string, messageId: number): ChangeEffect[] {
  const outstanding = many<{ payload: string }>(statements(db).outstanding, [accountId, messageId]).map((r) => (JSON.parse(r.payload) as ChangePayload).effect);
  return outstanding.filter((e) => FLAG_KINDS.includes(e.kind));
}

function laid(server: FlagState, changes: readonly ChangeEffect[]): FlagState {
  let state = server;
  for (const effect of changes) state = applyEffect(state, effect);
  return state;
}

type AuditRow = [string | null, string, number, string, string | null, number, number, number | null, string | null, string, number, number, ChangeOutcome];

function audit(db: Database, change: Change, e: { outcome: ChangeOutcome; targetUid: number | null; now: number }): void {
  run(statements(db).audit, auditRow(change, e));
}

/** The audit entry's columns, in the statements' order. */
function auditRow(change: Change, e: { outcome: ChangeOutcome; targetUid: number | null; now: number }): AuditRow {
  const p = change.payload;
  const effect = p.effect;
  // What was asked (a flag value, the keyword set), never mail content.
  const detail = 'value' in effect ? { value: effect.value } : 'keywords' in effect ? { keywords: effect.keywords } : null;
  const targetPath = 'targetPath' in effect ? effect.targetPath : null;
  return [
    change.job.accountId,
    effect.kind,
    p.messageId,
    p.sourcePath,
    targetPath,
    p.uidValidity,
    p.uid,
    e.targetUid,
    detail === null ? null : JSON.stringify(detail),
    p.requester,
    p.requestedAt,
    e.now,
    e.outcome,
  ];
}
