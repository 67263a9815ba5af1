/**
 * One page of an account's mailbox-change audit (`mutation_audit`, written
 * by the account's sync actor) on the read-only query pool, for the admin
 * route `GET /api/admin/mailbox/mutations/audit`. Newest first by `ended_at`
 * then `id` (a total order), keyset-paginated on that pair; the range
 * filters apply to `ended_at` (`endedFrom` inclusive, `endedBefore`
 * exclusive).
 *
 * A row naming a change this build does not know (a later build wrote it)
 * is left out of the page and only counted (`omittedCount`): its other
 * columns may mean something else there. The page window is `pageSize`
 * rows, so a page may carry fewer entries; `next` says whether more follow.
 *
 * The journal's placements (`append`, `remove-appended`: the outbox's sent
 * copies and drafts) are audited in the same table but are not among the
 * eight kinds the admin surface lists: this build wrote them and knows
 * them, so they are left out of the window in SQL, neither shown nor
 * counted as omitted (no warning), and pages stay full.
 *
 * Pool message `mail-query.mutation-audit` (`MutationAuditRequest` in,
 * `MutationAuditReply` out; schemas in mutation-audit-messages.ts, carried
 * by protocol.ts). Reads only; logs
 * nothing (the admin use case warns about omitted rows).
 *
 * Importable by the query pool task and tests.
 */
import { PLACEMENT_KINDS } from '../../runtime/store/mailbox/change-effect.ts';
import type { Database } from '../../runtime/store/open.ts';
import { many, type SqlValue } from '../../runtime/store/rows.ts';
import { MUTATION_KINDS, type MutationAuditEntry, type MutationAuditReply, type MutationAuditRequest, type MutationKind } from './mutation-audit-messages.ts';
import { iso, prepared } from './statements.ts';
import { encodeStoredEmailId } from './stored-email-id.ts';

type Row = {
  id: number;
  mutation: string;
  message_id: number | null;
  source_path: string | null;
  target_path: string | null;
  uidvalidity: number | null;
  source_uid: number | null;
  target_uid: number | null;
  requester: string;
  requested_at: number;
  ended_at: number;
  outcome: string;
};

const known = new Set<string>(MUTATION_KINDS);

export function mutationAuditPage(db: Database, msg: MutationAuditRequest): MutationAuditReply {
  const where: string[] = [];
  const params: SqlValue[] = [];
  const and = (clause: string, ...values: SqlValue[]): void => {
    where.push(clause);
    params.push(...values);
  };
  and('account_id = ?', msg.account);
  if (msg.mutation !== undefined) and('mutation = ?', msg.mutation);
  else and('mutation NOT IN (SELECT value FROM json_each(?))', JSON.stringify(PLACEMENT_KINDS));
  if (msg.endedFrom !== undefined) and('ended_at >= ?', msg.endedFrom);
  if (msg.endedBefore !== undefined) and('ended_at < ?', msg.endedBefore);
  if (msg.after !== undefined) and('(ended_at, id) < (?, ?)', msg.after[0], msg.after[1]);
  const sql = `SELECT id, mutation, message_id, source_path, target_path, uidvalidity, source_uid, target_uid, requester, requested_at, ended_at, outcome
    FROM mutation_audit WHERE ${where.join(' AND ')} ORDER BY ended_at DESC, id DESC LIMIT ?`;
  // One row past the window says whether another page follows.
  const rows = many<Row>(prepared(db, sql), [...params, msg.pageSize + 1]);
  const window = rows.slice(0, msg.pageSize);
  const shown = window.filter((row) => known.has(row.mutation));
  const last = window.at(-1);
  return {
    entries: shown.map(toEntry),
    omittedCount: window.length - shown.length,
    next: rows.length > msg.pageSize && last !== undefined ? [last.ended_at, last.id] : null,
  };
}

function toEntry(row: Row): MutationAuditEntry {
  return {
    id: row.id,
    mutation: row.mutation as MutationKind,
    storedEmailId: row.message_id === null || row.message_id < 1 ? null : encodeStoredEmailId(row.message_id),
    sourceFolderPath: row.source_path,
    targetFolderPath: row.target_path,
    uidValidity: row.uidvalidity,
    sourceUid: row.source_uid,
    targetUid: row.target_uid,
    requester: row.requester,
    requestedAt: iso(row.requested_at),
    endedAt: iso(row.ended_at),
    outcome: row.outcome,
  };
}
