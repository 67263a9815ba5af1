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
 * not yet text-extracted therefore answers nothing for that mail;
 * `folderFreshness` says so with `notYetIndexed` (targets.ts;
 * docs/mcp-read-tools.md).
 *
 * Reads only. Importable by `task.ts`.
 */
import { AppError } from '../../runtime/errors.ts';
import { coverage, generation, generations, receivedRange, vectorBytes } from '../../runtime/store/mailbox/vectors.ts';
import type { Database } from '../../runtime/store/open.ts';
import { one, type SqlValue } from '../../runtime/store/rows.ts';
import { excerpt, phraseOf, type Phrase } from './excerpt.ts';
import { filterClauses, type Clauses } from './filters.ts';
import { MAX_SEARCH_RESULTS, type SearchEmailsInput, type SearchEmailsResult, type SearchMatch, type SemanticQuery } from './protocol/mail-reads.ts';
import type { QueryScope } from './protocol/query-scope.ts';
import { compileTerms, expressionOf } from './query-syntax.ts';
import { addressNarrowing, exactSender, matchingAddress, narrowedByAddress, type SearchIndex, sentBy } from './addresses.ts';
import { placeholders, prepared } from './statements.ts';
import { summaryColumns, summaryOf, type SummaryRow } from './summary.ts';
import { freshnessOf, resolveTargets, visibleBindings } from './targets.ts';
import { nearestMessagesAmong, nearestMessagesFast } from './vector-index.ts';

// Tokens of an excerpt: of the body, of the attachment names.
const BODY_TOKENS = 12;
const NAME_TOKENS = 8;

/** How deep each list is read before fusion, the lexical walk and the vector ranking alike (at least `MAX_SEARCH_RESULTS`). */
export const FUSION_DEPTH = 50;
/** The rank offset of Reciprocal Rank Fusion (Cormack et al. 2009): a list's head weighs more, but no one rank decides alone. */
export const RRF_K = 60;
/**
 * List weights of the fusion, score = Σ weight / (RRF_K + rank). Measured on
 * the evaluation set (bench/fixtures/retrieval-eval.json, read by
 * `npm run bench -- retrieval`; docs/semantic-search.md, "Lexical weight
 * 2"): equal weights lost 0.5 point of recall on keyword queries; lexical
 * weight 2 lost nothing there and kept the gain on paraphrased queries.
 * What follows: an
 * email found only by its vector (at best 1/61) ranks after every email of
 * the lexical list (at worst 2/110); one found both ways rises within it.
 */
export const LEXICAL_WEIGHT = 2;
export const VECTOR_WEIGHT = 1;
/**
 * The filtered vector ranking reads the passing messages' vectors by message
 * when at most this many pass: about 5 passages each at ~10 µs a probe,
 * against ~1.8 µs for every vector of the scope the other way.
 */
const FILTERED_BY_MESSAGE = 10_000;
/**
 * Up to this many messages a filter passes are ranked exactly over their
 * vectors (about 2.5 µs a vector in SQL, five passages a message); more go
 * through the index restricted to them: a sender's 1,421 messages took
 * 18 ms the exact way at 50,000 messages, the index's scan and 1,000
 * candidates about 6 (stop 49).
 */
const BY_MESSAGE_EXACT = 500;
/** Scores closer than this are a tie (a sum of fractions is not exact in floating point). */
const SCORE_EPSILON = 1e-12;

type RankedRow = SummaryRow & { search_key: bigint };

/**
 * The search. With `semantic` (the query placed by the serving generation's
 * provider) it ranks both ways and fuses; without, it is lexical and says
 * whether semantic search is inactive (no generation serves) or degraded
 * (one serves but the query could not be placed now).
 */
