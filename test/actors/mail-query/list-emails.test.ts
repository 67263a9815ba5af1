/**
 * list_emails over a real store: keyset pagination visits every visible
 * email once in both directions (filters, ties and undated mail included),
 * cursors are bound to their filters, the scope is enforced, every filter
 * narrows as documented, and tombstones, retired generations and unmirrored
 * folders stay invisible.
 */
import t from 'tap';
import type { EmailSummary, ListAccountsResult, ListEmailsResult } from '../../../actors/mail-query/protocol/mail-reads.ts';
import { decodeStoredEmailId } from '../../../actors/mail-query/protocol/stored-email-id.ts';
import { segmentQuery } from '../../../actors/mail-query/list-emails.ts';
import { filterClauses } from '../../../actors/mail-query/filters.ts';
import { syncBindings, withdrawUnconfigured } from '../../../runtime/store/mailbox/bindings.ts';
import { tombstone } from '../../../runtime/store/mailbox/server-changes.ts';
import { many } from '../../../runtime/store/rows.ts';
import type { TestLike } from '../../runtime/store/fixtures/scratch.ts';
import { ask, deliver, HOUR, idOf, parsed, recordRun, refusalCode, T0, world, type Mail, type World } from './fixtures.ts';
import { deriveFirst } from '../../../runtime/store/mailbox/underived.ts';

const aliceInbox: Mail[] = [
  { uid: 1, subject: 'Invoice 1001', from: 'Billing Desk <billing@vendor.example>', flags: ['\\Seen'] },
  { uid: 2, subject: 'Lunch?', from: 'Bob Builder <bob@corp.example>' },
  { uid: 3, subject: 'URGENT: contract', from: 'Legal <legal@corp.example>', flags: ['\\Flagged'] },
  { uid: 4, subject: 'Photos', attachment: { filename: 'beach.jpg', contentType: 'image/jpeg', content: 'jpegbytes' }, flags: ['\\Seen'] },
  { uid: 5, subject: 'Follow-up', keywords: ['$Important'] },
  { uid: 6, subject: 'For Carol', to: ['Carol <carol@example.net>'] },
  { uid: 7, subject: 'Copy to Dave', cc: ['dave@example.net'], flags: ['\\Seen'] },
  {
    uid: 8,
    subject: 'Invoice 1002',
    from: 'Billing Desk <billing@vendor.example>',
    attachment: { filename: 'inv.pdf', contentType: 'application/pdf', content: '%PDF-1.4' },
  },
  // uids 9 and 10 share an internal date: the id breaks the tie.
  { uid: 9, subject: 'Tie A', at: T0 + 100 * HOUR },
  { uid: 10, subject: 'Tie B', at: T0 + 100 * HOUR },
  { uid: 11, subject: 'No internal date', at: null },
  { uid: 12, subject: 'Huge', state: 'oversized' },
  { uid: 13, subject: 'Garbled', state: 'unreadable' },
  { uid: 14, subject: 'Also undated', at: null, flags: ['\\Seen'] },
];
const aliceArchive: Mail[] = [1, 2, 3, 4, 5].map((uid) => ({ uid, subject: `Archived ${uid}`, flags: ['\\Seen'] }));
const bobInbox: Mail[] = [1, 2, 3].map((uid) => ({ uid, subject: `Bob mail ${uid}`, to: ['bob@example.org'] }));

function populated(t: TestLike): World {
  const w = world(t);
  deliver(w.db, 'alice', w.bindings.aliceInbox, aliceInbox);
  deliver(w.db, 'alice', w.bindings.aliceArchive, aliceArchive);
  deliver(w.db, 'bob', w.bindings.bobInbox, bobInbox);
  return w;
}

type Filters = Record<string, unknown>;

function page(w: World, input: Filters): ListEmailsResult {
  return ask<ListEmailsResult>(w, { type: 'mail-query.list-emails', input });
}

/** Every page of a listing, following nextCursor to its end. */
function walk(w: World, input: Filters, pageSize: number): { emails: EmailSummary[]; pages: number } {
  const emails: EmailSummary[] = [];
  let cursor: string | undefined;
  let pages = 0;
  for (;;) {
    const result = page(w, { ...input, pageSize, ...(cursor ? { cursor } : {}) });
    pages += 1;
    emails.push(...result.emails);
    if (result.nextCursor === null) return { emails, pages };
    cursor = result.nextCursor;
    if (pages > 100) throw new Error('the walk does not end');
  }
}

