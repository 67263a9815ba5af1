/**
 * search_emails: the query syntax compiles to a safe FTS5 expression (user
 * text never acts as FTS5 syntax), phrases, words, prefixes, OR and
 * exclusions select and rank as documented (subject and sender first, then
 * newest first), the listing filters and the
 * scope apply, snippets mark matched terms, the result limit is refused
 * above 50, and the ranking query walks the full-text index in key order.
 */
import t from 'tap';
import { compileQuery } from '../../../actors/mail-query/query-syntax.ts';
import { narrowedByAddress } from '../../../actors/mail-query/addresses.ts';
import { keyRange, rankingQuery } from '../../../actors/mail-query/search.ts';
import { filterClauses } from '../../../actors/mail-query/filters.ts';
import { SearchEmailsInput, type SearchEmailsResult } from '../../../actors/mail-query/protocol/mail-reads.ts';
import { tombstone } from '../../../runtime/store/mailbox/server-changes.ts';
import { many } from '../../../runtime/store/rows.ts';
import type { TestLike } from '../../runtime/store/fixtures/scratch.ts';
import { ask, deliver, HOUR, refusalCode, T0, world, type Mail, type World } from './fixtures.ts';

const alice: Mail[] = [
  { uid: 1, subject: 'Quarterly budget report', from: 'Finance <finance@corp.example>', body: 'Please find the numbers attached.' },
  { uid: 2, subject: 'Lunch', body: 'We discussed the budget and the quarterly numbers over lunch.' },
  { uid: 3, subject: 'Budgeting tips', body: 'Some budgeting advice for the new year.' },
  { uid: 4, subject: 'Holiday plans', body: 'Trip to Lisbon in May.' },
  {
    uid: 5,
    subject: 'Invoice',
    body: 'Invoice for services rendered.',
    attachment: { filename: 'invoice-2025.pdf', contentType: 'application/pdf', content: '%PDF' },
  },
  { uid: 6, subject: 'Lisbon hotel', from: 'Travel Agency <trips@travel.example>', body: 'Hotel booking confirmed.', flags: ['\\Seen'] },
  { uid: 7, subject: 'Réunion', body: 'Réunion à Genève mardi prochain.' },
  {
    uid: 8,
    subject: 'Weekend',
    body: `${'Filler text about many unrelated things. '.repeat(20)}The hotel was fine, thanks for asking. ${'More filler after the match. '.repeat(20)}`,
  },
  { uid: 9, subject: 'Huge hotel brochure', state: 'oversized' },
];
const bob: Mail[] = [{ uid: 1, subject: 'Quarterly budget report for Bob', body: 'Numbers for bob.' }];

function populated(t: TestLike): World {
  const w = world(t);
  deliver(w.db, 'alice', w.bindings.aliceInbox, alice);
  deliver(w.db, 'bob', w.bindings.bobInbox, bob);
  return w;
}

function search(w: World, input: Record<string, unknown>): SearchEmailsResult {
  return ask<SearchEmailsResult>(w, { type: 'mail-query.search', input: input as { queryText: string } });
}

function found(w: World, queryText: string, extra: Record<string, unknown> = {}): string[] {
  return search(w, { queryText, ...extra }).matches.map((m) => m.subject ?? '');
}