export function searchEmails(db: Database, scope: QueryScope, input: SearchEmailsInput, semantic?: SemanticQuery): SearchEmailsResult {
  if (input.resultLimit > MAX_SEARCH_RESULTS) throw new AppError('E_TOOL_RESULT_LIMIT');
  const terms = compileTerms(input.queryText);
  const expression = expressionOf(terms);
  const targets = resolveTargets(db, scope, input.accounts, input.folders);
  const bindings = visibleBindings(targets);
  const bindingIds = [...bindings.keys()];
  // The generation answering: the one that placed the query, else the one serving (read in this snapshot).
  const answering = semantic?.generation ?? servingGeneration(db);
  const answer = (matches: SearchMatch[]): SearchEmailsResult => ({
    matches,
    folderFreshness: freshnessOf(targets),
    retrievalMode: semantic === undefined ? 'lexical' : 'hybrid',
    semanticSearch: semantic !== undefined ? 'available' : answering === null ? 'inactive' : 'degraded',
    ...(answering === null ? {} : { semanticCoverage: coverageOf(db, answering, bindingIds) }),
  });
  if (bindings.size === 0) return answer([]);

  const walk = (index: SearchIndex, fts: string, limit: number): RankedRow[] => {
    // The headings index has no recipients column to narrow by; the filter clause still decides.
    const narrowing = index === 'search_headings' ? { senderAddress: input.senderAddress } : input;
    const query = rankingQuery(index, narrowedByAddress(fts, narrowing), terms.excluded, bindingIds, filterClauses(input), keyRange(input), limit);
    return prepared(db, query.sql).safeIntegers(true).all(query.params) as RankedRow[];
  };
  const depth = semantic === undefined ? input.resultLimit : FUSION_DEPTH;
  const rows = walk('search_headings', terms.positive, depth);
  if (rows.length < depth) {
    // Everything the heading group holds in scope was read: the rest follow, newest first.
    const seen = new Set(rows.map((row) => row.search_key));
    for (const row of walk('search_index', expression, depth + rows.length)) {
      if (rows.length === depth) break;
      if (!seen.has(row.search_key)) rows.push(row);
    }
  }
  const lexical = rows.map(plainRow);
  const ranked =
    semantic === undefined
      ? lexical.map((row) => ({ row, lexical: true }))
      : fuse(lexical, vectorRanking(db, semantic, bindingIds, input, terms.excluded, FUSION_DEPTH), input.resultLimit);
  const phrases = terms.matched.flatMap((term) => phraseOf(term.text, term.prefix) ?? []);
  const excerpts = snippetsOf(
    db,
    phrases,
    ranked.filter((r) => r.lexical).map((r) => r.row.id),
  );
  return answer(
    ranked.map(({ row }, i) => {
      // A vector-only hit matched no term: it has no excerpt to mark.
      const snippets = excerpts.get(row.id) ?? [];
      return { ...summaryOf(row, bindings.get(row.binding_id)!.alias), rank: i + 1, ...(snippets.length > 0 ? { snippets } : {}) };
    }),
  );
}

/** The serving generation's id, or null: semantic search inactive. */
function servingGeneration(db: Database): number | null {
  return generations(db).find((g) => g.state === 'serving')?.id ?? null;
}

type Coverage = { embeddedEmailCount: number; emailCount: number };

/**
 * Coverage by (generation, bindings), kept per connection while the store
 * is unchanged: counting is a pass over the folders' mail (tens of ms for a
 * whole mailbox of 50,000), and every answer carries it. `PRAGMA
 * data_version` moves when another connection commits, `total_changes()`
 * when this one writes (tests do): either empties the cache. A commit
 * landing between this read transaction's start and the version read can
 * leave a count one commit old until the next commit.
 */
const coverageCache = new WeakMap<Database, { version: string; counts: Map<string, Coverage> }>();
const COVERAGE_CACHE_ENTRIES = 64;

