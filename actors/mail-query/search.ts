/**
 * `search_emails`: lexical search over the FTS5 index `search_index`
 * (subject, from_text, recipients_text, body_text, attachment_names).
 *
 * Ranking (docs/mcp-read-tools.md): emails whose subject and sender hold the
 * whole query (index `search_headings`) come first, then those matching anywhere; within each group
 * newest first by received time, ties by the later indexed. The index is
 * keyed in that order (migration 0006: a search key that sorts as the
 * received time), so each group is a walk of the postings from the newest
 * key down that stops once `resultLimit` emails in scope are found: a word
 * in every email costs about what a rare one does, not a rank of every
 * match. A received-time range is a key range the walk seeks to.
 *
 * The plan: the full-text index is the outer loop (CROSS JOIN keeps SQLite
 * from starting at `messages` and probing the index per row) in key order
 * (no sorter), each match joins its key and its `messages` row by primary
 * key, and the scope and the filters are checked there. Snippets are made
 * afterwards for the returned rows only, in JS from their stored text.
 *
 * Snippets: up to 12 tokens of the body and 8 of the attachment names
 * around the matched terms, which are marked `**term**`, with `…` where text
 * was cut; an excerpt with no matched term in it (the match was in the
 * subject or the addresses) is left out.
 *
 * Only derived `stored` mail has a search document. A folder mirrored but
 * not yet text-extracted therefore answers nothing for that mail (spec,
 * "Tool behaviour" 2); unlike the spec's reference, `folderFreshness` says
 * so with `notYetIndexed` (targets.ts).
 *
 * Reads only. Importable by `task.ts`.
 */
import { AppError } from '../../runtime/errors.ts';
import type { Database } from '../../runtime/store/open.ts';
import type { SqlValue } from '../../runtime/store/rows.ts';
import { excerpt, phraseOf, type Phrase } from './excerpt.ts';
import { filterClauses, type Clauses } from './filters.ts';
import { MAX_SEARCH_RESULTS, type QueryScope, type SearchEmailsInput, type SearchEmailsResult, type SearchMatch } from './protocol.ts';
import { compileTerms, expressionOf } from './query-syntax.ts';
import { placeholders, prepared } from './statements.ts';
import { summaryColumns, summaryOf, type SummaryRow } from './summary.ts';
import { freshnessOf, resolveTargets, visibleBindings } from './targets.ts';

// Tokens of an excerpt: of the body, of the attachment names.
const BODY_TOKENS = 12;
const NAME_TOKENS = 8;

type RankedRow = SummaryRow & { search_key: bigint };

export function searchEmails(db: Database, scope: QueryScope, input: SearchEmailsInput): SearchEmailsResult {
  if (input.resultLimit > MAX_SEARCH_RESULTS) throw new AppError('E_TOOL_RESULT_LIMIT');
  const terms = compileTerms(input.queryText);
  const expression = expressionOf(terms);
  const targets = resolveTargets(db, scope, input.accounts, input.folders);
  const bindings = visibleBindings(targets);
  const answer = (matches: SearchMatch[]): SearchEmailsResult => ({
    matches,
    folderFreshness: freshnessOf(targets),
    retrievalMode: 'lexical',
    semanticSearch: 'inactive',
  });
  if (bindings.size === 0) return answer([]);

  const walk = (index: SearchIndex, fts: string, limit: number): RankedRow[] => {
    // The headings index has no recipients column to narrow by; the filter clause still decides.
    const narrowing = index === 'search_headings' ? { senderAddress: input.senderAddress } : input;
    const query = rankingQuery(index, narrowedByAddress(fts, narrowing), terms.excluded, [...bindings.keys()], filterClauses(input), keyRange(input), limit);
    return prepared(db, query.sql).safeIntegers(true).all(query.params) as RankedRow[];
  };
  const rows = walk('search_headings', terms.positive, input.resultLimit);
  if (rows.length < input.resultLimit) {
    // Everything the heading group holds in scope was read: the rest follow, newest first.
    const seen = new Set(rows.map((row) => row.search_key));
    for (const row of walk('search_index', expression, input.resultLimit + rows.length)) {
      if (rows.length === input.resultLimit) break;
      if (!seen.has(row.search_key)) rows.push(row);
    }
  }
  const phrases = terms.matched.flatMap((term) => phraseOf(term.text, term.prefix) ?? []);
  const excerpts = snippetsOf(
    db,
    phrases,
    rows.map((row) => Number(row.id)),
  );
  return answer(
    rows.map((raw, i) => {
      const row = plainRow(raw);
      const snippets = excerpts.get(row.id) ?? [];
      return { ...summaryOf(row, bindings.get(row.binding_id)!.alias), rank: i + 1, ...(snippets.length > 0 ? { snippets } : {}) };
    }),
  );
}

