/**
 * The filters `list_emails` and `search_emails` share, as SQL over
 * `messages m`, and their canonical form (what a cursor is bound to).
 *
 * Semantics (docs/mcp-read-tools.md):
 * - `senderAddress` / `recipientAddress`: an address matches one From (or
 *   To/Cc) address exactly; `@domain` matches every address at that domain
 *   (not its subdomains). Case-insensitive.
 * - `subjectFragment`: the subject contains the text. Case-insensitive for
 *   ASCII letters only (SQLite's lower(); libsql 0.5 cannot register a
 *   Unicode-aware function).
 * - `receivedOnOrAfter` / `receivedBefore`: half-open range over the server's
 *   internal date; mail without one is outside every range.
 * - `isSeen` / `isFlagged` / `keyword`: the stored flag set has (or lacks)
 *   `\Seen` / `\Flagged` / the keyword (keywords compared ASCII
 *   case-insensitively, as IMAP atoms).
 * - `hasAttachments`: true needs a non-inline attachment; false needs a parsed
 *   message without one (oversized and unreadable mail is known neither way,
 *   so either value leaves it out).
 *
 * Pure. Importable by modules of `actors/mail-query/` only.
 */
import { createHash } from 'node:crypto';
import type { SqlValue } from '../../runtime/store/rows.ts';
import type { ListEmailsInput } from './protocol/mail-reads.ts';
import { effectiveFlags, effectiveKeywords } from './summary.ts';

export type Filters = Pick<
  ListEmailsInput,
  | 'accounts'
  | 'folders'
  | 'senderAddress'
  | 'recipientAddress'
  | 'subjectFragment'
  | 'receivedOnOrAfter'
  | 'receivedBefore'
  | 'isSeen'
  | 'isFlagged'
  | 'keyword'
  | 'hasAttachments'
>;

export type Clauses = { sql: string[]; params: SqlValue[] };

/** Lowercases ASCII letters only, as SQLite's lower() does, so both sides fold alike. */
export function asciiLower(value: string): string {
  return value.replace(/[A-Z]/g, (c) => c.toLowerCase());
}

export function filterClauses(f: Filters): Clauses {
  const sql: string[] = [];
  const params: SqlValue[] = [];
  if (f.senderAddress !== undefined) {
    const match = addressMatch(f.senderAddress);
    sql.push(`EXISTS (SELECT 1 FROM json_each(m.from_json) WHERE ${match.sql})`);
    params.push(...match.params);
  }
  if (f.recipientAddress !== undefined) {
    const match = addressMatch(f.recipientAddress);
    sql.push(`(EXISTS (SELECT 1 FROM json_each(m.to_json) WHERE ${match.sql}) OR EXISTS (SELECT 1 FROM json_each(m.cc_json) WHERE ${match.sql}))`);
    params.push(...match.params, ...match.params);
  }
  if (f.subjectFragment !== undefined) {
    sql.push('instr(lower(m.subject), ?) > 0');
    params.push(asciiLower(f.subjectFragment));
  }
  if (f.receivedOnOrAfter !== undefined) {
    sql.push('m.internal_date >= ?');
    params.push(Date.parse(f.receivedOnOrAfter));
  }
  if (f.receivedBefore !== undefined) {
    sql.push('m.internal_date < ?');
    params.push(Date.parse(f.receivedBefore));
  }
  // Flag sets are stored as sorted JSON arrays of atoms, which never hold a
  // quote: the quoted JSON spelling of a flag is found only as that element.
  // Read as the agent sees them: requested by changes not yet confirmed, else the server's.
  if (f.isSeen !== undefined) sql.push(`instr(${effectiveFlags}, '${JSON.stringify('\\Seen')}') ${f.isSeen ? '>' : '='} 0`);
  if (f.isFlagged !== undefined) sql.push(`instr(${effectiveFlags}, '${JSON.stringify('\\Flagged')}') ${f.isFlagged ? '>' : '='} 0`);
  if (f.keyword !== undefined) {
    sql.push(`instr(lower(${effectiveKeywords}), ?) > 0`);
    params.push(JSON.stringify(asciiLower(f.keyword)));
  }
  if (f.hasAttachments !== undefined) sql.push(`m.has_attachments = ${f.hasAttachments ? 1 : 0}`);
  return { sql, params };
}

function addressMatch(value: string): { sql: string; params: SqlValue[] } {
  const needle = asciiLower(value);
  const address = "lower(json_extract(value, '$.address'))";
  if (needle.startsWith('@')) return { sql: `substr(${address}, -?) = ?`, params: [[...needle].length, needle] };
  return { sql: `${address} = ?`, params: [needle] };
}

/**
 * A short digest of the filters in canonical form (folded as they match,
 * lists as sets, instants as epoch ms), plus whatever else the caller adds
 * (the direction): two inputs that select the same mail in the same order
 * have the same fingerprint.
 */
export function fingerprint(f: Filters, extra: Record<string, string>): string {
  const set = (values: readonly string[] | undefined) => (values === undefined ? null : [...new Set(values)].sort());
  const canonical: unknown[] = [
    set(f.accounts),
    set(f.folders),
    f.senderAddress === undefined ? null : asciiLower(f.senderAddress),
    f.recipientAddress === undefined ? null : asciiLower(f.recipientAddress),
    f.subjectFragment === undefined ? null : asciiLower(f.subjectFragment),
    f.receivedOnOrAfter === undefined ? null : Date.parse(f.receivedOnOrAfter),
    f.receivedBefore === undefined ? null : Date.parse(f.receivedBefore),
    f.isSeen ?? null,
    f.isFlagged ?? null,
    f.keyword === undefined ? null : asciiLower(f.keyword),
    f.hasAttachments ?? null,
    Object.entries(extra).sort(),
  ];
  return createHash('sha256').update(JSON.stringify(canonical)).digest().subarray(0, 9).toString('base64url');
}
