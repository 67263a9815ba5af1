/**
 * search_emails, hybrid (issue 15): with the query placed by the serving
 * generation, the pool ranks both ways and fuses (RRF, lexical weight 2).
 * A real store with mail written as the sync actor writes it, a generation
 * begun and promoted, and hand-made vectors whose nearest neighbours are
 * unambiguous: one axis per topic, a small offset that orders the
 * neighbours of one topic.
 *
 * What an agent notices: a paraphrase that shares no word with the query is
 * found; a keyword hit stays first; the filters, the scope and the query's
 * exclusions hold for what the vectors find; the order is the same every
 * time; `retrievalMode`, `semanticSearch` and `semanticCoverage` say what
 * answered.
 */
import t from 'tap';
import { fuse, LEXICAL_WEIGHT, VECTOR_WEIGHT } from '../../../actors/mail-query/search.ts';
import type { SearchEmailsResult } from '../../../actors/mail-query/protocol/mail-reads.ts';
import type { SummaryRow } from '../../../actors/mail-query/summary.ts';
import { loadIndex } from '../../../actors/mail-query/vector-index.ts';
import { beginGeneration, promoteGeneration, writeVectors } from '../../../runtime/store/mailbox/vectors.ts';
import { many } from '../../../runtime/store/rows.ts';
import type { TestLike } from '../../runtime/store/fixtures/scratch.ts';
import { ask, deliver, HOUR, idOf, T0, world, type Mail, type World } from './fixtures.ts';

const DIMENSIONS = 6;
/** Topics: one axis each; axis 5 carries the offset that orders neighbours. */
const BILLING = 0;
const TRAVEL = 1;
const FOOD = 2;

function vectorOf(topic: number, offset = 0): Float32Array<ArrayBuffer> {
  const v = new Float32Array(DIMENSIONS);
  v[topic] = 1;
  v[5] = offset;
  return v;
}

type Filed = Mail & { topic: number; offset?: number };

// Alice's inbox: one keyword hit for "invoice", paraphrases of billing that share no word with it.
const inbox: Filed[] = [
  { uid: 1, subject: 'Invoice March', body: 'The invoice for March is attached.', topic: BILLING, offset: 0.3 },
  { uid: 2, subject: 'Payment reminder', body: 'Please settle the outstanding amount soon.', topic: BILLING, offset: 0.05 },
  { uid: 3, subject: 'Your bill', from: 'Shop <shop@store.example>', body: 'What you owe us this month.', topic: BILLING, offset: 0.1, flags: ['\\Flagged'] },
  { uid: 4, subject: 'Holiday plans', body: 'Trip to Lisbon in May.', topic: TRAVEL },
  { uid: 5, subject: 'Lunch', body: 'Soup and bread on Friday.', topic: FOOD },
  // Undated: outside every date range.
  { uid: 6, subject: 'Amount due', body: 'The sum remains unpaid.', topic: BILLING, offset: 0.15, at: null },
  { uid: 7, subject: 'Charges', body: 'Charges for the quarter, outstanding still.', topic: BILLING, offset: 0.2 },
];
const archive: Filed[] = [{ uid: 1, subject: 'Old statement', body: 'Last year, settled in full.', topic: BILLING, offset: 0 }];
const bobs: Filed[] = [{ uid: 1, subject: 'Bob owes', body: 'Money Bob has to pay.', topic: BILLING, offset: 0 }];

type Stored = { world: World; generation: number; ids: Record<string, number> };