/** A row read with safe integers, back to numbers (ids, dates and sizes are far below 2^53). */
function plainRow(row: RankedRow): SummaryRow {
  const plain: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(row)) plain[name] = typeof value === 'bigint' && name !== 'search_key' ? Number(value) : value;
  return plain as SummaryRow;
}

const DATED = 1n << 44n;
const PER_MS = 1n << 16n;
const LAST_MS = 1n << 46n;
const NO_END = (1n << 63n) - 1n;

/** The search key of the first document received at `ms` (migration 0006). */
export function keyAt(ms: number): bigint {
  const clamped = BigInt(Math.max(0, Math.floor(ms)));
  return DATED + (clamped > LAST_MS ? LAST_MS : clamped) * PER_MS;
}

/**
 * The keys a received-time range can hold: a bound only narrows the walk
 * (a clamped date shares its bucket with others); the filter clause decides.
 */
export function keyRange(f: Pick<SearchEmailsInput, 'receivedOnOrAfter' | 'receivedBefore'>): { from: bigint; below: bigint } {
  return {
    from: f.receivedOnOrAfter === undefined ? 0n : keyAt(Date.parse(f.receivedOnOrAfter)),
    below: f.receivedBefore === undefined ? NO_END : keyAt(Math.max(1, Date.parse(f.receivedBefore))),
  };
}

/**
 * The expression, narrowed inside the full-text index by the sender and
 * recipient filters: their addresses are in `from_text` / `recipients_text`,
 * so a phrase of the address's tokens there lets FTS5 intersect posting
 * lists instead of ranking every match of a common word and then dropping
 * those of other senders row by row. The phrase only narrows (a display name
 * or a longer domain holding the same tokens still passes); the exact
 * address clause of `filterClauses` decides. An address without a letter or
 * digit has no tokens to narrow by and is left to that clause alone.
 */
export function narrowedByAddress(expression: string, f: Pick<SearchEmailsInput, 'senderAddress' | 'recipientAddress'>): string {
  const narrowing = [
    ['from_text', f.senderAddress],
    ['recipients_text', f.recipientAddress],
  ].flatMap(([column, address]) => (address !== undefined && /[\p{L}\p{N}]/u.test(address) ? [`${column} : "${address.replaceAll('"', '""')}"`] : []));
  return narrowing.length === 0 ? expression : `(${expression}) AND ${narrowing.join(' AND ')}`;
}

/** Whole documents, or their subject and sender alone (the first group). */
export type SearchIndex = 'search_index' | 'search_headings';

/**
 * One group's walk, newest key first (exported for the query-plan test).
 * The headings index holds no body: the query's exclusions are checked
 * against the whole document, for the rows of the walk only.
 */
export function rankingQuery(
  index: SearchIndex,
  expression: string,
  excluded: string | null,
  bindingIds: readonly number[],
  clauses: Clauses,
  range: { from: bigint; below: bigint },
  limit: number,
): { sql: string; params: SqlValue[] } {
  const exclusion = index === 'search_headings' && excluded !== null;
  const sql = `SELECT ${index}.rowid AS search_key, ${summaryColumns}
    FROM ${index} CROSS JOIN search_keys k ON k.key = ${index}.rowid CROSS JOIN messages m ON m.id = k.message_id
    WHERE ${index} MATCH ? AND ${index}.rowid >= ? AND ${index}.rowid < ?
      AND m.state = 'stored' AND m.binding_id IN (${placeholders(bindingIds.length)})
      ${clauses.sql.map((c) => `AND ${c}`).join(' ')}
      ${exclusion ? `AND NOT EXISTS (SELECT 1 FROM search_index WHERE search_index MATCH ? AND search_index.rowid = k.key)` : ''}
    ORDER BY ${index}.rowid DESC
    LIMIT ?`;
  return { sql, params: [expression, range.from, range.below, ...bindingIds, ...clauses.params, ...(exclusion ? [excluded] : []), limit] };
}

/**
 * Excerpts for the ranked rows, made in JS (excerpt.ts) from their stored
 * text, read by primary key. FTS5's `snippet()` did the same work inside the
 * query but tokenized each whole body twice more; at 50,000 emails it was
 * two thirds of a broad query.
 */
function snippetsOf(db: Database, phrases: readonly Phrase[], messageIds: readonly number[]): Map<number, string[]> {
  const excerpts = new Map<number, string[]>();
  if (messageIds.length === 0 || phrases.length === 0) return excerpts;
  const sql = `SELECT message_id AS id, body_text AS body, attachment_names AS names FROM search_documents WHERE message_id IN (${placeholders(messageIds.length)})`;
  for (const row of prepared(db, sql).all([...messageIds]) as Array<{ id: number; body: string; names: string }>) {
    const found = [excerpt(row.body, phrases, BODY_TOKENS), excerpt(row.names, phrases, NAME_TOKENS)].filter((text) => text !== null);
    excerpts.set(row.id, found);
  }
  return excerpts;
}