function subjects(emails: readonly EmailSummary[]): string[] {
  return emails.map((e) => e.subject ?? '');
}

function allSubjects(input: Filters, w: World): string[] {
  return subjects(walk(w, input, 100).emails).sort();
}

t.test('a walk visits every visible email once, in order, both directions', async (t) => {
  const w = populated(t);
  const total = aliceInbox.length + aliceArchive.length + bobInbox.length;
  const newest = walk(w, {}, 4);
  t.equal(newest.emails.length, total, 'every email');
  t.equal(new Set(newest.emails.map((e) => e.storedEmailId)).size, total, 'each once');
  t.equal(newest.pages, Math.ceil(total / 4) + (total % 4 === 0 ? 1 : 0));
  const dated = newest.emails.filter((e) => e.receivedAt !== undefined);
  t.same(
    newest.emails.slice(dated.length).map((e) => e.receivedAt),
    [undefined, undefined],
    'undated mail comes last, newest first',
  );
  for (let i = 1; i < dated.length; i += 1) {
    const a = dated[i - 1]!;
    const b = dated[i]!;
    const ordered =
      a.receivedAt! > b.receivedAt! || (a.receivedAt === b.receivedAt && decodeStoredEmailId(a.storedEmailId)! > decodeStoredEmailId(b.storedEmailId)!);
    if (!ordered) t.fail(`out of order at ${i}`);
  }
  const tie = subjects(newest.emails).filter((s) => s.startsWith('Tie'));
  t.same(tie, ['Tie B', 'Tie A'], 'equal dates: higher id first');

  const oldest = walk(w, { direction: 'oldestFirst' }, 3);
  t.same(
    oldest.emails.map((e) => e.storedEmailId),
    [...newest.emails].reverse().map((e) => e.storedEmailId),
    'oldest first is exactly the reverse',
  );
  t.same(
    oldest.emails.slice(0, 2).map((e) => e.receivedAt),
    [undefined, undefined],
    'undated mail first',
  );

  const one = walk(w, {}, 1);
  t.same(
    one.emails.map((e) => e.storedEmailId),
    newest.emails.map((e) => e.storedEmailId),
    'page size 1 walks the same sequence',
  );
  const whole = page(w, { pageSize: 100 });
  t.equal(whole.emails.length, total);
  t.equal(whole.nextCursor, null, 'a single page that holds everything has no next cursor');
  const exact = page(w, { pageSize: total });
  t.equal(exact.nextCursor, null, 'a page exactly full of the rest ends the walk');
});

t.test('walks with filters, and pageSize may change between pages', async (t) => {
  const w = populated(t);
  const unread = { accounts: ['alice'], folders: ['inbox'], isSeen: false };
  // Unparsed mail (oversized, unreadable) has no subject to show.
  const expected = aliceInbox
    .filter((m) => !(m.flags ?? []).includes('\\Seen'))
    .map((m) => (m.state === undefined ? m.subject! : ''))
    .sort();
  for (const direction of ['newestFirst', 'oldestFirst']) {
    const got = walk(w, { ...unread, direction }, 2);
    t.same(subjects(got.emails).sort(), expected, `${direction}: exactly the unread inbox mail`);
    t.equal(new Set(got.emails.map((e) => e.storedEmailId)).size, expected.length);
  }
  const first = page(w, { ...unread, pageSize: 2 });
  const rest = page(w, { ...unread, pageSize: 50, cursor: first.nextCursor! });
  t.same([...subjects(first.emails), ...subjects(rest.emails)].sort(), expected, 'a larger page after a small one continues the walk');
  t.equal(rest.nextCursor, null);
});