function stored(t: TestLike, withVectors = true): Stored {
  const w = world(t);
  deliver(w.db, 'alice', w.bindings.aliceInbox, inbox);
  deliver(w.db, 'alice', w.bindings.aliceArchive, archive);
  deliver(w.db, 'bob', w.bindings.bobInbox, bobs);
  const generation = beginGeneration(w.db, { provider: 'openai-compatible', model: 'hand-made', dimensions: DIMENSIONS, distance: 'cosine' }, T0).id;
  promoteGeneration(w.db, generation, T0);
  const ids: Record<string, number> = {};
  const filed: Array<[string, number, Filed[]]> = [
    ['inbox', w.bindings.aliceInbox, inbox],
    ['archive', w.bindings.aliceArchive, archive],
    ['bob', w.bindings.bobInbox, bobs],
  ];
  for (const [name, binding, mails] of filed) {
    for (const mail of mails) {
      const id = idOf(w.db, binding, mail.uid);
      ids[`${name}${mail.uid}`] = id;
      if (withVectors) embed(w, generation, id, vectorOf(mail.topic, mail.offset));
    }
  }
  return { world: w, generation, ids };
}

/** Every passage of the message gets the vector. */
function embed(w: World, generation: number, messageId: number, vector: Float32Array): void {
  const passages = many<{ id: number }>(w.db.prepare('SELECT id FROM passages WHERE message_id = ?'), [messageId]);
  if (passages.length === 0) throw new Error('fixture mail has no passage');
  writeVectors(
    w.db,
    generation,
    passages.map((p) => ({ passageId: p.id, vector })),
  );
}

function search(s: Stored, input: Record<string, unknown>, query?: Float32Array<ArrayBuffer>, scope?: unknown): SearchEmailsResult {
  return ask<SearchEmailsResult>(s.world, {
    type: 'mail-query.search',
    input: input as { queryText: string },
    ...(query === undefined ? {} : { semantic: { generation: s.generation, vector: query } }),
    ...(scope === undefined ? {} : { scope: scope as never }),
  });
}

const subjects = (r: SearchEmailsResult) => r.matches.map((m) => m.subject);
const billing = vectorOf(BILLING);

t.test('a paraphrase lexical search misses is found; the keyword hit stays first', async (t) => {
  const s = stored(t);
  const lexical = search(s, { queryText: 'invoice' });
  t.same(subjects(lexical), ['Invoice March'], 'lexical: only the email holding the word');
  t.equal(lexical.retrievalMode, 'lexical');

  const hybrid = search(s, { queryText: 'invoice', accounts: ['alice'] }, billing);
  t.equal(hybrid.retrievalMode, 'hybrid');
  t.equal(hybrid.semanticSearch, 'available');
  t.same(
    subjects(hybrid),
    ['Invoice March', 'Old statement', 'Payment reminder', 'Your bill', 'Amount due', 'Charges', 'Lunch', 'Holiday plans'],
    'the keyword hit first, then the billing mail by vector distance, then the far mail (the vector list is the nearest 50, however far)',
  );
  t.match(hybrid.matches[0]!.snippets?.[0], /\*\*invoice\*\*/, 'a lexical hit keeps its snippet');
  t.equal(hybrid.matches[2]!.snippets, undefined, 'a vector-only hit has no matched term and no snippet');
  t.same(
    hybrid.matches.map((m) => m.rank),
    [1, 2, 3, 4, 5, 6, 7, 8],
  );
  t.same(
    subjects(search(s, { queryText: 'invoice', accounts: ['alice'], resultLimit: 2 }, billing)),
    ['Invoice March', 'Old statement'],
    'resultLimit cuts the fused list',
  );
});

t.test('a hit found both ways rises above lexical hits found one way', async (t) => {
  const s = stored(t);
  // "outstanding" is in "Payment reminder" (newer) and "Charges" (uid 7, newest): lexically Charges first.
  t.same(subjects(search(s, { queryText: 'outstanding' })), ['Charges', 'Payment reminder']);
  // Near the billing axis, Payment reminder (offset 0.05) is nearer than Charges (0.2): it now leads.
  t.same(subjects(search(s, { queryText: 'outstanding' }, billing)).slice(0, 2), ['Payment reminder', 'Charges']);
});

