/**
 * The window of one audit page, shared by the mailbox-change audit and the
 * answering audit: one account's rows newest first by `ended_at` then `id`
 * (a total order), the range filters on `ended_at` (`endedFrom` inclusive,
 * `endedBefore` exclusive), keyset after the previous page's last pair, and
 * one row past `pageSize` to tell whether another page follows.
 *
 * Importable by the audit pages of the query pool.
 */
import type { Database } from '../../runtime/store/open.ts';
import { many, type SqlValue } from '../../runtime/store/rows.ts';
import { prepared } from './statements.ts';

export type AuditWindowRequest = {
  account: string;
  endedFrom?: number | undefined;
  endedBefore?: number | undefined;
  after?: readonly [number, number] | undefined;
  pageSize: number;
};

/** A clause of the page's own (`mutation = ?`) and its values, in addition to the window's. */
export type Narrowing = { clause: string; values: SqlValue[] };

/**
 * The rows of the page (`pageSize` at most) and the position the next page
 * starts after, or null when none follows. `select` is `SELECT <columns>
 * FROM <table>`; the table has `account_id`, `ended_at` and `id`.
 */
export function auditWindow<R extends { id: number; ended_at: number }>(
  db: Database,
  select: string,
  msg: AuditWindowRequest,
  narrowing: readonly Narrowing[] = [],
): { window: R[]; next: [number, number] | null } {
  const clauses: Narrowing[] = [{ clause: 'account_id = ?', values: [msg.account] }, ...narrowing];
  if (msg.endedFrom !== undefined) clauses.push({ clause: 'ended_at >= ?', values: [msg.endedFrom] });
  if (msg.endedBefore !== undefined) clauses.push({ clause: 'ended_at < ?', values: [msg.endedBefore] });
  if (msg.after !== undefined) clauses.push({ clause: '(ended_at, id) < (?, ?)', values: [msg.after[0], msg.after[1]] });
  const sql = `${select} WHERE ${clauses.map((c) => c.clause).join(' AND ')} ORDER BY ended_at DESC, id DESC LIMIT ?`;
  const rows = many<R>(prepared(db, sql), [...clauses.flatMap((c) => c.values), msg.pageSize + 1]);
  const window = rows.slice(0, msg.pageSize);
  const last = window.at(-1);
  return { window, next: rows.length > msg.pageSize && last !== undefined ? [last.ended_at, last.id] : null };
}