t.test('the query syntax compiles to a quoted FTS5 expression', async (t) => {
  t.equal(compileQuery('budget report'), '"budget" AND "report"', 'bare words: all');
  t.equal(compileQuery('"quarterly budget"'), '"quarterly budget"', 'a phrase');
  t.equal(compileQuery('budg*'), '"budg" *', 'a prefix');
  t.equal(
    refusalCode(() => compileQuery('bu*')),
    'E_TOOL_INVALID_INPUT',
    'a prefix of two characters',
  );
  t.equal(
    refusalCode(() => compileQuery('-x*')),
    'E_TOOL_INVALID_INPUT',
    'also when excluded',
  );
  t.equal(compileQuery('"the bud"*'), '"the bud" *', 'a phrase prefix counts its last token');
  t.equal(compileQuery('"quarterly bud"*'), '"quarterly bud" *', 'a phrase ending in a prefix');
  t.equal(compileQuery('invoice paid OR overdue'), '"invoice" AND ("paid" OR "overdue")', 'OR binds tighter than AND');
  t.equal(compileQuery('a OR b OR c'), '("a" OR "b" OR "c")');
  t.equal(compileQuery('budget -lunch -"new year"'), '("budget") NOT ("lunch" OR "new year")', 'exclusions');
  t.equal(compileQuery('or and not near'), '"or" AND "and" AND "not" AND "near"', 'lower-case operator words are words');
  t.equal(compileQuery('OR budget OR'), '"budget"', 'a dangling OR is ignored');
  t.equal(compileQuery('a"b'), '"a" AND "b"', 'a quote starts a phrase');
  t.equal(compileQuery('say "hello'), '"say" AND "hello"', 'an unclosed quote runs to the end');
  t.equal(compileQuery('NEAR(a b)'), '"NEAR(a" AND "b)"', 'FTS5 syntax in user text stays text');
  t.equal(compileQuery('subject:x col:*'), '"subject:x" AND "col:" *', 'column filters stay text');
  t.equal(compileQuery('"a ""b"" c"'), '"a " AND "b" AND " c"', 'quotes end phrases; no escape reaches FTS5 unquoted');
  t.equal(compileQuery('x - y'), '"x" AND "y"', 'a lone minus is no exclusion');
  for (const refused of ['', '   ', '!!!', '-budget', '-a -"b c"', 'OR', '*', '"', '- -']) {
    t.equal(
      refusalCode(() => compileQuery(refused)),
      'E_TOOL_INVALID_INPUT',
      `refused: ${JSON.stringify(refused)}`,
    );
  }
  t.equal(
    refusalCode(() => compileQuery(Array.from({ length: 33 }, (_, i) => `w${i}`).join(' '))),
    'E_TOOL_INVALID_INPUT',
    'too many terms',
  );
});

t.test('hostile and odd queries run without an FTS5 syntax error', async (t) => {
  const w = populated(t);
  for (const text of [
    'a"b',
    'NEAR(a b)',
    '^budget',
    'budget + report',
    'AND',
    'NOT budget',
    '***budget',
    'col:budget',
    "'; DROP TABLE messages; --",
    'e-mail',
    'ann@example.org',
    '\u0000x',
    'x\u0000"',
    'bud\u0000get*',
  ]) {
    t.equal(
      refusalCode(() => search(w, { queryText: text })),
      'answered',
      JSON.stringify(text),
    );
  }
});

t.test('phrases, words, prefixes, OR and exclusions select and rank', async (t) => {
  const w = populated(t);
  const inAlice = { accounts: ['alice'] };
  t.same(found(w, '"quarterly budget"', inAlice), ['Quarterly budget report'], 'a phrase needs the words adjacent and in order');
  t.same(found(w, 'quarterly budget', inAlice), ['Quarterly budget report', 'Lunch'], 'words anywhere; the subject match ranks first');
  t.same(found(w, 'budget', inAlice).sort(), ['Lunch', 'Quarterly budget report'], 'no stemming: budgeting is another word');
  t.same(found(w, 'budget*', inAlice).sort(), ['Budgeting tips', 'Lunch', 'Quarterly budget report'], 'a prefix');
  t.same(found(w, 'lisbon OR invoice', inAlice).sort(), ['Holiday plans', 'Invoice', 'Lisbon hotel']);
  t.same(found(w, 'budget -lunch', inAlice), ['Quarterly budget report'], 'an exclusion');
  t.same(found(w, 'budget -attached', inAlice), ['Lunch'], 'an exclusion applies to the whole email, also when its subject matched');
  t.same(found(w, 'budget* -"new year" -lunch', inAlice), ['Quarterly budget report'], 'a phrase exclusion');
  t.same(found(w, 'geneve reunion'), ['Réunion'], 'diacritics and case are folded');
  t.same(found(w, 'trips'), ['Lisbon hotel'], 'the sender is indexed');
  t.same(found(w, '"invoice 2025"'), ['Invoice'], 'attachment names are indexed');
  t.same(found(w, 'hotel'), ['Lisbon hotel', 'Weekend'], 'a subject match outranks a body-only one; oversized mail has no text');
  t.same(found(w, 'numbers', inAlice), ['Lunch', 'Quarterly budget report'], 'within a group, newest first');
  t.same(found(w, 'numbers', { ...inAlice, receivedBefore: new Date(T0 + 1.5 * HOUR).toISOString() }), ['Quarterly budget report'], 'a received-time range');
  t.same(found(w, 'numbers', { ...inAlice, receivedOnOrAfter: new Date(T0 + 2 * HOUR).toISOString() }), ['Lunch'], 'inclusive from');
  const ranked = search(w, { queryText: 'quarterly budget' });
  t.same(
    ranked.matches.map((m) => m.rank),
    [1, 2, 3],
    'rank is the position, best first',
  );
  t.equal(ranked.retrievalMode, 'lexical');
  t.equal(ranked.semanticSearch, 'inactive');
  t.same(
    ranked.folderFreshness.map((f) => `${f.accountId}/${f.folderAlias}`),
    ['alice/inbox', 'alice/archive', 'bob/inbox'],
  );
});

