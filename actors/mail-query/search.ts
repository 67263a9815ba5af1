/**
 * `search_emails`: lexical search over the FTS5 index `search_index`
 * (subject, from_text, recipients_text, body_text, attachment_names),
 * ranked by bm25 with column weights that favour the subject and the sender.
 *
 * The plan: the full-text index is the outer loop (CROSS JOIN keeps SQLite
 * from starting at `messages` and probing the index per row), each match
 * joins its `messages` row by primary key, the scope and the filters are
 * checked there, and the survivors are ranked; only the best `resultLimit`
 * rows are returned. Snippets are made afterwards for those rows only, since
 * a sorter would otherwise compute one for every match.
 *
 * Snippets: up to 12 tokens of the body and 8 of the attachment names
 * around the matched terms, which are marked `**term**`, with `…` where text
 * was cut; an excerpt with no matched term in it (the match was in the
 * subject or the addresses) is left out.
 *
 * Only `stored` mail has a search document. A folder mirrored but not yet
 * text-extracted therefore answers nothing, and `folderFreshness` does not
 * tell that case apart (spec, "Tool behaviour" 2).
 *
 * Reads only. Importable by `task.ts`.
 */
import { AppError } from '../../runtime/errors.ts';
import type { Database } from '../../runtime/store/open.ts';
import { many, type SqlValue } from '../../runtime/store/rows.ts';
import { filterClauses, type Clauses } from './filters.ts';
import { MAX_SEARCH_RESULTS, type QueryScope, type SearchEmailsInput, type SearchEmailsResult, type SearchMatch } from './protocol.ts';
import { compileQuery } from './query-syntax.ts';
import { placeholders, prepared } from './statements.ts';
import { summaryColumns, summaryOf, type SummaryRow } from './summary.ts';
import { freshnessOf, resolveTargets, visibleBindings } from './targets.ts';

/** bm25 weights, in column order: subject, from, recipients, body, attachment names. */
export const COLUMN_WEIGHTS = [10, 5, 2, 1, 3] as const;

// Control characters as snippet markers, so a marker is told from text that
// happens to hold `**`; they become `**` once the excerpt is kept.
const open = '\u0002';
const close = '\u0003';

export function searchEmails(db: Database, scope: QueryScope, input: SearchEmailsInput): SearchEmailsResult {
  if (input.resultLimit > MAX_SEARCH_RESULTS) throw new AppError('E_TOOL_RESULT_LIMIT');
  const expression = compileQuery(input.queryText);
  const targets = resolveTargets(db, scope, input.accounts, input.folders);
  const bindings = visibleBindings(targets);
  const answer = (matches: SearchMatch[]): SearchEmailsResult => ({
    matches,
    folderFreshness: freshnessOf(targets),
    retrievalMode: 'lexical',
    semanticSearch: 'inactive',
  });
  if (bindings.size === 0) return answer([]);

  const query = rankingQuery(narrowedByAddress(expression, input), [...bindings.keys()], filterClauses(input), input.resultLimit);
  const rows = many<SummaryRow>(prepared(db, query.sql), query.params);
  const excerpts = snippetsOf(
    db,
    expression,
    rows.map((row) => row.id),
  );
  return answer(
    rows.map((row, i) => {
      const snippets = excerpts.get(row.id) ?? [];
      return { ...summaryOf(row, bindings.get(row.binding_id)!.alias), rank: i + 1, ...(snippets.length > 0 ? { snippets } : {}) };
    }),
  );
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

/** The ranking SQL (exported for the query-plan test). */
export function rankingQuery(expression: string, bindingIds: readonly number[], clauses: Clauses, limit: number): { sql: string; params: SqlValue[] } {
  const sql = `SELECT ${summaryColumns}
    FROM search_index CROSS JOIN messages m ON m.id = search_index.rowid
    WHERE search_index MATCH ? AND m.state = 'stored' AND m.binding_id IN (${placeholders(bindingIds.length)})
      ${clauses.sql.map((c) => `AND ${c}`).join(' ')}
    ORDER BY bm25(search_index, ${COLUMN_WEIGHTS.join(', ')}), m.internal_date DESC, m.id DESC
    LIMIT ?`;
  return { sql, params: [expression, ...bindingIds, ...clauses.params, limit] };
}

/**
 * Excerpts for the ranked rows, in one statement. Not one lookup per row:
 * each MATCH evaluation expands the expression again, and a broad prefix
 * costs a full merge of its terms' lists every time. `+rowid` keeps the id
 * list out of the index constraint (one pass over the matches, cheap
 * without snippets) and makes it a filter checked before any snippet is made.
 */
function snippetsOf(db: Database, expression: string, ids: readonly number[]): Map<number, string[]> {
  const excerpts = new Map<number, string[]>();
  if (ids.length === 0) return excerpts;
  const query = snippetQuery(expression, ids);
  for (const row of many<{ id: number; body: string | null; names: string | null }>(prepared(db, query.sql), query.params)) {
    excerpts.set(
      row.id,
      [row.body, row.names].flatMap((text) => (text?.includes(open) ? [text.replaceAll(open, '**').replaceAll(close, '**')] : [])),
    );
  }
  return excerpts;
}

/** The excerpt SQL (exported for the query-plan test). */
export function snippetQuery(expression: string, ids: readonly number[]): { sql: string; params: SqlValue[] } {
  const sql = `SELECT rowid AS id, snippet(search_index, 3, char(2), char(3), '…', 12) AS body, snippet(search_index, 4, char(2), char(3), '…', 8) AS names
    FROM search_index WHERE search_index MATCH ? AND +rowid IN (${placeholders(ids.length)})`;
  return { sql, params: [expression, ...ids] };
}
