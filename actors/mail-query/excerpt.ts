/**
 * Search excerpts made in JS from the stored text of the returned rows, the
 * way FTS5's `snippet()` cuts them (SQLite 3.45, fts5_aux.c), without its
 * cost: `snippet()` re-read and tokenized each whole body twice inside the
 * query (two thirds of a broad query's time at 50,000 emails).
 *
 * Tokens are found as the index's tokenizer finds them (unicode61,
 * remove_diacritics 2): a token is a run of letters, digits or private-use
 * characters (combining diacritics continue one), compared case-folded with
 * diacritics removed. A query term is a phrase of such tokens, its last one
 * a prefix when the term had `*`.
 *
 * The window: `maxTokens` tokens around the matched phrases, chosen as
 * `snippet()` chooses it (most distinct phrases, then most hits; a window
 * that starts a sentence preferred; the first best kept); matched spans are
 * marked `**…**` (overlapping phrases as one span), `…` where text was cut.
 * No phrase in the text: no excerpt.
 *
 * Pure. Importable by modules of `actors/mail-query/` only.
 */

/** A positive query term as folded tokens; `prefix`: the last token matches as a prefix. */
export type Phrase = { tokens: readonly string[]; prefix: boolean };

const MARK = '**';
const ELLIPSIS = '…';
const tokenChar = /[\p{L}\p{N}\p{Co}\p{Cn}]/u;
const combining = /\p{M}/gu;
const folds = new Map<string, string>(); // per character, as met

/** The phrase a query term's text stands for (null: no token, it matches nothing). */
export function phraseOf(text: string, prefix: boolean): Phrase | null {
  const found = tokenize(text);
  if (found.count === 0) return null;
  return { tokens: Array.from({ length: found.count }, (_, i) => fold(text.slice(found.starts[i], found.ends[i]))), prefix };
}

/**
 * The excerpt of `text` around the phrases' matches, or null when none is
 * in it.
 */
export function excerpt(text: string, phrases: readonly Phrase[], maxTokens: number): string | null {
  const finder = finderOf(phrases);
  if (finder !== null && nextCandidate(finder, text, 0) < 0) return null;
  const tokens = tokenize(text, finder, maxTokens);
  const hits = instances(text, tokens, phrases);
  if (hits.length === 0) return null;
  const size = tokens.count;
  let best = -1;
  let start = 0;
  for (const hit of hits) {
    const centred = score(hits, phrases, hit.at, maxTokens);
    if (centred.score > best) {
      best = centred.score;
      start = centred.adjusted(size);
    }
    // The last sentence start at or before the hit, if a window from there is better.
    const sentence = size > maxTokens ? sentenceStartBefore(text, tokens, hit.at) : -1;
    if (sentence >= 0 && sentence < hit.at) {
      const from = score(hits, phrases, sentence, maxTokens).score + (sentence === 0 ? 120 : 100);
      if (from > best) {
        best = from;
        start = sentence;
      }
    }
  }
  return highlighted(text, tokens, spansOf(hits, phrases), start, start + maxTokens - 1);
}

/** Case-folded with diacritics removed, as unicode61 with remove_diacritics 2 compares tokens. */
function fold(token: string): string {
  if (isAscii(token, 0, token.length)) return token.toLowerCase();
  let out = '';
  for (const c of token) {
    let f = folds.get(c);
    if (f === undefined) {
      f = foldChar(c);
      folds.set(c, f);
    }
    out += f;
  }
  return out;
}

// Where unicode61's tables differ from Unicode's lowercasing (checked by bench/excerpt-parity.ts).
const folded: Record<string, string> = {
  ſ: 's',
  ẛ: 's',
  ς: 'σ',
  ϐ: 'β',
  ϑ: 'θ',
  ϕ: 'φ',
  ϖ: 'π',
  ϰ: 'κ',
  ϱ: 'ρ',
  ϵ: 'ε',
  Ǡ: 'ǡ',
  ǡ: 'ǡ',
  Ϳ: 'Ϳ',
  '\u212b': 'a',
};
const asciiLetter = /^[a-z]/;