function coverageOf(db: Database, generationId: number, bindingIds: readonly number[]): Coverage {
  if (bindingIds.length === 0) return { embeddedEmailCount: 0, emailCount: 0 };
  const version = JSON.stringify([
    one<{ data_version: number }>(prepared(db, 'PRAGMA data_version'))?.data_version,
    one<{ n: number }>(prepared(db, 'SELECT total_changes() AS n'))?.n,
  ]);
  let cache = coverageCache.get(db);
  if (cache === undefined || cache.version !== version || cache.counts.size >= COVERAGE_CACHE_ENTRIES) {
    cache = { version, counts: new Map() };
    coverageCache.set(db, cache);
  }
  const key = `${generationId}:${[...bindingIds].sort((a, b) => a - b).join(',')}`;
  let counts = cache.counts.get(key);
  if (counts === undefined) {
    const counted = coverage(db, generationId, bindingIds);
    counts = { embeddedEmailCount: counted.embedded, emailCount: counted.embeddable };
    cache.counts.set(key, counts);
  }
  return counts;
}

type Fused = { row: SummaryRow; lexical: number | null; score: number };

/**
 * Reciprocal Rank Fusion of the two lists, best first, `limit` of them. Ties:
 * the better lexical rank (a lexical hit before a vector-only one), then the
 * later received (undated last), then the larger id.
 */
export function fuse(lexical: readonly SummaryRow[], vector: readonly SummaryRow[], limit: number): Array<{ row: SummaryRow; lexical: boolean }> {
  const byId = new Map<number, Fused>();
  lexical.forEach((row, i) => {
    byId.set(row.id, { row, lexical: i + 1, score: LEXICAL_WEIGHT / (RRF_K + i + 1) });
  });
  vector.forEach((row, i) => {
    const score = VECTOR_WEIGHT / (RRF_K + i + 1);
    const held = byId.get(row.id);
    if (held === undefined) byId.set(row.id, { row, lexical: null, score });
    else held.score += score;
  });
  const rankOf = (f: Fused) => f.lexical ?? Number.MAX_SAFE_INTEGER;
  return [...byId.values()]
    .sort((a, b) => {
      const score = b.score - a.score;
      if (Math.abs(score) > SCORE_EPSILON) return score;
      return rankOf(a) - rankOf(b) || (b.row.internal_date ?? -1) - (a.row.internal_date ?? -1) || b.row.id - a.row.id;
    })
    .slice(0, limit)
    .map((f) => ({ row: f.row, lexical: f.lexical !== null }));
}

/**
 * The vector list: messages by their nearest passage, `depth` of them, under
 * the same scope and filters as the lexical walk and without the query's
 * exclusions.
 *
 * With an exact sender and no recipient, `message_senders` names the
 * sender's mail; with a recipient or a sender's domain, the full-text index
 * names the mail that can pass (`addressNarrowing`: a phrase of the
 * address's tokens in `from_text` / `recipients_text`) and the exact clauses
 * decide. When at most `FILTERED_BY_MESSAGE` pass, their vectors are ranked,
 * by message, at once: the nearest of the whole scope rarely hold enough of
 * one sender's mail. When the address (and a received range) is the only
 * filter, that mail is ranked as it is found (a phrase's near misses are
 * checked on the ranked ones only). (Finding that set by the filter clauses
 * alone parsed the addresses of every message of the scope: ~130 ms at
 * 50,000.)
 *
 * Otherwise `nearestMessagesFast` (vector-index.ts: an in-memory candidate
 * index, rescored exactly; the exact scan for a small scope) scopes the
 * visible bindings and the received range; the nearest are then checked
 * against every other filter in one query. Usually that is enough; when the
 * filters keep fewer than `depth` of them and the scope holds more, one
 * exact ranking of the filtered scope follows: by message when at most
 * `FILTERED_BY_MESSAGE` pass, else every vector of the scope with the
 * filters per row. A selective filter costs one more pass, not a deepening
 * series of them.
 */