t.test('cursors are bound to their filters and direction; garbage is refused', async (t) => {
  const w = populated(t);
  const first = page(w, { pageSize: 1, subjectFragment: 'invoice' });
  const cursor = first.nextCursor!;
  t.ok(/^[A-Za-z0-9_-]+$/.test(cursor), 'base64url');
  t.equal(
    refusalCode(() => page(w, { pageSize: 2, cursor })),
    'E_CURSOR_FILTERS_CHANGED',
    'filter dropped',
  );
  t.equal(
    refusalCode(() => page(w, { pageSize: 2, subjectFragment: 'lunch', cursor })),
    'E_CURSOR_FILTERS_CHANGED',
    'filter changed',
  );
  t.equal(
    refusalCode(() => page(w, { pageSize: 2, subjectFragment: 'invoice', direction: 'oldestFirst', cursor })),
    'E_CURSOR_FILTERS_CHANGED',
    'direction changed',
  );
  t.equal(
    refusalCode(() => page(w, { pageSize: 9, subjectFragment: 'INVOICE', cursor })),
    'answered',
    'pageSize may change; an equivalent filter spelling is the same filter',
  );
  t.equal(
    refusalCode(() => page(w, { cursor: 'not-a-cursor' })),
    'E_CURSOR_INVALID',
  );
  t.equal(
    refusalCode(() => page(w, { cursor: '!!!' })),
    'E_CURSOR_INVALID',
  );
  const flipped = cursor.slice(0, 5) + (cursor[5] === 'A' ? 'B' : 'A') + cursor.slice(6);
  t.equal(
    refusalCode(() => page(w, { pageSize: 2, subjectFragment: 'invoice', cursor: flipped })),
    'E_CURSOR_INVALID',
    'a retyped character',
  );
  const forged = Buffer.from('1.zz.1.AAAAAAAAAAAA.AAAAAAAA').toString('base64url');
  t.equal(
    refusalCode(() => page(w, { cursor: forged })),
    'E_CURSOR_INVALID',
    'a hand-made cursor without a valid check',
  );
  t.equal(
    refusalCode(() => page(w, { cursor: cursor.slice(0, -2) })),
    'E_CURSOR_INVALID',
    'a cut cursor',
  );
});

t.test('the scope is enforced: outside it reads like nothing at all', async (t) => {
  const w = populated(t);
  t.equal(
    refusalCode(() => page(w, { accounts: ['carol'] })),
    'E_NOT_FOUND',
    'unknown account',
  );
  t.equal(
    refusalCode(() => page(w, { folders: ['spam'] })),
    'E_NOT_FOUND',
    'unknown alias',
  );
  t.equal(
    refusalCode(() => page(w, { accounts: ['bob'], folders: ['archive'] })),
    'E_NOT_FOUND',
    'an alias the selected account does not configure',
  );
  const aliceOnly = { accounts: [{ id: 'alice', folders: ['inbox'] }] };
  t.equal(
    refusalCode(() => ask(w, { type: 'mail-query.list-emails', scope: aliceOnly, input: { accounts: ['bob'] } })),
    'E_NOT_FOUND',
    'an account in the store but outside the owner scope',
  );
  t.equal(
    refusalCode(() => ask(w, { type: 'mail-query.list-emails', scope: aliceOnly, input: { folders: ['archive'] } })),
    'E_NOT_FOUND',
    'a folder not configured',
  );
  const narrowed = ask<ListEmailsResult>(w, { type: 'mail-query.list-emails', scope: aliceOnly, input: { pageSize: 100 } });
  t.equal(narrowed.emails.length, aliceInbox.length, 'only the scope is listed');
  t.ok(narrowed.emails.every((e) => e.accountId === 'alice' && e.folderAlias === 'inbox'));
  t.same(
    narrowed.folderFreshness.map((f) => `${f.accountId}/${f.folderAlias}`),
    ['alice/inbox'],
  );
  const bobs = page(w, { accounts: ['bob'], pageSize: 100 });
  t.same(subjects(bobs.emails).sort(), ['Bob mail 1', 'Bob mail 2', 'Bob mail 3']);
  const inboxes = page(w, { folders: ['inbox'], pageSize: 100 });
  t.equal(inboxes.emails.length, aliceInbox.length + bobInbox.length, 'an alias applies to every selected account configuring it');
});

