/**
 * The `search_emails` query syntax (docs/mcp-query-syntax.md) translated to
 * an FTS5 expression. User text never reaches MATCH as syntax: every term is
 * emitted as an FTS5 string by `ftsString` (fts-string.ts, the one way text
 * reaches MATCH), and only the operators built here surround them.
 *
 * - bare words: all must match (AND);
 * - "quoted phrase": those words adjacent, in order (an unclosed quote runs
 *   to the end of the text);
 * - word*: a prefix (of the term's last token, at least 3 letters or digits);
 * - a OR b: either; OR binds tighter than the implicit AND, as in web search
 *   (`invoice paid OR overdue` = invoice AND (paid OR overdue));
 * - -word, -"phrase": must not match.
 *
 * Control characters are read as spaces. A term is split into tokens by the index's tokenizer (unicode61), so
 * `e-mail` or `ann@example.org` act as short phrases. A term without a
 * letter or digit matches nothing and is dropped. A query left with no
 * positive term (empty, or only exclusions) is invalid input (51001).
 *
 * Pure. Importable by modules of `actors/mail-query/` only.
 */
import { AppError } from '../../runtime/errors.ts';
import { ftsString, ftsText } from './fts-string.ts';

/** Terms a query may hold; more is refused rather than run slowly. */
export const MAX_TERMS = 32;
/**
 * Letters or digits a prefix needs. Without an FTS5 prefix index a prefix
 * merges the lists of every term it covers: at 50k messages `a*` costs
 * seconds, three characters tens of milliseconds.
 */
export const MIN_PREFIX = 3;

type Term = { text: string; prefix: boolean; negated: boolean };
type Token = Term | 'OR';

const tokenChar = /[\p{L}\p{N}]/u;

export function compileQuery(queryText: string): string {
  return expressionOf(compileTerms(queryText));
}

/**
 * The query as FTS5 parts: what must match, and what must not (null: nothing
 * excluded); `matched`: the positive terms in expression order (what an
 * excerpt marks).
 */
export type CompiledTerms = { positive: string; excluded: string | null; matched: ReadonlyArray<{ text: string; prefix: boolean }> };

/** The whole expression of compiled terms; `positive` may be narrowed first (a column filter). */
export function expressionOf(terms: CompiledTerms, positive: string = terms.positive): string {
  return terms.excluded === null ? positive : `(${positive}) NOT (${terms.excluded})`;
}

export function compileTerms(queryText: string): CompiledTerms {
  const tokens = tokenize(queryText);
  const groups: Term[][] = [];
  const excluded: Term[] = [];
  let joinNext = false;
  for (const token of tokens) {
    if (token === 'OR') {
      joinNext = groups.length > 0;
      continue;
    }
    if (token.negated) {
      excluded.push(token);
      joinNext = false;
      continue;
    }
    const last = groups[groups.length - 1];
    if (joinNext && last !== undefined) last.push(token);
    else groups.push([token]);
    joinNext = false;
  }
  if (groups.flat().length + excluded.length > MAX_TERMS) {
    throw new AppError('E_TOOL_INVALID_INPUT', { message: `queryText may hold at most ${MAX_TERMS} terms` });
  }
  if (groups.length === 0) {
    throw new AppError('E_TOOL_INVALID_INPUT', { message: 'queryText needs at least one word or phrase to match (exclusions alone match nothing)' });
  }
  for (const t of [...groups.flat(), ...excluded]) {
    if (t.prefix && lastTokenLength(t.text) < MIN_PREFIX) {
      throw new AppError('E_TOOL_INVALID_INPUT', { message: `a prefix* needs at least ${MIN_PREFIX} letters or digits before the *` });
    }
  }
  const positive = groups.map((group) => (group.length === 1 ? term(group[0]!) : `(${group.map(term).join(' OR ')})`)).join(' AND ');
  return {
    positive,
    excluded: excluded.length === 0 ? null : excluded.map(term).join(' OR '),
    matched: groups.flat().map(({ text, prefix }) => ({ text, prefix })),
  };
}

/** Letters and digits in the last token of a term (what a prefix applies to). */
function lastTokenLength(text: string): number {
  const tokens = text.split(/[^\p{L}\p{N}]+/u).filter((token) => token !== '');
  return [...(tokens[tokens.length - 1] ?? '')].length;
}

function term(t: Term): string {
  const quoted = ftsString(t.text);
  // tokenize keeps only terms with a letter or digit, which is what ftsString asks.
  if (quoted === null) throw new Error('a query term without a letter or digit reached the expression');
  return `${quoted}${t.prefix ? ' *' : ''}`;
}

function tokenize(queryText: string): Token[] {
  // Control characters are never words (a NUL would end the FTS5 string early): read as spaces, as ftsString does.
  const text = ftsText(queryText);
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (/\s/u.test(c)) {
      i += 1;
      continue;
    }
    let negated = false;
    let start = i;
    if (c === '-' && i + 1 < text.length && !/\s/u.test(text[i + 1]!)) {
      negated = true;
      start = i + 1;
    }
    if (text[start] === '"') {
      const close = text.indexOf('"', start + 1);
      const end = close === -1 ? text.length : close;
      const phrase = text.slice(start + 1, end);
      i = close === -1 ? text.length : close + 1;
      const prefix = text[i] === '*';
      if (prefix) i += 1;
      if (tokenChar.test(phrase)) tokens.push({ text: phrase, prefix, negated });
      continue;
    }
    let end = start;
    while (end < text.length && !/\s/u.test(text[end]!) && text[end] !== '"') end += 1;
    let word = text.slice(start, end);
    i = end;
    if (!negated && word === 'OR') {
      tokens.push('OR');
      continue;
    }
    const prefix = word.endsWith('*');
    word = word.replace(/\*+$/, '');
    if (tokenChar.test(word)) tokens.push({ text: word, prefix, negated });
  }
  return tokens;
}
