/**
 * Every caller's text that reaches a full-text MATCH goes through one
 * function (`ftsString`, actors/mail-query/fts-string.ts): a table of
 * hostile strings — NUL and other control characters, quotes, FTS5
 * operators, column filters, unbalanced parentheses, empty, white space,
 * very long, lone surrogates — each run against the real FTS5 index as a
 * string, as a search query (query-syntax.ts) and as a sender or recipient
 * narrowing (search.ts), and through `search_emails` itself: never an FTS5
 * syntax error; either an answer or the documented refusal (51001).
 * docs/mcp-query-syntax.md, "Hostile text".
 */
import t from 'tap';
import { ftsString } from '../../../actors/mail-query/fts-string.ts';
import { compileQuery } from '../../../actors/mail-query/query-syntax.ts';
import { addressNarrowing } from '../../../actors/mail-query/addresses.ts';
import type { SearchEmailsResult } from '../../../actors/mail-query/protocol/mail-reads.ts';
import { ask, deliver, refusalCode, world, type World } from './fixtures.ts';

const HOSTILE: ReadonlyArray<[name: string, text: string]> = [
  ['NUL at the end', 'a@b\u0000'],
  ['NUL alone', '\u0000'],
  ['NUL inside a word', 'bud\u0000get'],
  ['NUL then a quote', 'x\u0000"'],
  ['other control characters', 'a\u0001b\u001fc\u007fd\u0085e'],
  ['a lone double quote', '"'],
  ['two double quotes', '""'],
  ['an unbalanced phrase', '"budget report'],
  ['a doubled quote inside', 'a""b'],
  ['a single quote', "o'brien"],
  ['SQL in text', "'; DROP TABLE messages; --"],
  ['AND', 'budget AND report'],
  ['OR', 'budget OR report'],
  ['NOT', 'NOT budget'],
  ['NEAR', 'NEAR(budget report, 2)'],
  ['NEAR alone', 'NEAR'],
  ['a star alone', '*'],
  ['a prefix star', 'budg*'],
  ['a caret', '^budget'],
  ['a plus', 'budget + report'],
  ['a minus', '-budget'],
  ['a column filter', 'subject:budget'],
  ['a column set', '{subject from_text} : budget'],
  ['a negated column filter', '- subject : budget'],
  ['an opening parenthesis', '('],
  ['a closing parenthesis', ')'],
  ['unbalanced parentheses', '((budget) OR (report'],
  ['empty', ''],
  ['white space only', ' \t\n\u00a0\u2028'],
  ['punctuation only', '!?.,;:'],
  ['very long', `${'budget '.repeat(20_000)}x`],
  ['one very long word', 'b'.repeat(100_000)],
  ['a lone high surrogate', 'budget\uD800'],
  ['a lone low surrogate', '\uDC00report'],
  ['lone surrogates only', '\uD800\uDC00\uDC00\uD800'.slice(1)],
  ['an emoji pair', 'budget 🧾'],
  ['zero-width and BOM', '\u200bbud\ufeffget\u200d'],
  ['a backslash', 'budget\\'],
  ['a non-character', 'budget\uffff'],
];

function populated(t: Parameters<typeof world>[0]): World {
  const w = world(t);
  deliver(w.db, 'alice', w.bindings.aliceInbox, [
    { uid: 1, subject: 'Quarterly budget report', from: 'Finance <finance@corp.example>', body: 'Please find the numbers attached.' },
    { uid: 2, subject: 'Lunch', body: 'We discussed the budget over lunch with O Brien.' },
  ]);
  return w;
}

/** Runs a MATCH expression against the real index; 'ran' or SQLite's error message. */
function runs(w: World, expression: string): string {
  try {
    w.db.prepare('SELECT count(*) AS n FROM search_index WHERE search_index MATCH ?').get([expression]);
    return 'ran';
  } catch (err) {
    return (err as Error).message;
  }
}

t.test('ftsString: one FTS5 string, or null when nothing in it can match', async (t) => {
  t.equal(ftsString('budget'), '"budget"');
  t.equal(ftsString('a"b'), '"a""b"', 'inner quotes doubled');
  t.equal(ftsString('a@b\u0000'), '"a@b "', 'a NUL is read as a space');
  t.equal(ftsString('x\uD800'), '"x\uFFFD"', 'a lone surrogate is U+FFFD');
  t.equal(ftsString('subject:x'), '"subject:x"', 'a column filter stays text');
  for (const empty of ['', '   ', '"', '()', '*', '\u0000', '\uD800', '!?']) t.equal(ftsString(empty), null, `null: ${JSON.stringify(empty)}`);
});

t.test('each hostile string reaches the index as a string and runs', async (t) => {
  const w = populated(t);
  for (const [name, text] of HOSTILE) {
    const quoted = ftsString(text);
    if (quoted !== null) t.equal(runs(w, quoted), 'ran', `as a string: ${name}`);
    // As a query: compiled (its operators are ours) or refused as invalid input, never an FTS5 error.
    let compiled: string | null = null;
    const code = refusalCode(() => {
      compiled = compileQuery(text);
    });
    if (code === 'answered') t.equal(runs(w, compiled!), 'ran', `as a query: ${name}`);
    else t.equal(code, 'E_TOOL_INVALID_INPUT', `as a query, refused: ${name}`);
    // As an address narrowing.
    const narrowing = addressNarrowing({ senderAddress: text, recipientAddress: text });
    if (narrowing !== null) t.equal(runs(w, narrowing), 'ran', `as an address narrowing: ${name}`);
  }
});

t.test('operators, column filters and quotes in text are words, not syntax', async (t) => {
  const w = populated(t);
  const matches = (expression: string): number =>
    (w.db.prepare('SELECT count(*) AS n FROM search_index WHERE search_index MATCH ?').get([expression]) as { n: number }).n;
  t.equal(matches(ftsString('NOT budget')!), 0, '"NOT budget" is a phrase: no email holds the word not');
  t.equal(matches(ftsString('budget OR nothing')!), 0, 'OR is a word here, and no email holds it');
  t.equal(matches(ftsString('quarterly:budget')!), 1, 'a column filter is a phrase of two words, in any column');
  t.equal(matches(ftsString("o'brien")!), 1, 'a single quote splits the words');
});

t.test('search_emails answers every hostile query text and address, or refuses it as invalid input', async (t) => {
  const w = populated(t);
  const search = (input: Record<string, unknown>): string =>
    refusalCode(() => ask<SearchEmailsResult>(w, { type: 'mail-query.search', input: input as { queryText: string } }));
  for (const [name, text] of HOSTILE) {
    // (The empty text never gets here: the tool's schema refuses it, 51001.)
    if (text !== '') {
      const asQuery = search({ queryText: text.slice(0, 500) });
      t.ok(['answered', 'E_TOOL_INVALID_INPUT'].includes(asQuery), `queryText ${name}: ${asQuery}`);
    }
    // An address the schema admits: no white space or @ in the local part, a domain after the @.
    const local = text.slice(0, 300).replace(/[\s@]/gu, '');
    for (const member of ['senderAddress', 'recipientAddress']) {
      t.equal(search({ queryText: 'budget', [member]: `${local}@b\u0000` }), 'answered', `${member} ${name}`);
    }
  }
  const answer = ask<SearchEmailsResult>(w, { type: 'mail-query.search', input: { queryText: 'budget', senderAddress: 'a@b\u0000' } });
  t.same(answer.matches, [], 'the address of the held-out run matches nothing, as list_emails says');
});
