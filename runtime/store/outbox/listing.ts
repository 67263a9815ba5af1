/**
 * What the administrative surface reads of the outbox (docs/admin-api.md
 * "Outbox"): one count per stage, a keyset page of
 * sends newest first, and one send with its recipients. Reads only, on the
 * query pool's connection; the writer is the outbox actor (outgoing.ts).
 *
 * Only sends of the accounts the caller names (the configured ones) are
 * counted, listed or found: a send of an account taken out of the
 * configuration reads as unknown, since no actor here could carry it.
 *
 * Privacy: the listing and the summary read no recipient, and nothing here
 * reads `raw_mime` (every statement names its columns), so neither a
 * subject nor a body is ever loaded on this surface. Recipients are read by
 * `outgoingDetail` only, which the route publishing
 * `service.admin.audit.read` serves.
 *
 * Importable by the query pool (actors/mail-query/) and tests.
 */
import type { Database } from '../open.ts';
import { many, one } from '../rows.ts';
import { perConnection } from '../mailbox/prepared.ts';
import type { RecipientHeader, RecipientState } from './outgoing.ts';
import { OUTBOX_PAGE_DEFAULT, OUTBOX_PAGE_MAX, STAGES, type Stage } from './vocabulary.ts';

export { OUTBOX_PAGE_DEFAULT, OUTBOX_PAGE_MAX };

/** One send as the listing shows it: no recipient, no subject. */
export type OutboxRow = {
  id: number;
  recordedAt: number;
  accountId: string;
  stage: Stage;
  attemptCount: number;
  /** What ended the last attempt short of done: an internal code and the server's reply code; null: nothing failed. */
  lastFailure: { code: string; replyCode: number | null } | null;
  /** When the next attempt falls due: only while Recorded, else null. */
  dueAt: number | null;
};

export type OutgoingRecipient = {
  address: string;
  header: RecipientHeader;
  state: RecipientState;
  replyCode: number | null;
  repliedAt: number | null;
};

export type OutgoingDetail = OutboxRow & { recipients: OutgoingRecipient[] };

export type OutboxPageQuery = {
  /** Accounts whose sends may be shown: the configured ones. */
  accounts: readonly string[];
  account?: string | null | undefined;
  stage?: Stage | null | undefined;
  /** The id of the previous page's last send; the page starts below it. */
  after?: number | null | undefined;
  /** 1 to OUTBOX_PAGE_MAX; OUTBOX_PAGE_DEFAULT when absent. */
  pageSize?: number | undefined;
};

/** A page, and the position the next one starts after (null: nothing follows). */
export type OutboxPage = { rows: OutboxRow[]; next: number | null };

type Row = {
  id: number;
  recorded_at: number;
  account_id: string;
  stage: Stage;
  attempt_count: number;
  failure_code: string | null;
  failure_reply_code: number | null;
  due_at: number;
};
type RecipientRow = { address: string; header: RecipientHeader; state: RecipientState; reply_code: number | null; replied_at: number | null };

// Named columns only: never raw_mime, never the requester or the Message-ID.
const columns = 'id, recorded_at, account_id, stage, attempt_count, failure_code, failure_reply_code, due_at';
const CONFIGURED = 'account_id IN (SELECT value FROM json_each(:accounts))';

const statements = perConnection((db: Database) => ({
  summary: db.prepare(`SELECT stage, count(*) AS n FROM outgoing_emails WHERE ${CONFIGURED} GROUP BY stage`),
  // Newest first by id (a total order); `after` is the id of the previous page's last row.
  page: db.prepare(
    `SELECT ${columns} FROM outgoing_emails
     WHERE ${CONFIGURED} AND (:account IS NULL OR account_id = :account) AND (:stage IS NULL OR stage = :stage)
       AND (:after IS NULL OR id < :after)
     ORDER BY id DESC LIMIT :limit`,
  ),
  byId: db.prepare(`SELECT ${columns} FROM outgoing_emails WHERE id = :id AND ${CONFIGURED}`),
  recipients: db.prepare('SELECT address, header, state, reply_code, replied_at FROM outgoing_recipients WHERE outgoing_id = ? ORDER BY position'),
}));

function rowOf(row: Row): OutboxRow {
  return {
    id: row.id,
    recordedAt: row.recorded_at,
    accountId: row.account_id,
    stage: row.stage,
    attemptCount: row.attempt_count,
    lastFailure: row.failure_code === null ? null : { code: row.failure_code, replyCode: row.failure_reply_code },
    dueAt: row.stage === 'Recorded' ? row.due_at : null,
  };
}

/** One count per stage, every stage present (zero when none stands there), over the given accounts. */
export function outboxSummary(db: Database, accounts: readonly string[]): Record<Stage, number> {
  const counts = Object.fromEntries(STAGES.map((s) => [s, 0])) as Record<Stage, number>;
  for (const { stage, n } of many<{ stage: Stage; n: number }>(statements(db).summary, { accounts: JSON.stringify(accounts) })) {
    if (Object.hasOwn(counts, stage)) counts[stage] = Number(n);
  }
  return counts;
}

/** A keyset page of sends, newest first by id, narrowed to one account and/or one stage. */
export function outboxPage(db: Database, q: OutboxPageQuery): OutboxPage {
  const pageSize = q.pageSize ?? OUTBOX_PAGE_DEFAULT;
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > OUTBOX_PAGE_MAX) throw new RangeError(`pageSize must be 1 to ${OUTBOX_PAGE_MAX}`);
  // One row past the page says whether another follows.
  const rows = many<Row>(statements(db).page, {
    accounts: JSON.stringify(q.accounts),
    account: q.account ?? null,
    stage: q.stage ?? null,
    after: q.after ?? null,
    limit: pageSize + 1,
  }).map(rowOf);
  const page = rows.slice(0, pageSize);
  return { rows: page, next: rows.length > pageSize ? page.at(-1)!.id : null };
}

/** One send of the given accounts as the listing shows it; null when there is none. */
export function outboxRow(db: Database, id: number, accounts: readonly string[]): OutboxRow | null {
  const row = one<Row>(statements(db).byId, { id, accounts: JSON.stringify(accounts) });
  return row ? rowOf(row) : null;
}

/** One send with everyone it is offered to and what the server said of each; null when there is none. */
export function outgoingDetail(db: Database, id: number, accounts: readonly string[]): OutgoingDetail | null {
  const row = outboxRow(db, id, accounts);
  if (row === null) return null;
  const recipients = many<RecipientRow>(statements(db).recipients, [id]).map((r) => ({
    address: r.address,
    header: r.header,
    state: r.state,
    replyCode: r.reply_code,
    repliedAt: r.replied_at,
  }));
  return { ...row, recipients };
}