t.test('each filter narrows as documented', async (t) => {
  const w = populated(t);
  const inbox = { accounts: ['alice'], folders: ['inbox'] };
  const q = (f: Filters) => allSubjects({ ...inbox, ...f }, w);
  t.same(q({ senderAddress: 'billing@vendor.example' }), ['Invoice 1001', 'Invoice 1002'], 'exact sender');
  t.same(q({ senderAddress: 'BILLING@Vendor.Example' }), ['Invoice 1001', 'Invoice 1002'], 'case-insensitive');
  t.same(q({ senderAddress: '@corp.example' }), ['Lunch?', 'URGENT: contract'], 'a sender domain');
  t.same(q({ senderAddress: 'illing@vendor.example' }), [], 'no partial local parts');
  t.same(q({ senderAddress: '@example' }), [], 'a domain matches whole labels only');
  t.same(q({ recipientAddress: 'carol@example.net' }), ['For Carol'], 'a To recipient');
  t.same(q({ recipientAddress: 'dave@example.net' }), ['Copy to Dave'], 'a Cc recipient');
  t.same(q({ recipientAddress: '@example.net' }), ['Copy to Dave', 'For Carol']);
  t.same(q({ subjectFragment: 'INVOICE 100' }), ['Invoice 1001', 'Invoice 1002'], 'subject fragment, case-insensitive');
  t.same(q({ subjectFragment: '%' }), [], 'LIKE wildcards are plain text');
  t.same(
    q({ receivedOnOrAfter: new Date(T0 + 3 * HOUR).toISOString(), receivedBefore: new Date(T0 + 5 * HOUR).toISOString() }),
    ['Photos', 'URGENT: contract'],
    'half-open: the start is in, the end is out',
  );
  t.same(q({ receivedOnOrAfter: '2025-03-01T13:00:00+04:00', receivedBefore: '2025-03-01T10:00:00.000Z' }), ['Invoice 1001'], 'instants with offsets');
  t.same(q({ isSeen: true }), ['Also undated', 'Copy to Dave', 'Invoice 1001', 'Photos']);
  t.equal(q({ isSeen: false }).length, aliceInbox.length - 4);
  t.same(q({ isFlagged: true }), ['URGENT: contract']);
  t.equal(q({ isFlagged: false }).length, aliceInbox.length - 1);
  t.same(q({ keyword: '$important' }), ['Follow-up'], 'keywords compare case-insensitively');
  t.same(q({ keyword: '$Other' }), []);
  t.same(q({ hasAttachments: true }), ['Invoice 1002', 'Photos']);
  t.equal(q({ hasAttachments: false }).length, aliceInbox.length - 2 - 2, 'oversized and unreadable mail is known neither way');
  t.same(q({ isSeen: false, hasAttachments: true, senderAddress: '@vendor.example' }), ['Invoice 1002'], 'filters combine');
});

t.test("an address's few emails are listed by id: the same pages, in the same order, as the listing walk", async (t) => {
  const w = populated(t);
  const cases = [
    { filter: { senderAddress: 'Ann@Example.org' }, holds: (e: EmailSummary) => e.senderAddress === 'ann@example.org', what: 'an exact sender (its key)' },
    {
      filter: { recipientAddress: 'alice@example.org' },
      holds: (e: EmailSummary) => (e.toAddresses ?? []).includes('alice@example.org'),
      what: 'a recipient (the full-text superset)',
    },
    { filter: { senderAddress: '@example.org' }, holds: (e: EmailSummary) => e.senderAddress?.endsWith('@example.org') === true, what: 'a sender domain' },
  ];
  for (const direction of ['newestFirst', 'oldestFirst'] as const) {
    const all = walk(w, { direction }, 100).emails;
    for (const { filter, holds, what } of cases) {
      const expected = all.filter(holds).map((e) => e.storedEmailId);
      t.ok(expected.length > 10, `${what}: most of the mail, dated and undated`);
      for (const pageSize of [1, 3]) {
        const listed = walk(w, { ...filter, direction }, pageSize);
        t.same(
          listed.emails.map((e) => e.storedEmailId),
          expected,
          `${what}, ${direction}, pages of ${pageSize}`,
        );
      }
    }
  }
  t.same(subjects(page(w, { senderAddress: 'nobody@example.org', pageSize: 10 }).emails), [], 'a sender of no mail');
  t.same(subjects(page(w, { recipientAddress: 'nobody@example.org', pageSize: 10 }).emails), [], 'a recipient of no mail');
  const clauses = filterClauses({ senderAddress: 'ann@example.org', isSeen: false });
  const q = segmentQuery(
    { accountId: 'alice', state: 'stored', bindingIds: [w.bindings.aliceInbox], clauses, among: JSON.stringify([1, 2, 3]), direction: 'newestFirst' },
    'dated',
    { internalDate: T0, id: 5 },
    26,
  );
  const plan = many<{ detail: string }>(w.db.prepare(`EXPLAIN QUERY PLAN ${q.sql}`), q.params).map((r) => r.detail);
  t.match(plan.join('; '), /SCAN c VIRTUAL TABLE.*SEARCH m USING INTEGER PRIMARY KEY \(rowid=\?\)/, 'each id read by its key');
  t.notOk(
    plan.some((d) => /^SCAN m\b/.test(d)),
    'never a scan of the messages',
  );
});