/**
 * One character as unicode61 folds it: lowercased; diacritics are removed
 * from Latin letters with an ASCII base only (Greek and Cyrillic keep theirs,
 * as do letters such as ø); a combining diacritic inside a token is dropped.
 */
function foldChar(c: string): string {
  const special = folded[c];
  if (special !== undefined) return special;
  const code = c.codePointAt(0)!;
  if (isDiacritic(code)) return '';
  const lower = c.toLowerCase();
  if (code >= 0x250 && (code < 0x1e00 || code > 0x1eff)) return lower;
  const decomposed = lower.normalize('NFD');
  return asciiLetter.test(decomposed) ? decomposed.replace(combining, '') : lower;
}

/** Combining marks unicode61 lets continue a token (sqlite3Fts5UnicodeIsdiacritic). */
function isDiacritic(code: number): boolean {
  if (code < 768 || code > 817) return false;
  return code < 800 ? (0x08029fdf & (1 << (code - 768))) !== 0 : (0x000361f8 & (1 << (code - 800))) !== 0;
}

/** Letters and digits of ASCII: what a token is made of there. */
const asciiToken = new Uint8Array(128).map((_, c) => (/[0-9A-Za-z]/.test(String.fromCharCode(c)) ? 1 : 0));

/** Token characters of the Basic Multilingual Plane, classified as met: 0 not yet, 1 token, 2 not. */
const bmpToken = new Uint8Array(0x10000);

/** Is the character at `i` (of UTF-16 code `code`) a token character? */
function isTokenAt(text: string, i: number, code: number): boolean {
  if (code < 128) return asciiToken[code] === 1;
  if (code >= 0xd800 && code < 0xe000) return tokenChar.test(String.fromCodePoint(text.codePointAt(i)!));
  let known = bmpToken[code]!;
  if (known === 0) {
    known = tokenChar.test(String.fromCharCode(code)) ? 1 : 2;
    bmpToken[code] = known;
  }
  return known === 1;
}

/**
 * Token boundaries as UTF-16 offsets: token `i` is `starts[i]` up to
 * `ends[i]`; -1 for a token skipped over (counted, never read).
 */
type Tokens = { starts: number[]; ends: number[]; count: number };

// A stretch with no possible match is skipped when longer than this many
// characters; tokenizing resumes this far before the next possible match.
const SKIP_CHARS = 600;
const RESUME_CHARS = 300;
/** Tokens a skipped stretch counts as: more than any window reaches across. */
const SKIPPED_TOKENS = 64;

/**
 * The text's tokens. With a finder, only those near possible matches are
 * read: a window and its scoring look at most two windows away from a
 * match, so a long stretch without one counts as `SKIPPED_TOKENS` unread
 * tokens, and the text after the last possible match as many again.
 */
function tokenize(text: string, finder: RegExp | null = null, maxTokens = 0): Tokens {
  const starts: number[] = [];
  const ends: number[] = [];
  const length = text.length;
  let horizon = finder === null ? length : -1; // the last possible match found
  let past = 0; // tokens read since the horizon
  let i = 0;
  while (i < length) {
    const code = text.charCodeAt(i);
    if (code < 128 ? asciiToken[code] !== 1 : !isTokenAt(text, i, code)) {
      i += code >= 0xd800 && code < 0xdc00 ? 2 : 1;
      continue;
    }
    if (finder !== null && i > horizon && past >= 2 * maxTokens) {
      // From just past the horizon: a possible match among the tokens read since needs its tokens after it too.
      const next = nextCandidate(finder, text, horizon + 1);
      if (next >= 0 && next < i) {
        horizon = next;
        past = 0;
      } else if (next < 0) {
        skip(starts, ends);
        break;
      } else {
        horizon = next;
        past = 0;
      }
      if (next - i > SKIP_CHARS) {
        skip(starts, ends);
        i = next - RESUME_CHARS;
        while (i < length && (isTokenAt(text, i, text.charCodeAt(i)) || isDiacritic(text.charCodeAt(i)))) i++; // off a token cut in two
        continue;
      }
    }
    starts.push(i);
    if (i > horizon) past++;
    i += code >= 0xd800 && code < 0xdc00 ? 2 : 1;
    while (i < length) {
      const c = text.charCodeAt(i);
      if (c < 128) {
        if (asciiToken[c] !== 1) break;
        i++;
        continue;
      }
      if (!isTokenAt(text, i, c) && !isDiacritic(c)) break;
      i += c >= 0xd800 && c < 0xdc00 ? 2 : 1;
    }
    ends.push(i);
  }
  return { starts, ends, count: starts.length };
}