t.test('filters and scope apply to search', async (t) => {
  const w = populated(t);
  t.same(found(w, 'hotel', { isSeen: false }), ['Weekend']);
  t.same(found(w, 'hotel', { senderAddress: '@travel.example' }), ['Lisbon hotel']);
  t.same(found(w, 'quarterly budget', { accounts: ['bob'] }), ['Quarterly budget report for Bob']);
  t.same(found(w, 'quarterly budget', { folders: ['archive'] }), [], 'the archive holds nothing');
  t.same(found(w, 'budget', { hasAttachments: true }), []);
  t.same(found(w, 'invoice', { hasAttachments: true }), ['Invoice']);
  t.same(found(w, 'budget', { subjectFragment: 'lunch' }), ['Lunch']);
  t.equal(
    refusalCode(() => search(w, { queryText: 'budget', accounts: ['carol'] })),
    'E_NOT_FOUND',
  );
  const aliceOnly = { accounts: [{ id: 'alice', folders: ['inbox'] }] };
  const scoped = ask<SearchEmailsResult>(w, { type: 'mail-query.search', scope: aliceOnly, input: { queryText: 'quarterly budget' } });
  t.same(
    scoped.matches.map((m) => m.accountId),
    ['alice', 'alice'],
    "another owner's mail never matches",
  );
  tombstone(w.db, w.bindings.aliceInbox, 7, [6], 'expunged', 1);
  t.same(found(w, 'hotel'), ['Weekend'], 'tombstoned mail is not found');
});

t.test('address filters narrow inside the index and keep their exact meaning', async (t) => {
  const w = world(t);
  deliver(w.db, 'alice', w.bindings.aliceInbox, [
    { uid: 1, subject: 'Hotel one', from: 'Travel Agency <trips@travel.example>', body: 'hotel' },
    { uid: 2, subject: 'Hotel two', from: 'TRIPS <TRIPS@Travel.Example>', body: 'hotel' },
    { uid: 3, subject: 'Hotel three', from: 'trips travel example <other@elsewhere.example>', body: 'hotel' },
    { uid: 4, subject: 'Hotel four', from: 'Agency <trips@sub.travel.example>', body: 'hotel' },
    { uid: 5, subject: 'Hotel five', from: 'Agency <desk@travel.example>', to: ['Trips <trips@travel.example>'], body: 'hotel' },
  ]);
  t.same(
    found(w, 'hotel', { senderAddress: 'trips@travel.example' }).sort(),
    ['Hotel one', 'Hotel two'],
    'exact address, any case; a display name holding its words is not it',
  );
  t.same(found(w, 'hotel', { senderAddress: '@travel.example' }).sort(), ['Hotel five', 'Hotel one', 'Hotel two'], 'a domain, not its subdomains');
  t.same(found(w, 'hotel', { recipientAddress: 'trips@travel.example' }), ['Hotel five']);
  t.same(found(w, 'hotel', { senderAddress: '@.' }), [], 'an address with no letters narrows nothing and matches nothing');
  t.equal(narrowedByAddress('"hotel"', { senderAddress: 'a"b@x.example' }), '("hotel") AND from_text : "a""b@x.example"', 'quotes doubled');
  t.equal(narrowedByAddress('"hotel"', {}), '"hotel"');
});