t.test('summaries follow the omission rule and carry what agents need', async (t) => {
  const w = populated(t);
  const all = walk(w, { accounts: ['alice'], folders: ['inbox'] }, 100).emails;
  const invoice = all.find((e) => e.subject === 'Invoice 1002')!;
  t.same(invoice, {
    storedEmailId: invoice.storedEmailId,
    accountId: 'alice',
    folderAlias: 'inbox',
    threadId: invoice.threadId,
    subject: 'Invoice 1002',
    senderAddress: 'billing@vendor.example',
    senderDisplayName: 'Billing Desk',
    toAddresses: ['alice@example.org'],
    sentAt: new Date(T0 + 8 * HOUR - 60_000).toISOString(),
    receivedAt: new Date(T0 + 8 * HOUR).toISOString(),
    sizeBytes: invoice.sizeBytes,
    attachmentCount: 1,
  });
  t.match(invoice.storedEmailId, /^e[0-9a-z]+$/);
  t.equal(decodeStoredEmailId(invoice.storedEmailId), idOf(w.db, w.bindings.aliceInbox, 8), 'the id is stable over messages.id');
  const oversized = all.find((e) => e.contentState === 'oversized')!;
  t.same(
    Object.keys(oversized).sort(),
    ['accountId', 'contentState', 'folderAlias', 'receivedAt', 'sizeBytes', 'storedEmailId'],
    'unparsed mail: only what the server told',
  );
  t.same(all.find((e) => e.subject === 'Invoice 1001')!.flags, ['\\Seen']);
  t.same(all.find((e) => e.subject === 'Follow-up')!.keywords, ['$Important']);
  const json = JSON.stringify(all);
  t.notMatch(json, /null|\[\]/, 'no null and no empty list anywhere');
});

t.test('tombstones, retired generations and unmirrored folders are invisible', async (t) => {
  const w = populated(t);
  tombstone(w.db, w.bindings.aliceInbox, 7, [2, 3], 'expunged', T0);
  const inbox = allSubjects({ accounts: ['alice'], folders: ['inbox'] }, w);
  t.notOk(inbox.includes('Lunch?') || inbox.includes('URGENT: contract'), 'tombstoned mail is gone');
  t.equal(inbox.length, aliceInbox.length - 2);

  // The archive alias now resolves to another remote folder: a new, empty generation.
  syncBindings(
    w.db,
    'alice',
    [
      { alias: 'inbox', path: 'INBOX' },
      { alias: 'archive', path: 'Archive2' },
    ],
    2,
  );
  t.same(allSubjects({ folders: ['archive'] }, w), [], 'the retired generation keeps its mail out of sight');
  // bob's inbox is withdrawn from his configuration while the scope still names it.
  withdrawUnconfigured(w.db, 'bob', []);
  const result = page(w, { accounts: ['bob'] });
  t.same(result.emails, [], 'an unmirrored folder shows nothing');
  t.same(result.folderFreshness, [{ accountId: 'bob', folderAlias: 'inbox', wasSynchronized: false, synchronizedAt: null }]);
});

t.test('mail mirrored but not derived yet is neither listed nor found, and is counted as not yet indexed', async (t) => {
  const w = world(t);
  deliver(w.db, 'bob', w.bindings.bobInbox, [
    { uid: 1, subject: 'Derived letter' },
    { uid: 2, subject: 'Waiting letter', body: 'quince marmalade', underived: true },
  ]);
  const id = idOf(w.db, w.bindings.bobInbox, 2);
  const listed = page(w, { accounts: ['bob'] });
  t.same(
    listed.emails.map((e) => e.subject),
    ['Derived letter'],
    'only the derived email is listed',
  );
  t.same(listed.folderFreshness, [{ accountId: 'bob', folderAlias: 'inbox', wasSynchronized: true, synchronizedAt: null, notYetIndexed: 1 }]);
  const found = ask<{ matches: unknown[]; folderFreshness: unknown[] }>(w, { type: 'mail-query.search', input: { queryText: 'quince', accounts: ['bob'] } });
  t.same(found.matches, [], 'nor is it found');
  t.same(found.folderFreshness, listed.folderFreshness, 'a search reports the same lag');
  const accounts = ask<ListAccountsResult>(w, { type: 'mail-query.list-accounts', input: {} });
  t.same(accounts.accounts.find((a) => a.accountId === 'bob')?.folders, [{ alias: 'inbox', wasSynchronized: true, synchronizedAt: null, notYetIndexed: 1 }]);

  const raw = many<{ mime: Uint8Array }>(w.db.prepare('SELECT mime FROM message_raw WHERE message_id = ?'), [id])[0]!.mime;
  t.equal(deriveFirst(w.db, [{ id, parsed: parsed(Buffer.from(raw), 'bob') }], T0), 1);
  t.equal(deriveFirst(w.db, [{ id, parsed: parsed(Buffer.from(raw), 'bob') }], T0), 0, 'a second derivation of the same row writes nothing');
  const after = page(w, { accounts: ['bob'] });
  t.same(
    after.emails.map((e) => e.subject),
    ['Waiting letter', 'Derived letter'],
    'once derived it is listed',
  );
  t.same(after.folderFreshness, [{ accountId: 'bob', folderAlias: 'inbox', wasSynchronized: true, synchronizedAt: null }], 'and no lag is reported');
  t.equal(ask<{ matches: unknown[] }>(w, { type: 'mail-query.search', input: { queryText: 'quince', accounts: ['bob'] } }).matches.length, 1, 'and found');
});