function vectorRanking(
  db: Database,
  semantic: SemanticQuery,
  bindingIds: readonly number[],
  input: SearchEmailsInput,
  excluded: string | null,
  depth: number,
): SummaryRow[] {
  const clauses = filterClauses(input);
  // The received range is the ranking's own scope: only the other filters and the exclusions can turn away what it finds.
  const { receivedOnOrAfter: _from, receivedBefore: _before, ...beyondRange } = input;
  const filtered = filterClauses(beyondRange).sql.length > 0 || excluded !== null;
  const range = {
    ...(input.receivedOnOrAfter === undefined ? {} : { receivedFrom: Date.parse(input.receivedOnOrAfter) }),
    ...(input.receivedBefore === undefined ? {} : { receivedBelow: Date.parse(input.receivedBefore) }),
  };
  const scope = JSON.stringify(bindingIds);
  const sender = input.recipientAddress === undefined ? exactSender(input.senderAddress) : null;
  const addresses = sender === null ? addressNarrowing(input) : null;
  if (sender !== null) {
    // One range of message_senders is the sender's mail, exactly (stop 51: ~5 ms through the phrase for a sender of 4,546 at 50,000).
    // With nothing else but the received range, which the ranking keeps, its ids are ranked as they are; otherwise the other
    // filters are read from their message rows (ranking its mail first and checking the nearest cost more: the candidates
    // rescored grow with the depth asked).
    const { senderAddress: _sender, ...others } = beyondRange;
    const passing =
      filterClauses(others).sql.length === 0 ? sentBy(db, sender, FILTERED_BY_MESSAGE) : passingAmong(db, { kind: 'sender', address: sender }, scope, clauses);
    if (passing.length <= FILTERED_BY_MESSAGE) return rankedByMessage(db, semantic, passing, NO_CLAUSES, bindingIds, range, excluded, depth);
  } else if (addresses !== null) {
    // The headings index holds the sender's column and no body: its lists are shorter (stop 50: 4.3 against 5.0 ms for a sender of 1,506 at 50,000).
    const index: SearchIndex = input.recipientAddress === undefined ? 'search_headings' : 'search_index';
    // Nothing else narrows but the received range, which the ranking keeps: the phrase's matches are not read from the
    // messages table (a row each: 1,506 of them, 5.8 against 1.9 ms past the mapped part of the file); the ranked ones are checked.
    const { senderAddress: _sender, recipientAddress: _recipient, ...others } = beyondRange;
    const addressOnly = filterClauses(others).sql.length === 0;
    const passing = addressOnly
      ? matchingAddress(db, index, addresses, FILTERED_BY_MESSAGE)
      : passingAmong(db, { kind: 'phrase', index, expression: addresses }, scope, clauses);
    if (passing.length <= FILTERED_BY_MESSAGE)
      return rankedByMessage(db, semantic, passing, addressOnly ? clauses : NO_CLAUSES, bindingIds, range, excluded, depth);
  }

  // With filters beyond the range, read twice the depth so that a filter keeping most of the scope rarely needs the second query.
  const limit = filtered ? depth * 2 : depth;
  const nearest = nearestMessagesFast(db, { generation: semantic.generation, queryVector: semantic.vector, bindingIds, ...range, limit });
  const first = inRankOrder(
    nearest.map((n) => n.messageId),
    checked(db, nearest, bindingIds, clauses, excluded),
  );
  if (first.length >= depth || nearest.length < limit) return first.slice(0, depth);

  // Few messages pass the filters (a flag, say): their vectors, by message, cost less than every
  // vector of the scope (measured at 50,000 messages: a sender of 831 messages, 442–905 ms the other way).
  const filters = clauses.sql.map((c) => `AND ${c}`).join(' ');
  const passing = (
    prepared(db, `SELECT m.id FROM messages m WHERE m.binding_id IN (SELECT value FROM json_each(?)) AND m.state = 'stored' ${filters} LIMIT ?`).all([
      scope,
      ...clauses.params,
      FILTERED_BY_MESSAGE + 1,
    ]) as Array<{ id: number }>
  ).map((r) => r.id);
  if (passing.length <= FILTERED_BY_MESSAGE) return rankedByMessage(db, semantic, passing, NO_CLAUSES, bindingIds, range, excluded, depth);

  const target = generation(db, semantic.generation)!;
  const fn = target.distance === 'cosine' ? 'vector_distance_cos' : 'vector_distance_l2';
  const bounds = receivedRange(range);
  const sql = `SELECT v.message_id AS messageId, ${fn}(v.vector, ?) AS distance
    FROM passage_vectors v CROSS JOIN messages m ON m.id = v.message_id
    WHERE v.generation_id = ? AND v.binding_id IN (SELECT value FROM json_each(?)) AND v.received >= ? AND v.received < ?
      AND m.state = 'stored' ${filters}
    ORDER BY distance, v.received DESC, v.message_id DESC LIMIT ?`;
  const params: SqlValue[] = [vectorBytes(semantic.vector), target.id, scope, bounds.from, bounds.below, ...clauses.params];
  // A message has several passages, and exclusions are checked afterwards:
  // read on until `depth` pass or the filtered scope holds no more.
  for (let rows = depth * 4; ; rows *= 4) {
    const found = prepared(db, sql).all([...params, rows]) as Array<{ messageId: number }>;
    const order = [...new Set(found.map((r) => r.messageId))];
    const passed = inRankOrder(
      order,
      checked(
        db,
        order.map((messageId) => ({ messageId })),
        bindingIds,
        NO_CLAUSES,
        excluded,
      ),
    );
    if (passed.length >= depth || found.length < rows) return passed.slice(0, depth);
  }
}