t.test('the filters, the folders and the scope hold for vector hits', async (t) => {
  const s = stored(t);
  const q = (extra: Record<string, unknown>, scope?: unknown) => subjects(search(s, { queryText: 'invoice', ...extra }, billing, scope));
  t.same(q({ senderAddress: 'shop@store.example' }), ['Your bill'], 'sender: the one billing email from the shop (the keyword hit is from someone else)');
  t.same(q({ isFlagged: true }), ['Your bill'], 'a flag');
  t.same(
    q({ accounts: ['alice'], folders: ['inbox'] }),
    ['Invoice March', 'Payment reminder', 'Your bill', 'Amount due', 'Charges', 'Lunch', 'Holiday plans'],
    'folder: the archive is left out',
  );
  t.same(
    q({ receivedOnOrAfter: new Date(T0 + 2 * HOUR).toISOString(), receivedBefore: new Date(T0 + 7 * HOUR).toISOString() }),
    ['Payment reminder', 'Your bill', 'Lunch', 'Holiday plans'],
    'date range: received at uid hours; the undated email, the keyword hit (1 h), Charges (7 h) and the archive (1 h) are outside',
  );
  t.same(q({ accounts: ['bob'] }), ['Bob owes'], "bob's own mail when his account is searched");
  for (const found of [q({ accounts: ['alice'] }), q({ accounts: ['alice'], folders: ['inbox', 'archive'] })])
    t.notOk(found.includes('Bob owes'), "another account's vectors never answer alice's folders");
  const aliceInboxOnly = { accounts: [{ id: 'alice', folders: ['inbox'] }] };
  const scoped = q({}, aliceInboxOnly);
  t.notOk(scoped.includes('Old statement'), 'a folder outside the scope is invisible to the vectors');
  t.notOk(scoped.includes('Bob owes'), 'so is an account outside the scope');
});

t.test("the query's exclusions exclude vector hits too", async (t) => {
  const s = stored(t);
  t.same(
    subjects(search(s, { queryText: 'invoice -outstanding -settled' }, billing)),
    ['Invoice March', 'Bob owes', 'Your bill', 'Amount due', 'Lunch', 'Holiday plans'],
    'Payment reminder, Charges and Old statement hold an excluded word',
  );
});

t.test('a selective filter still fills the vector list (the nearest are checked, then the filtered scope is ranked)', async (t) => {
  const s = stored(t);
  // 120 more billing emails from one sender, nearer than the shop's bill: the shop's is beyond the first checked candidates.
  const crowd: Filed[] = Array.from({ length: 120 }, (_, i) => ({
    uid: 100 + i,
    subject: `Statement ${i}`,
    from: 'Bank <bank@bank.example>',
    body: 'Your monthly statement.',
    topic: BILLING,
    offset: 0.01,
  }));
  deliver(s.world.db, 'alice', s.world.bindings.aliceInbox, crowd, 7);
  for (const mail of crowd) embed(s.world, s.generation, idOf(s.world.db, s.world.bindings.aliceInbox, mail.uid), vectorOf(mail.topic, mail.offset));
  t.same(
    subjects(search(s, { queryText: 'invoice', senderAddress: '@store.example' }, billing)),
    ['Your bill'],
    'found past 120 nearer emails of other senders',
  );
  t.equal(search(s, { queryText: 'invoice', resultLimit: 50 }, billing).matches.length, 50, 'the fused list holds resultLimit');
});