t.test('a never-synchronized deployment answers an empty page with wasSynchronized false', async (t) => {
  const w = world(t);
  const result = page(w, {});
  t.same(result, {
    emails: [],
    nextCursor: null,
    folderFreshness: [
      { accountId: 'alice', folderAlias: 'inbox', wasSynchronized: false, synchronizedAt: null },
      { accountId: 'alice', folderAlias: 'archive', wasSynchronized: false, synchronizedAt: null },
      { accountId: 'bob', folderAlias: 'inbox', wasSynchronized: false, synchronizedAt: null },
    ],
  });
  const unbound = { accounts: [{ id: 'carol', folders: ['inbox'] }] };
  const accounts = ask<ListAccountsResult>(w, { type: 'mail-query.list-accounts', scope: unbound, input: {} });
  t.same(
    accounts,
    { accounts: [{ accountId: 'carol', folders: [{ alias: 'inbox', wasSynchronized: false, synchronizedAt: null }] }] },
    'an account with no row at all',
  );
});

t.test('freshness: a checkpoint, a complete pass, and a pass cut short', async (t) => {
  const w = populated(t);
  const done = T0 + 500 * HOUR;
  recordRun(w.db, 'alice', done, [
    { bindingId: w.bindings.aliceInbox, outcome: 'ok' },
    { bindingId: w.bindings.aliceArchive, outcome: 'ok', hasMore: true },
  ]);
  recordRun(w.db, 'alice', done + HOUR, [{ bindingId: w.bindings.aliceInbox, outcome: 'unexpected' }]);
  const accounts = ask<ListAccountsResult>(w, { type: 'mail-query.list-accounts', input: {} });
  t.same(
    accounts,
    {
      accounts: [
        {
          accountId: 'alice',
          folders: [
            { alias: 'inbox', wasSynchronized: true, synchronizedAt: new Date(done).toISOString() },
            { alias: 'archive', wasSynchronized: true, synchronizedAt: null },
          ],
        },
        { accountId: 'bob', folders: [{ alias: 'inbox', wasSynchronized: true, synchronizedAt: null }] },
      ],
    },
    'the latest complete pass counts; a failed later pass does not move it; a checkpoint alone is a partial mirror',
  );
  t.same(page(w, { accounts: ['alice'], folders: ['inbox'], pageSize: 1 }).folderFreshness, [
    { accountId: 'alice', folderAlias: 'inbox', wasSynchronized: true, synchronizedAt: new Date(done).toISOString() },
  ]);
});

t.test('each segment read seeks the listing index; no sort, no full scan', async (t) => {
  const w = populated(t);
  const clauses = filterClauses({ isSeen: false, senderAddress: '@corp.example' });
  for (const direction of ['newestFirst', 'oldestFirst'] as const) {
    for (const segment of ['dated', 'undated'] as const) {
      const after = segment === 'dated' ? { internalDate: T0, id: 5 } : { internalDate: null, id: 5 };
      const q = segmentQuery(
        { accountId: 'alice', state: 'stored', bindingIds: [w.bindings.aliceInbox, w.bindings.aliceArchive], clauses, direction },
        segment,
        after,
        26,
      );
      const plan = many<{ detail: string }>(w.db.prepare(`EXPLAIN QUERY PLAN ${q.sql}`), q.params).map((r) => r.detail);
      const top = plan.filter((d) => !d.startsWith('CORRELATED') && !d.includes('json_each'));
      t.match(top[0] ?? '', /SEARCH m USING INDEX messages_listing \(account_id=\? AND state=\? AND internal_date/, `${direction} ${segment}: ${top[0]}`);
      t.notOk(
        plan.some((d) => /TEMP B-TREE/.test(d)),
        `${direction} ${segment}: no sort`,
      );
    }
  }
});