const NO_CLAUSES: Clauses = { sql: [], params: [] };

/**
 * The stored mail of the scope passing the clauses, among the messages a
 * source names (at most `FILTERED_BY_MESSAGE` + 1: more goes the other way):
 * an exact sender's key, or a full-text index by the address phrase
 * (`search_headings` when only the sender is asked: it has no recipients'
 * column). Only stored mail has a search document, and only it has passages
 * and vectors.
 */
function passingAmong(db: Database, source: PassingSource, scope: string, clauses: Clauses): number[] {
  const among =
    source.kind === 'sender'
      ? { from: 'message_senders s CROSS JOIN messages m ON m.id = s.message_id', where: 's.address = ?', param: source.address }
      : {
          from: `${source.index} CROSS JOIN search_keys k ON k.key = ${source.index}.rowid CROSS JOIN messages m ON m.id = k.message_id`,
          where: `${source.index} MATCH ?`,
          param: source.expression,
        };
  const sql = `SELECT m.id FROM ${among.from}
    WHERE ${among.where} AND m.state = 'stored' AND m.binding_id IN (SELECT value FROM json_each(?))
      ${clauses.sql.map((c) => `AND ${c}`).join(' ')}
    LIMIT ?`;
  return (prepared(db, sql).all([among.param, scope, ...clauses.params, FILTERED_BY_MESSAGE + 1]) as Array<{ id: number }>).map((r) => r.id);
}

type PassingSource = { kind: 'sender'; address: string } | { kind: 'phrase'; index: SearchIndex; expression: string };

/**
 * These messages ranked by their nearest passage (ties as
 * `nearestMessages`: the later received, then the larger id), `depth` of
 * them that pass the `unchecked` clauses (which a superset of the passing
 * mail was found without) and match no exclusion. More than
 * `BY_MESSAGE_EXACT` of them go through the in-memory index restricted to
 * them (vector-index.ts `nearestMessagesAmong`), as a scope does; fewer, or
 * the index not ready, one exact pass over their vectors (index
 * passage_vectors_message, then the row), grouped by message in SQL: the
 * sorter holds one row per message, at most `FILTERED_BY_MESSAGE`.
 */
