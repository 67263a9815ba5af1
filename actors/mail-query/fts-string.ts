/**
 * The one way a caller's text reaches a full-text (FTS5) MATCH expression:
 * as an FTS5 string, `"…"` with inner quotes doubled. Inside a string FTS5
 * reads no syntax at all — `AND`, `OR`, `NOT`, `NEAR`, `*`, `^`, `+`, `-`,
 * `:` column filters and parentheses are plain characters the tokenizer
 * (unicode61) splits on or drops — so the only operators of an expression
 * are the ones the caller of this function writes around it
 * (query-syntax.ts, search.ts).
 *
 * What a string cannot hold is made harmless first:
 * - control characters are read as spaces: SQLite hands the expression to
 *   FTS5 as a C string, so a NUL ends it inside the quotes ("unterminated
 *   string", issue 30), and no control character is ever part of a token;
 * - a lone surrogate (JavaScript strings may hold one; UTF-8 cannot) is
 *   U+FFFD, as SQLite's binding would store it.
 * A text left without a letter or digit names no token and would match
 * nothing (or, as an empty string, be an FTS5 syntax error): null, and the
 * caller drops the term or refuses the input (docs/mcp-query-syntax.md).
 *
 * Pure. Importable by modules of `actors/mail-query/` only.
 */

const CONTROL = /\p{Cc}/gu;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const TOKEN_CHARACTER = /[\p{L}\p{N}]/u;

/** The text as one FTS5 string, or null when it holds no letter or digit to match. */
export function ftsString(text: string): string | null {
  const clean = ftsText(text);
  if (!TOKEN_CHARACTER.test(clean)) return null;
  return `"${clean.replaceAll('"', '""')}"`;
}

/** The text as FTS5 will read it inside a string: control characters as spaces, lone surrogates as U+FFFD. */
export function ftsText(text: string): string {
  return text.replace(CONTROL, ' ').replace(LONE_SURROGATE, '\uFFFD');
}