t.test("a sender filter ranks that sender's mail by vector: the nearest first, no other sender's mail, past nearer mail of others", async (t) => {
  const s = stored(t);
  const others: Filed[] = [
    // 120 billing emails of another sender, nearer than any of the shop's.
    ...Array.from({ length: 120 }, (_, i) => ({
      uid: 100 + i,
      subject: `Statement ${i}`,
      from: 'Bank <bank@bank.example>',
      to: i === 0 ? ['carol@example.org'] : undefined,
      body: 'Your monthly statement.',
      topic: BILLING,
      offset: 0.01,
    })),
    // The nearest of all, from an address holding the shop's address tokens (the index narrows, the address decides).
    { uid: 300, subject: 'Lookalike', from: 'Shop <shop@store.example.net>', body: 'Almost the same sender.', topic: BILLING, offset: 0 },
    // The shop's own, besides "Your bill" (offset 0.1).
    { uid: 301, subject: 'Shop receipt', from: 'shop@store.example', to: ['carol@example.org'], body: 'Paid, thank you.', topic: BILLING, offset: 0.02 },
    { uid: 302, subject: 'Shop balance', from: 'shop@store.example', body: 'A balance remains.', topic: BILLING, offset: 0.4 },
    { uid: 303, subject: 'Shop outing', from: 'shop@store.example', body: 'Our staff trip.', topic: TRAVEL },
  ];
  deliver(s.world.db, 'alice', s.world.bindings.aliceInbox, others, 7);
  for (const mail of others) embed(s.world, s.generation, idOf(s.world.db, s.world.bindings.aliceInbox, mail.uid), vectorOf(mail.topic, mail.offset));
  // A query matching no word: the answer is the vector list itself.
  t.same(
    subjects(search(s, { queryText: 'zebra', senderAddress: 'shop@store.example' }, billing)),
    ['Shop receipt', 'Your bill', 'Shop balance', 'Shop outing'],
    "the shop's mail only, nearest first",
  );
  t.same(
    subjects(search(s, { queryText: 'zebra', senderAddress: 'SHOP@store.example', recipientAddress: 'carol@example.org' }, billing)),
    ['Shop receipt'],
    'sender and recipient both hold',
  );
  t.same(subjects(search(s, { queryText: 'zebra', recipientAddress: 'carol@example.org' }, billing)), ['Statement 0', 'Shop receipt'], 'a recipient alone');
  t.same(
    subjects(search(s, { queryText: 'zebra', senderAddress: 'shop@store.example', subjectFragment: 'SHOP' }, billing)),
    ['Shop receipt', 'Shop balance', 'Shop outing'],
    'the sender and another filter',
  );
  t.same(
    subjects(search(s, { queryText: 'zebra', senderAddress: 'shop@store.example' }, billing, { accounts: [{ id: 'bob', folders: ['inbox'] }] })),
    [],
    'the scope still holds',
  );
  t.same(
    subjects(search(s, { queryText: 'zebra -balance', senderAddress: 'shop@store.example' }, billing)),
    ['Shop receipt', 'Your bill', 'Shop outing'],
    'exclusions still hold',
  );
  t.same(subjects(search(s, { queryText: 'zebra', senderAddress: 'nobody@store.example' }, billing)), [], 'a sender of no mail: nothing');
});

t.test('a sender of many emails, ranked through the in-memory index: still only that address, whatever holds its words', async (t) => {
  const s = stored(t);
  // More of the shop's mail than is ranked exactly (search.ts BY_MESSAGE_EXACT), and the nearest of all from a lookalike.
  const shop: Filed[] = Array.from({ length: 520 }, (_, i) => ({
    uid: 100 + i,
    subject: `Shop notice ${i}`,
    from: 'shop@store.example',
    body: 'A notice from the shop.',
    topic: i === 7 ? BILLING : TRAVEL,
    offset: 0.02,
  }));
  const lookalike: Filed = {
    uid: 700,
    subject: 'Lookalike',
    from: 'Shop <shop@store.example.net>',
    body: 'Almost the same sender.',
    topic: BILLING,
    offset: 0,
  };
  deliver(s.world.db, 'alice', s.world.bindings.aliceInbox, [...shop, lookalike], 7);
  for (const mail of [...shop, lookalike])
    embed(s.world, s.generation, idOf(s.world.db, s.world.bindings.aliceInbox, mail.uid), vectorOf(mail.topic, mail.offset));
  loadIndex(s.world.db, s.generation);
  const found = subjects(search(s, { queryText: 'zebra', senderAddress: 'shop@store.example', resultLimit: 5 }, billing));
  t.same(found.slice(0, 2), ['Shop notice 7', 'Your bill'], "the shop's billing mail first");
  t.equal(found.length, 5);
  t.notOk(found.includes('Lookalike'), 'the lookalike address holds the words, not the address');
  const dated = subjects(
    search(s, { queryText: 'zebra', senderAddress: 'shop@store.example', receivedOnOrAfter: new Date(T0 + 110 * HOUR).toISOString(), resultLimit: 5 }, billing),
  );
  t.notOk(dated.includes('Shop notice 7') || dated.includes('Your bill'), 'the received range still holds');
  t.equal(dated.length, 5);
});