/** A skipped stretch: `SKIPPED_TOKENS` tokens that are counted, never read. */
function skip(starts: number[], ends: number[]): void {
  for (let k = 0; k < SKIPPED_TOKENS; k++) {
    starts.push(-1);
    ends.push(-1);
  }
}

/** Where the next possible match begins at or after `from` (-1: none). */
function nextCandidate(finder: RegExp, text: string, from: number): number {
  finder.lastIndex = from;
  return finder.exec(text)?.index ?? -1;
}

/** Latin letters that fold to each ASCII letter (built once). */
let foldingTo: Map<string, string> | undefined;
const finders = new Map<string, RegExp | null>();

/**
 * A pattern for where the phrases' first tokens could begin: each letter
 * as any character that folds to it, diacritics after it allowed. Only
 * places the tokenizer looks: the tokens there decide. Null (read every
 * token) when a first token is not ASCII.
 */
function finderOf(phrases: readonly Phrase[]): RegExp | null {
  const key = phrases.map((p) => p.tokens[0]).join(' ');
  let finder = finders.get(key);
  if (finder !== undefined) return finder;
  if (foldingTo === undefined) {
    foldingTo = new Map();
    for (const [lo, hi] of [
      [0x80, 0x24f],
      [0x1e00, 0x1eff],
      [0x2100, 0x214f],
    ] as const) {
      for (let c = lo; c <= hi; c++) {
        const f = foldChar(String.fromCharCode(c));
        if (f.length === 1 && f.charCodeAt(0) < 128) foldingTo.set(f, (foldingTo.get(f) ?? '') + String.fromCharCode(c));
      }
    }
  }
  const firsts = phrases.map((p) => p.tokens[0]!);
  if (firsts.some((t) => !isAscii(t, 0, t.length))) finder = null;
  else {
    const letters = (t: string) => [...t].map((c) => `[${c}${c.toUpperCase()}${foldingTo!.get(c) ?? ''}][\u0300-\u036f]*`).join('');
    finder = new RegExp(firsts.map(letters).join('|'), 'g');
  }
  if (finders.size >= 256) finders.clear();
  finders.set(key, finder);
  return finder;
}

type Hit = { at: number; phrase: number };

/** Every phrase match as (first token, phrase), in token order, then phrase order (as xInst lists them). */
function instances(text: string, tokens: Tokens, phrases: readonly Phrase[]): Hit[] {
  const hits: Hit[] = [];
  const firsts = phrases.map((p) => p.tokens[0]!);
  for (let at = 0; at < tokens.count; at++) {
    for (let p = 0; p < phrases.length; p++) {
      const phrase = phrases[p]!;
      const n = phrase.tokens.length;
      if (!tokenIs(text, tokens, at, firsts[p]!, phrase.prefix && n === 1)) continue;
      if (at + n > tokens.count) continue;
      let k = 1;
      while (k < n && tokenIs(text, tokens, at + k, phrase.tokens[k]!, phrase.prefix && k === n - 1)) k++;
      if (k === n) hits.push({ at, phrase: p });
    }
  }
  return hits;
}

/**
 * Does token `i` fold to `want` (or, a prefix, start with it)? Compared where
 * it lies while the token is ASCII (an ASCII letter folds to one character,
 * by case alone); a token with other characters is folded first.
 */
function tokenIs(text: string, tokens: Tokens, i: number, want: string, prefix: boolean): boolean {
  const start = tokens.starts[i]!;
  if (start < 0) return false;
  const end = tokens.ends[i]!;
  let k = 0;
  for (; k < want.length && start + k < end; k++) {
    const c = text.charCodeAt(start + k);
    if (c >= 128) return foldsTo(text.slice(start, end), want, prefix);
    if ((c | 0x20) !== want.charCodeAt(k)) return false;
  }
  if (k < want.length) return false;
  if (prefix || start + k === end) return true;
  return text.charCodeAt(start + k) >= 128 && foldsTo(text.slice(start, end), want, prefix);
}