function rankedByMessage(
  db: Database,
  semantic: SemanticQuery,
  messageIds: readonly number[],
  unchecked: Clauses,
  bindingIds: readonly number[],
  range: { receivedFrom?: number; receivedBelow?: number },
  excluded: string | null,
  depth: number,
): SummaryRow[] {
  if (messageIds.length === 0) return [];
  const target = generation(db, semantic.generation);
  if (target === undefined) return [];
  if (messageIds.length > BY_MESSAGE_EXACT) {
    // They pass every filter but the unchecked (an address phrase's rare near misses): mostly the exclusions remove some.
    const limit = excluded === null ? depth : depth * 2;
    const near = nearestMessagesAmong(db, { generation: target.id, queryVector: semantic.vector, bindingIds, ...range, limit }, messageIds);
    if (near !== null) {
      const passed = inRankOrder(
        near.map((n) => n.messageId),
        checked(db, near, bindingIds, unchecked, excluded),
      );
      // Fewer than asked: the index held no more of them.
      if (passed.length >= depth || near.length < limit) return passed.slice(0, depth);
    }
  }
  const fn = target.distance === 'cosine' ? 'vector_distance_cos' : 'vector_distance_l2';
  const bounds = receivedRange(range);
  const sql = `SELECT v.message_id AS messageId, min(${fn}(v.vector, ?)) AS distance, max(v.received) AS latest
    FROM json_each(?) c CROSS JOIN passage_vectors v ON v.message_id = c.value
    WHERE +v.generation_id = ? AND +v.binding_id IN (SELECT value FROM json_each(?)) AND +v.received >= ? AND +v.received < ?
    GROUP BY v.message_id
    ORDER BY distance, latest DESC, messageId DESC`;
  const order = (
    prepared(db, sql).all([
      vectorBytes(semantic.vector),
      JSON.stringify(messageIds),
      target.id,
      JSON.stringify(bindingIds),
      bounds.from,
      bounds.below,
    ]) as Array<{
      messageId: number;
    }>
  ).map((r) => r.messageId);
  // Exclusions are checked in slices down the ranking: usually the first holds `depth`.
  const passed: SummaryRow[] = [];
  for (let at = 0, slice = depth * 2; at < order.length && passed.length < depth; at += slice, slice *= 4) {
    const ids = order.slice(at, at + slice);
    passed.push(
      ...inRankOrder(
        ids,
        checked(
          db,
          ids.map((messageId) => ({ messageId })),
          bindingIds,
          unchecked,
          excluded,
        ),
      ),
    );
  }
  return passed.slice(0, depth);
}

function inRankOrder(order: readonly number[], rows: Map<number, SummaryRow>): SummaryRow[] {
  return order.flatMap((id) => rows.get(id) ?? []);
}

/** The candidates still stored in scope that pass the clauses and match no exclusion, with their summary columns. */
function checked(
  db: Database,
  candidates: ReadonlyArray<{ messageId: number }>,
  bindingIds: readonly number[],
  clauses: Clauses,
  excluded: string | null,
): Map<number, SummaryRow> {
  const rows = new Map<number, SummaryRow>();
  if (candidates.length === 0) return rows;
  const sql = `SELECT ${summaryColumns} FROM messages m
    WHERE m.id IN (SELECT value FROM json_each(?)) AND m.state = 'stored' AND m.binding_id IN (SELECT value FROM json_each(?))
      ${clauses.sql.map((c) => `AND ${c}`).join(' ')}
      ${excluded === null ? '' : 'AND NOT EXISTS (SELECT 1 FROM search_index WHERE search_index MATCH ? AND search_index.rowid = (SELECT key FROM search_keys WHERE message_id = m.id))'}`;
  const params: SqlValue[] = [
    JSON.stringify(candidates.map((c) => c.messageId)),
    JSON.stringify(bindingIds),
    ...clauses.params,
    ...(excluded === null ? [] : [excluded]),
  ];
  for (const row of prepared(db, sql).all(params) as SummaryRow[]) rows.set(row.id, row);
  return rows;
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