t.test('ties are broken the same way every time', async (t) => {
  const s = stored(t);
  // Two emails at exactly the same distance: the later received ranks first.
  const twin = vectorOf(TRAVEL, 0.5);
  embed(s.world, s.generation, s.ids.inbox4!, twin);
  embed(s.world, s.generation, s.ids.inbox5!, twin);
  const first = search(s, { queryText: 'invoice', folders: ['inbox'] }, vectorOf(TRAVEL, 0.5));
  t.same(subjects(first).slice(1, 3), ['Lunch', 'Holiday plans'], 'equal distance: uid 5 (later) before uid 4');
  for (let i = 0; i < 3; i++) t.same(search(s, { queryText: 'invoice', folders: ['inbox'] }, vectorOf(TRAVEL, 0.5)), first, 'the same answer again');

  // Fusion ties: lexical rank 2 alone scores 2/62; lexical 33 and vector 33 score 2/93 + 1/93: the same. The better lexical rank wins.
  t.equal(LEXICAL_WEIGHT, 2);
  t.equal(VECTOR_WEIGHT, 1);
  const row = (id: number, at: number | null): SummaryRow => ({ id, internal_date: at }) as SummaryRow;
  const lexical = Array.from({ length: 40 }, (_, i) => row(1000 + i, T0));
  const vector = [...Array.from({ length: 32 }, (_, i) => row(2000 + i, T0)), lexical[32]!];
  const fused = fuse(lexical, vector, 50).map((f) => f.row.id);
  t.ok(fused.indexOf(1001) < fused.indexOf(1032), 'lexical rank 2 before the tie at lexical rank 33');
  t.equal(fused.indexOf(1032), fused.indexOf(1001) + 1, 'the two tied are neighbours');
});

t.test('retrievalMode, semanticSearch and semanticCoverage say what answered', async (t) => {
  const w = world(t);
  deliver(w.db, 'alice', w.bindings.aliceInbox, inbox);
  const none = ask<SearchEmailsResult>(w, { type: 'mail-query.search', input: { queryText: 'invoice' } as never });
  t.equal(none.semanticSearch, 'inactive', 'no generation serves');
  t.equal(none.retrievalMode, 'lexical');
  t.notOk('semanticCoverage' in none, 'no coverage while inactive');

  const s = stored(t, false);
  const degraded = search(s, { queryText: 'invoice' });
  t.equal(degraded.semanticSearch, 'degraded', 'a generation serves but the query was not placed');
  t.equal(degraded.retrievalMode, 'lexical');
  const total = inbox.length + archive.length + bobs.length;
  t.same(degraded.semanticCoverage, { embeddedEmailCount: 0, emailCount: total }, 'nothing embedded yet, over every visible folder');

  embed(s.world, s.generation, s.ids.inbox1!, vectorOf(BILLING));
  embed(s.world, s.generation, s.ids.bob1!, vectorOf(BILLING));
  t.same(search(s, { queryText: 'invoice' }).semanticCoverage, { embeddedEmailCount: 2, emailCount: total }, 'counts follow the vectors written');
  t.same(
    search(s, { queryText: 'invoice', accounts: ['alice'], folders: ['inbox'] }, billing).semanticCoverage,
    { embeddedEmailCount: 1, emailCount: inbox.length },
    "over the searched folders only; an email's passages count once",
  );
  const hybrid = search(s, { queryText: 'invoice', accounts: ['alice'] }, billing);
  t.same(subjects(hybrid), ['Invoice March'], 'only embedded mail is found by its vector (here the keyword hit itself)');
});
