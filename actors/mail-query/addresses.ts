/**
 * How the address filters find their mail without reading every message
 * (actors/mail-query/filters.ts decides what matches):
 *
 * - an exact sender's mail is one range of `message_senders` (migration
 *   19), whatever its folder or state (only mail with a parsed From has
 *   rows, so tombstoned, oversized and unreadable mail never does);
 * - otherwise the full-text index narrows: the addresses are in
 *   `from_text` / `recipients_text`, so a phrase of the address's tokens
 *   there names a superset of the mail that can pass (a display name or a
 *   longer domain holding the same tokens still passes), and the exact
 *   clause of `filterClauses` decides. An address without a letter or digit
 *   has no tokens to narrow by and is left to that clause alone. Only
 *   derived stored mail has a search document, and only it has addresses.
 *
 * Importable by modules of `actors/mail-query/` only.
 */
import type { Database } from '../../runtime/store/open.ts';
import { asciiLower } from './filters.ts';
import { ftsString } from './fts-string.ts';
import type { SearchEmailsInput } from './protocol/mail-reads.ts';
import { prepared } from './statements.ts';

type AddressFilters = Pick<SearchEmailsInput, 'senderAddress' | 'recipientAddress'>;

/** Whole documents, or their subject and sender alone (the first group of the lexical ranking). */
export type SearchIndex = 'search_index' | 'search_headings';

/** The address a `senderAddress` filter names exactly, folded as the key holds it; null for none or a domain. */
export function exactSender(filter: string | undefined): string | null {
  return filter === undefined || filter.startsWith('@') ? null : asciiLower(filter);
}

/** Ids of the sender's mail, at most `atMost` + 1 (more tells the caller to go the other way), in key order. */
export function sentBy(db: Database, address: string, atMost: number): number[] {
  const rows = prepared(db, 'SELECT message_id AS id FROM message_senders WHERE address = ? LIMIT ?').all([address, atMost + 1]) as Array<{ id: number }>;
  return rows.map((r) => r.id);
}

/** The full-text expression that narrows to the address filters' mail (a superset), or null when they give no token. */
export function addressNarrowing(f: AddressFilters): string | null {
  const narrowing = (
    [
      ['from_text', f.senderAddress],
      ['recipients_text', f.recipientAddress],
    ] as const
  ).flatMap(([column, address]) => {
    // The address as one FTS5 string (fts-string.ts: control characters read as spaces); the exact clause still decides.
    const phrase = address === undefined ? null : ftsString(address);
    return phrase === null ? [] : [`${column} : ${phrase}`];
  });
  return narrowing.length === 0 ? null : narrowing.join(' AND ');
}

/**
 * The expression, narrowed inside the full-text index by the address
 * filters: FTS5 intersects posting lists instead of ranking every match of a
 * common word and then dropping those of other senders row by row.
 */
export function narrowedByAddress(expression: string, f: AddressFilters): string {
  const narrowing = addressNarrowing(f);
  return narrowing === null ? expression : `(${expression}) AND ${narrowing}`;
}

/**
 * Ids of the mail whose search document matches `expression` (an
 * `addressNarrowing`), whatever its folder, at most `atMost` + 1: a superset
 * of what passes the address clauses, so the caller checks what it keeps.
 */
export function matchingAddress(db: Database, index: SearchIndex, expression: string, atMost: number): number[] {
  const sql = `SELECT k.message_id AS id FROM ${index} CROSS JOIN search_keys k ON k.key = ${index}.rowid WHERE ${index} MATCH ? LIMIT ?`;
  return (prepared(db, sql).all([expression, atMost + 1]) as Array<{ id: number }>).map((r) => r.id);
}