function foldsTo(token: string, want: string, prefix: boolean): boolean {
  const folded = fold(token);
  return prefix ? folded.startsWith(want) : folded === want;
}

function isAscii(text: string, start: number, end: number): boolean {
  for (let i = start; i < end; i++) if (text.charCodeAt(i) > 127) return false;
  return true;
}

/**
 * A window's score (1000 per distinct phrase in it, 1 per repeat) and where
 * a window centred on its matches would start (fts5SnippetScore).
 */
function score(hits: readonly Hit[], phrases: readonly Phrase[], from: number, maxTokens: number): { score: number; adjusted: (size: number) => number } {
  const seen = new Set<number>();
  let total = 0;
  let first = -1;
  let last = 0;
  for (const hit of hits) {
    if (hit.at < from || hit.at >= from + maxTokens) continue;
    total += seen.has(hit.phrase) ? 1 : 1000;
    seen.add(hit.phrase);
    if (first < 0) first = hit.at;
    last = hit.at + phrases[hit.phrase]!.tokens.length;
  }
  return {
    score: total,
    adjusted: (size) => {
      let adjusted = first - Math.trunc((maxTokens - (last - first)) / 2);
      if (adjusted + maxTokens > size) adjusted = size - maxTokens;
      return Math.max(0, adjusted);
    },
  };
}

/**
 * The last token at or before `at` that begins a sentence: the first token,
 * or one after `.` or `:` and white space (fts5SentenceFinderCb); -1 when
 * it lies beyond a skipped stretch (its window would hold no match).
 */
function sentenceStartBefore(text: string, tokens: Tokens, at: number): number {
  for (let t = at; t > 0; t--) {
    if (tokens.starts[t]! < 0) return -1;
    let i = tokens.starts[t]! - 1;
    while (i >= 0 && isBlank(text.charCodeAt(i))) i--;
    const c = text.charCodeAt(i);
    if (i !== tokens.starts[t]! - 1 && (c === 46 || c === 58)) return t;
  }
  return 0;
}

function isBlank(code: number): boolean {
  return code === 32 || code === 9 || code === 10 || code === 13;
}

type Span = { first: number; last: number };

/** Matched token spans, overlapping ones merged (fts5CInstIterNext). */
function spansOf(hits: readonly Hit[], phrases: readonly Phrase[]): Span[] {
  const spans: Span[] = [];
  for (const hit of hits) {
    const last = hit.at + phrases[hit.phrase]!.tokens.length - 1;
    const open = spans[spans.length - 1];
    if (open !== undefined && hit.at <= open.last) open.last = Math.max(open.last, last);
    else spans.push({ first: hit.at, last });
  }
  return spans;
}

/** Tokens `first`…`last` of the text with the spans in it marked (fts5HighlightCb over a range). */
function highlighted(text: string, tokens: Tokens, spans: readonly Span[], first: number, last: number): string {
  const size = tokens.count;
  let out = first > 0 ? ELLIPSIS : '';
  let offset = first > 0 ? tokens.starts[first]! : 0;
  let s = spans.findIndex((span) => span.first >= first);
  if (s < 0) s = spans.length;
  for (let t = first; t <= last && t < size; t++) {
    const span = spans[s];
    if (span !== undefined && t === span.first) {
      out += text.slice(offset, tokens.starts[t]) + MARK;
      offset = tokens.starts[t]!;
    }
    if (span !== undefined && t === span.last) {
      out += text.slice(offset, tokens.ends[t]) + MARK;
      offset = tokens.ends[t]!;
      s++;
    }
    if (t === last) {
      out += text.slice(offset, tokens.ends[t]);
      offset = tokens.ends[t]!;
      const open = spans[s];
      if (open !== undefined && t >= open.first && t < open.last) out += MARK;
    }
  }
  return last >= size - 1 ? out + text.slice(offset) : out + ELLIPSIS;
}