t.test('snippets are short, mark the matched terms, and are left out when nothing in them matched', async (t) => {
  const w = populated(t);
  const weekend = search(w, { queryText: 'hotel' }).matches.find((m) => m.subject === 'Weekend')!;
  t.equal(weekend.snippets?.length, 1);
  const snippet = weekend.snippets![0]!;
  t.match(snippet, /\*\*hotel\*\*/, 'the term is marked');
  t.match(snippet, /^….*…$/, 'cut on both sides');
  t.ok(snippet.split(/\s+/).length <= 14, `at most 12 tokens: ${snippet}`);
  const invoice = search(w, { queryText: '"invoice 2025"' }).matches[0]!;
  t.same(invoice.snippets, ['**invoice-2025**.pdf'], 'a matched attachment name (a phrase is marked as one span)');
  const holiday = search(w, { queryText: 'holiday' }).matches[0]!;
  t.notOk('snippets' in holiday, 'a subject-only match has no excerpt');
});

t.test('the result limit: default 20, at most 50, refused above', async (t) => {
  const w = populated(t);
  t.equal(
    refusalCode(() => search(w, { queryText: 'budget', resultLimit: 51 })),
    'E_TOOL_RESULT_LIMIT',
  );
  t.equal(search(w, { queryText: 'budget', resultLimit: 50 }).matches.length, 3);
  t.equal(search(w, { queryText: 'budget', resultLimit: 1 }).matches.length, 1);
  t.ok(SearchEmailsInput.safeParse({ queryText: 'x', resultLimit: 51 }).success, 'the schema leaves 51 to the search (51003)');
  t.notOk(SearchEmailsInput.safeParse({ queryText: 'x', resultLimit: 0 }).success, '0 is invalid input (51001)');
  t.notOk(SearchEmailsInput.safeParse({ queryText: 'x', resultLimit: -3 }).success);
  t.equal(SearchEmailsInput.parse({ queryText: 'x' }).resultLimit, 20);
  t.equal(
    refusalCode(() => search(w, { queryText: '-budget' })),
    'E_TOOL_INVALID_INPUT',
    'exclusions alone',
  );
});

t.test('the ranking query walks the full-text index in key order and joins by primary key', async (t) => {
  const w = populated(t);
  const q = rankingQuery(
    'search_index',
    compileQuery('budget -lunch'),
    null,
    [w.bindings.aliceInbox, w.bindings.bobInbox],
    filterClauses({ isSeen: false, senderAddress: '@corp.example', receivedOnOrAfter: '2025-03-01T00:00:00Z' }),
    keyRange({ receivedOnOrAfter: '2025-03-01T00:00:00Z' }),
    20,
  );
  const plan = many<{ detail: string }>(w.db.prepare(`EXPLAIN QUERY PLAN ${q.sql}`), q.params).map((r) => r.detail);
  const top = plan.filter((d) => !d.startsWith('CORRELATED') && !d.includes('json_each'));
  t.match(top[0] ?? '', /^SCAN search_index VIRTUAL TABLE INDEX/, String(top[0]));
  t.match(top[1] ?? '', /^SEARCH k USING INTEGER PRIMARY KEY \(rowid=\?\)/, String(top[1]));
  t.match(top[2] ?? '', /^SEARCH m USING INTEGER PRIMARY KEY \(rowid=\?\)/, String(top[2]));
  t.notOk(
    plan.some((d) => d.startsWith('USE TEMP B-TREE')),
    'no sorter: the walk stops after the first matches in scope',
  );
});
