/**
 * `list_emails`: one page of summaries in received order, keyset-paginated.
 *
 * Order: by internal date then id, newest first (descending both) or oldest
 * first (ascending both); mail without an internal date sorts as SQLite puts
 * NULL — after everything newest first, before everything oldest first.
 *
 * How it stays cheap at any depth: the index `messages_listing` is
 * (account, state, internal date DESC, id DESC). Visible states are three
 * (stored, oversized, unreadable), and one index range per (account, state)
 * is already in page order, so each range is read separately from the
 * cursor's position — a row-value range `(internal_date, id) < (?, ?)` the
 * index seeks to — for at most pageSize + 1 rows, and the streams are merged
 * here. Tombstones are a fourth state and never read. Nothing counts the
 * whole mailbox. The extra row only tells whether another page exists.
 *
 * Reads only. Importable by `task.ts`.
 */
import type { Database } from '../../runtime/store/open.ts';
import { many, type SqlValue } from '../../runtime/store/rows.ts';
import { decodeCursor, encodeCursor, type Position } from './cursor.ts';
import { filterClauses, fingerprint, type Clauses } from './filters.ts';
import { addressNarrowing, exactSender, matchingAddress, sentBy } from './addresses.ts';
import type { ListEmailsInput, ListEmailsResult } from './protocol/mail-reads.ts';
import type { QueryScope } from './protocol/query-scope.ts';
import { placeholders, prepared } from './statements.ts';
import { summaryColumns, summaryOf, type SummaryRow } from './summary.ts';
import { freshnessOf, resolveTargets, visibleBindings } from './targets.ts';

type Direction = ListEmailsInput['direction'];

const VISIBLE_STATES = ['stored', 'oversized', 'unreadable'] as const;

/**
 * When the address filters' mail is at most this many messages (an exact
 * sender's from `message_senders`, else a superset from the full-text
 * index: addresses.ts), those messages are read by id and sorted, rather
 * than walking the listing index until a page of them turns up. The walk
 * reads about pageSize × mailbox ÷ their mail rows, the ids their mail at
 * about three times the cost a row (stop 51, 50,000 messages, a page of 25:
 * a sender with none cost the walk 46 ms and the key 0.01; 672 messages
 * 2.2 against 2.6 ms; 1,506, 0.7 against 4.4; a recipient or a domain with
 * none 65 and 51 ms against 0.09 through the full-text index; a recipient
 * of 42, 2.5 against 4.0, the phrase's common tokens read). The walk's
 * worst case is the whole listing; this way's is bounded by the superset.
 * An address with more mail pays the probe before the walk: up to 1.7 ms
 * for the owner's own address (40,808 of the 50,000).
 */
const LISTED_BY_ADDRESS = 500;

export function listEmails(db: Database, scope: QueryScope, input: ListEmailsInput): ListEmailsResult {
  const issuedFor = fingerprint(input, { direction: input.direction });
  // The cursor is judged before the scope, so a stale cursor is told as such
  // even when its folder has since left the configuration.
  const after = input.cursor === undefined ? null : decodeCursor(input.cursor, issuedFor);
  const targets = resolveTargets(db, scope, input.accounts, input.folders);
  const bindings = visibleBindings(targets);
  const clauses = filterClauses(input);
  const among = fewByAddress(db, input);
  const byAccount = new Map<string, number[]>();
  for (const [id, t] of bindings) byAccount.set(t.accountId, [...(byAccount.get(t.accountId) ?? []), id]);

  const want = input.pageSize + 1;
  const rows: SummaryRow[] = [];
  for (const [accountId, bindingIds] of byAccount) {
    for (const state of VISIBLE_STATES)
      rows.push(...readRange(db, { accountId, state, bindingIds, clauses, among, after, direction: input.direction, limit: want }));
  }
  rows.sort(input.direction === 'newestFirst' ? newestFirst : (a, b) => newestFirst(b, a));
  const page = rows.slice(0, input.pageSize);
  const last = page[page.length - 1];
  return {
    emails: page.map((row) => summaryOf(row, bindings.get(row.binding_id)!.alias)),
    nextCursor: rows.length > input.pageSize && last !== undefined ? encodeCursor({ internalDate: last.internal_date, id: last.id }, issuedFor) : null,
    folderFreshness: freshnessOf(targets),
  };
}

