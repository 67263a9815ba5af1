/**
 * Drafts (migration 5): the current revision of each, held locally and
 * filed in the account's drafts folder through the change journal. Sole
 * writer: the outbox actor.
 *
 * A revision is filed by one journal append (`filed_job`); restating the
 * draft moves that job to `retired_jobs`, whose copies the outbox asks the
 * journal to remove once the new revision is placed. `state`: `held` (can
 * be restated, sent or deleted), `sent` (its message was recorded as a
 * send; the copy is removed after Sent), `deleted`.
 *
 * Importable by the outbox actor and the query pool.
 */
import type { Database } from '../open.ts';
import { many, one, run } from '../rows.ts';
import { perConnection } from '../mailbox/prepared.ts';
import type { RecipientHeader } from './outgoing.ts';

export type DraftAnswering = { storedMessageId: number; answering: 'senderOnly' | 'everyone' | 'forward' };

export type Draft = {
  id: number;
  accountId: string;
  requester: string;
  revision: number;
  answering: DraftAnswering | null;
  messageId: string;
  recipients: Array<{ address: string; header: RecipientHeader }>;
  state: 'held' | 'sent' | 'deleted';
  filedJob: number | null;
  retiredJobs: number[];
};

type Row = {
  id: number;
  account_id: string;
  requester: string;
  revision: number;
  answering: string | null;
  message_id: string;
  recipients: string;
  state: Draft['state'];
  filed_job: number | null;
  retired_jobs: string;
};

const columns = 'id, account_id, requester, revision, answering, message_id, recipients, state, filed_job, retired_jobs';

const draftOf = (r: Row): Draft => ({
  id: r.id,
  accountId: r.account_id,
  requester: r.requester,
  revision: r.revision,
  answering: r.answering === null ? null : (JSON.parse(r.answering) as DraftAnswering),
  messageId: r.message_id,
  recipients: JSON.parse(r.recipients) as Draft['recipients'],
  state: r.state,
  filedJob: r.filed_job,
  retiredJobs: JSON.parse(r.retired_jobs) as number[],
});

/** A draft's identity on the tools' surface (vocabulary.ts). */
export { draftIdOf, draftRowOf } from './vocabulary.ts';

const statements = perConnection((db: Database) => ({
  byId: db.prepare(`SELECT ${columns} FROM drafts WHERE id = ?`),
  raw: db.prepare('SELECT raw_mime FROM drafts WHERE id = ?'),
  insert: db.prepare(
    `INSERT INTO drafts (account_id, requester, answering, message_id, raw_mime, recipients, state, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 'held', ?, ?)`,
  ),
  restate: db.prepare(
    `UPDATE drafts SET revision = revision + 1, answering = ?, message_id = ?, raw_mime = ?, recipients = ?, updated_at = ?,
       retired_jobs = CASE WHEN filed_job IS NULL THEN retired_jobs ELSE json_insert(retired_jobs, '$[#]', filed_job) END, filed_job = NULL
     WHERE id = ? AND state = 'held'`,
  ),
  // The append stands for the revision still held (or sent, whose copy is retired once its send is Sent);
  // recorded for a revision restated or deleted meanwhile, its copy is owed a removal instead.
  filed: db.prepare(
    `UPDATE drafts SET
       filed_job = CASE WHEN revision = ?1 AND state <> 'deleted' THEN ?2 ELSE filed_job END,
       retired_jobs = CASE WHEN revision = ?1 AND state <> 'deleted' THEN retired_jobs ELSE json_insert(retired_jobs, '$[#]', ?2) END
     WHERE id = ?3 AND (revision <> ?1 OR state = 'deleted' OR filed_job IS NULL)
       AND ?2 IS NOT filed_job AND NOT EXISTS (SELECT 1 FROM json_each(retired_jobs) WHERE value = ?2)`,
  ),
  end: db.prepare(
    `UPDATE drafts SET state = ?, updated_at = ?,
       retired_jobs = CASE WHEN ? = 'deleted' AND filed_job IS NOT NULL THEN json_insert(retired_jobs, '$[#]', filed_job) ELSE retired_jobs END,
       filed_job = CASE WHEN ? = 'deleted' THEN NULL ELSE filed_job END
     WHERE id = ? AND state = 'held'`,
  ),
  retire: db.prepare(`UPDATE drafts SET retired_jobs = json_insert(retired_jobs, '$[#]', filed_job), filed_job = NULL WHERE id = ? AND filed_job IS NOT NULL`),
  unfiled: db.prepare(`SELECT ${columns} FROM drafts WHERE filed_job IS NULL AND state = 'held' ORDER BY id LIMIT ?`),
  withRetired: db.prepare(`SELECT ${columns} FROM drafts WHERE retired_jobs <> '[]' ORDER BY id LIMIT ?`),
  setRetired: db.prepare('UPDATE drafts SET retired_jobs = ? WHERE id = ?'),
}));

export function draftById(db: Database, id: number): Draft | null {
  const row = one<Row>(statements(db).byId, [id]);
  return row ? draftOf(row) : null;
}

export function draftRaw(db: Database, id: number): Uint8Array | null {
  return one<{ raw_mime: Uint8Array }>(statements(db).raw, [id])?.raw_mime ?? null;
}

export type DraftContent = {
  answering: DraftAnswering | null;
  messageId: string;
  raw: Uint8Array;
  recipients: Draft['recipients'];
  now: number;
};

export function insertDraft(db: Database, accountId: string, requester: string, c: DraftContent): Draft {
  const { lastInsertRowid } = run(statements(db).insert, [
    accountId,
    requester,
    c.answering === null ? null : JSON.stringify(c.answering),
    c.messageId,
    c.raw,
    JSON.stringify(c.recipients),
    c.now,
    c.now,
  ]);
  return draftById(db, Number(lastInsertRowid))!;
}

/** Replace the whole draft with a new revision; false unless it is still held. */
export function restateDraft(db: Database, id: number, c: DraftContent): boolean {
  return (
    run(statements(db).restate, [c.answering === null ? null : JSON.stringify(c.answering), c.messageId, c.raw, JSON.stringify(c.recipients), c.now, id])
      .changes === 1
  );
}

/**
 * The journal recorded the append of this revision. The ask is awaited, so
 * the draft may have been restated or deleted meanwhile: that copy is then
 * retired (removed by the journal), never left in the drafts folder.
 */
export function markDraftFiled(db: Database, id: number, revision: number, job: number): void {
  run(statements(db).filed, [revision, job, id]);
}

/** `sent`: recorded as a send (its copy stays filed until the send is Sent); `deleted`: its copy is retired. False unless it was held. */
export function endDraft(db: Database, id: number, state: 'sent' | 'deleted', now: number): boolean {
  return run(statements(db).end, [state, now, state, state, id]).changes === 1;
}

/** After its send was Sent: the filed copy is retired (removed by the journal). */
export function retireFiledCopy(db: Database, id: number): void {
  run(statements(db).retire, [id]);
}

/** Drafts whose current revision the journal has not been asked to file (a crash between the two writes). */
export function unfiledDrafts(db: Database, limit: number): Draft[] {
  return many<Row>(statements(db).unfiled, [limit]).map(draftOf);
}

/** Drafts with copies to remove. */
export function draftsWithRetired(db: Database, limit: number): Draft[] {
  return many<Row>(statements(db).withRetired, [limit]).map(draftOf);
}

/** The retired jobs still to remove, after some were handed to the journal. */
export function setRetiredJobs(db: Database, id: number, jobs: readonly number[]): void {
  run(statements(db).setRetired, [JSON.stringify(jobs), id]);
}