/** The ids (JSON) of a superset of the address filters' mail when it is at most `LISTED_BY_ADDRESS` messages. */
function fewByAddress(db: Database, input: ListEmailsInput): string | undefined {
  const sender = exactSender(input.senderAddress);
  const narrowing = sender === null ? addressNarrowing(input) : null;
  const ids =
    sender !== null ? sentBy(db, sender, LISTED_BY_ADDRESS) : narrowing !== null ? matchingAddress(db, 'search_index', narrowing, LISTED_BY_ADDRESS) : null;
  return ids !== null && ids.length <= LISTED_BY_ADDRESS ? JSON.stringify(ids) : undefined;
}

export type Range = {
  accountId: string;
  state: (typeof VISIBLE_STATES)[number];
  bindingIds: number[];
  clauses: Clauses;
  /** The read starts from these message ids (JSON): a superset of what the clauses, which still decide, pass. */
  among?: string | undefined;
  after: Position | null;
  direction: Direction;
  limit: number;
};

/**
 * Up to `limit` rows of one (account, state) index range after the position,
 * in page order: the dated part and the undated part (NULL internal date) are
 * two segments of the range, read in the order the direction visits them.
 */
function readRange(db: Database, r: Range): SummaryRow[] {
  const undatedFirst = r.direction === 'oldestFirst';
  const segments: Array<'dated' | 'undated'> = undatedFirst ? ['undated', 'dated'] : ['dated', 'undated'];
  const positionSegment = r.after === null ? null : r.after.internalDate === null ? 'undated' : 'dated';
  const rows: SummaryRow[] = [];
  let started = positionSegment === null;
  for (const segment of segments) {
    const here = segment === positionSegment;
    if (!started && !here) continue; // the position lies in a later segment
    started = true;
    const left = r.limit - rows.length;
    if (left <= 0) break;
    rows.push(...readSegment(db, r, segment, here ? r.after : null, left));
  }
  return rows;
}

function readSegment(db: Database, r: Range, segment: 'dated' | 'undated', after: Position | null, limit: number): SummaryRow[] {
  const query = segmentQuery(r, segment, after, limit);
  return many<SummaryRow>(prepared(db, query.sql), query.params);
}

/** The SQL of one segment read (exported for the query-plan test). */
export function segmentQuery(
  r: Omit<Range, 'after' | 'limit'>,
  segment: 'dated' | 'undated',
  after: Position | null,
  limit: number,
): { sql: string; params: SqlValue[] } {
  const order = r.direction === 'newestFirst' ? 'DESC' : 'ASC';
  const beyond = r.direction === 'newestFirst' ? '<' : '>';
  const where = ['m.account_id = ?', 'm.state = ?', `m.binding_id IN (${placeholders(r.bindingIds.length)})`];
  const params: SqlValue[] = [r.accountId, r.state, ...r.bindingIds];
  if (r.among !== undefined) params.unshift(r.among);
  // Mirrored but not derived yet: no subject or sender to show; counted as `notYetIndexed` instead.
  if (r.state === 'stored') where.push('m.parse_version IS NOT NULL');
  if (segment === 'undated') {
    where.push('m.internal_date IS NULL');
    if (after !== null) {
      where.push(`m.id ${beyond} ?`);
      params.push(after.id);
    }
  } else {
    where.push('m.internal_date IS NOT NULL');
    if (after !== null) {
      where.push(`(m.internal_date, m.id) ${beyond} (?, ?)`);
      params.push(after.internalDate, after.id);
    }
  }
  where.push(...r.clauses.sql);
  params.push(...r.clauses.params, limit);
  // INDEXED BY: the planner could otherwise take messages_binding_state for
  // the binding list and sort the whole folder for every page. An address's
  // few messages are read by id and sorted instead.
  const from = r.among === undefined ? 'messages m INDEXED BY messages_listing' : 'json_each(?) c CROSS JOIN messages m ON m.id = c.value';
  const sql = `SELECT ${summaryColumns} FROM ${from}
    WHERE ${where.join(' AND ')} ORDER BY m.internal_date ${order}, m.id ${order} LIMIT ?`;
  return { sql, params };
}

/** Newest first: dated before undated; later date first; higher id first. */
function newestFirst(a: SummaryRow, b: SummaryRow): number {
  if (a.internal_date !== b.internal_date) {
    if (a.internal_date === null) return 1;
    if (b.internal_date === null) return -1;
    return b.internal_date - a.internal_date;
  }
  return b.id - a.id;
}
