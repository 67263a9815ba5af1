/**
 * get_email_content: entries carry the summary, headers, body and
 * attachment list; the body is cut at the budget and read on by bodyOffset
 * to exactly the full text; missing or damaged content is 55001 on its own
 * entry with a repair listed; unknown or out-of-scope ids are 53001 entries;
 * a thread resolves to its visible emails, oldest first, newest ten.
 */
import t from 'tap';
import { cutBody } from '../../../actors/mail-query/get-content.ts';
import { GetContentReply, GetEmailContentInput, type EmailContent, type EmailContentError } from '../../../actors/mail-query/protocol/mail-reads.ts';
import { encodeStoredEmailId } from '../../../actors/mail-query/protocol/stored-email-id.ts';
import { tombstone } from '../../../runtime/store/mailbox/server-changes.ts';
import { run } from '../../../runtime/store/rows.ts';
import type { TestLike } from '../../runtime/store/fixtures/scratch.ts';
import { ask, deliver, HOUR, idOf, refusalCode, T0, world, type Mail, type World } from './fixtures.ts';

const longBody = Array.from({ length: 60 }, (_, i) => `Paragraph ${i + 1}: the quick brown fox jumps over the lazy dog, naïvely — 😀 émoji.`).join('\n');

const alice: Mail[] = [
  {
    uid: 1,
    subject: 'Project kickoff',
    from: 'Ann Example <ann@example.org>',
    to: ['Alice <alice@example.org>', 'team@example.org'],
    cc: ['Dave <dave@example.net>'],
    body: longBody,
    attachment: { filename: 'agenda.pdf', contentType: 'application/pdf', content: '%PDF-1.4 agenda' },
    flags: ['\\Seen'],
    keywords: ['$Work'],
  },
  { uid: 2, subject: 'Short note', body: 'Just a short note.' },
  { uid: 3, subject: 'Too big', state: 'oversized' },
  { uid: 4, subject: 'Unparseable', state: 'unreadable' },
];

function populated(t: TestLike): World {
  const w = world(t);
  deliver(w.db, 'alice', w.bindings.aliceInbox, alice);
  deliver(w.db, 'bob', w.bindings.bobInbox, [{ uid: 1, subject: 'Bob private' }]);
  return w;
}

function content(w: World, input: Record<string, unknown>, bodyCharacterBudget = 1000): GetContentReply {
  const reply = ask<GetContentReply>(w, { type: 'mail-query.get-content', input, bodyCharacterBudget });
  return GetContentReply.parse(reply);
}

const sid = (w: World, binding: number, uid: number) => encodeStoredEmailId(idOf(w.db, binding, uid));

t.test('an entry carries the summary, the headers, the body and the attachments', async (t) => {
  const w = populated(t);
  const id = sid(w, w.bindings.aliceInbox, 1);
  const reply = content(w, { storedEmailIds: [id] }, 100_000);
  t.same(reply.repairs, []);
  const entry = reply.emails[0] as EmailContent;
  t.same(entry, {
    storedEmailId: id,
    accountId: 'alice',
    folderAlias: 'inbox',
    threadId: entry.threadId,
    subject: 'Project kickoff',
    senderAddress: 'ann@example.org',
    senderDisplayName: 'Ann Example',
    toAddresses: ['alice@example.org', 'team@example.org'],
    sentAt: new Date(T0 + HOUR - 60_000).toISOString(),
    receivedAt: new Date(T0 + HOUR).toISOString(),
    sizeBytes: entry.sizeBytes,
    attachmentCount: 1,
    flags: ['\\Seen'],
    keywords: ['$Work'],
    ccAddresses: ['dave@example.net'],
    messageId: '<m1@example.org>',
    body: { text: longBody, totalCharacters: longBody.length },
    attachments: [{ index: 0, filename: 'agenda.pdf', contentType: 'application/pdf', sizeBytes: entry.attachments![0]!.sizeBytes, inline: false }],
  });
  t.ok(entry.threadId, 'a thread id');
});

t.test('the body is cut at the budget and bodyOffset reads on to exactly the full text', async (t) => {
  const w = populated(t);
  const id = sid(w, w.bindings.aliceInbox, 1);
  for (const budget of [1, 7, 100, 333, longBody.length - 1]) {
    let text = '';
    let offset: number | undefined;
    let reads = 0;
    for (;;) {
      const entry = content(w, { storedEmailIds: [id], ...(offset === undefined ? {} : { bodyOffset: offset }) }, budget).emails[0] as EmailContent;
      const body = entry.body!;
      if (body.totalCharacters !== longBody.length) t.fail('totalCharacters is the whole body');
      if (body.text.length > Math.max(budget, 2)) t.fail(`a piece longer than the budget ${budget}`);
      text += body.text;
      reads += 1;
      if (body.truncatedBy === undefined) {
        t.notOk('nextBodyOffset' in body, 'the last piece says nothing more');
        break;
      }
      if (body.truncatedBy !== 'characterBudget' || !(body.nextBodyOffset! > (offset ?? 0))) t.fail('a cut piece says how and moves on');
      offset = body.nextBodyOffset;
      if (reads > longBody.length + 1) throw new Error('no end');
    }
    t.equal(text, longBody, `budget ${budget}: the pieces join to the body (${reads} reads)`);
  }
  const past = content(w, { storedEmailIds: [id], bodyOffset: longBody.length + 50 }).emails[0] as EmailContent;
  t.same(past.body, { text: '', totalCharacters: longBody.length }, 'an offset past the end reads nothing');
});

t.test('cutting: never inside a surrogate pair; a word boundary when one is near', async (t) => {
  const emoji = 'ab😀cd';
  t.same(cutBody(emoji, 0, 3), { text: 'ab', totalCharacters: 6, truncatedBy: 'characterBudget', nextBodyOffset: 2 });
  t.same(
    cutBody(emoji, 2, 1),
    { text: '😀', totalCharacters: 6, truncatedBy: 'characterBudget', nextBodyOffset: 4 },
    'a one-character budget still moves past a pair',
  );
  const words = 'alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu';
  t.equal(cutBody(words, 0, 40).text, 'alpha beta gamma delta epsilon zeta eta ', 'a cut at a space stays');
  const cut = cutBody(words, 0, 42);
  t.equal(cut.text, 'alpha beta gamma delta epsilon zeta eta ', 'a cut inside "theta" backs off to the space');
  t.equal(cut.nextBodyOffset, cut.text.length);
  t.equal(cutBody('x'.repeat(50), 0, 20).text.length, 20, 'no whitespace near: a hard cut');
});

t.test('damaged or missing content is 55001 on its entry, with a repair', async (t) => {
  const w = populated(t);
  const [kickoff, note, big, unparsed] = [1, 2, 3, 4].map((uid) => idOf(w.db, w.bindings.aliceInbox, uid)) as [number, number, number, number];
  run(w.db.prepare("UPDATE message_raw SET mime = CAST('tampered' AS BLOB) WHERE message_id = ?"), [kickoff]);
  run(w.db.prepare('DELETE FROM search_documents WHERE message_id = ?'), [note]);
  const reply = content(w, { storedEmailIds: [kickoff, note, big, unparsed].map(encodeStoredEmailId) });
  const damaged = { code: 55001, message: 'The stored content of this email is missing or damaged' };
  t.same(reply.emails[0], { storedEmailId: encodeStoredEmailId(kickoff), error: damaged }, 'raw MIME no longer matching its SHA-256');
  t.same(reply.emails[1], { storedEmailId: encodeStoredEmailId(note), error: damaged }, 'a stored email without its derived text');
  const oversized = reply.emails[2] as EmailContent;
  t.equal(oversized.contentState, 'oversized');
  t.notOk('body' in oversized, 'oversized mail has no body, and that is no damage');
  const unreadable = reply.emails[3] as EmailContent;
  t.equal(unreadable.contentState, 'unreadable');
  t.notOk('body' in unreadable);
  t.same(reply.repairs, [
    { messageId: kickoff, accountId: 'alice', reason: 'damaged' },
    { messageId: note, accountId: 'alice', reason: 'missing' },
  ]);

  run(w.db.prepare('DELETE FROM message_raw WHERE message_id = ?'), [unparsed]);
  const missing = content(w, { storedEmailIds: [encodeStoredEmailId(unparsed)] });
  t.same(missing.emails, [{ storedEmailId: encodeStoredEmailId(unparsed), error: damaged }], 'raw MIME gone');
  t.same(missing.repairs, [{ messageId: unparsed, accountId: 'alice', reason: 'missing' }]);
});

t.test('unknown, tombstoned and out-of-scope ids are 53001 entries; malformed ids never pass the schema', async (t) => {
  const w = populated(t);
  const mine = sid(w, w.bindings.aliceInbox, 2);
  const bobs = sid(w, w.bindings.bobInbox, 1);
  const gone = sid(w, w.bindings.aliceInbox, 4);
  tombstone(w.db, w.bindings.aliceInbox, 7, [4], 'expunged', 1);
  const aliceOnly = { accounts: [{ id: 'alice', folders: ['inbox'] }] };
  const reply = GetContentReply.parse(
    ask(w, { type: 'mail-query.get-content', scope: aliceOnly, input: { storedEmailIds: [mine, bobs, gone, 'ezzzzz'] }, bodyCharacterBudget: 100 }),
  );
  const notFound = { code: 53001, message: 'No such account, folder or email is available to this caller' };
  t.equal((reply.emails[0] as EmailContent).subject, 'Short note');
  t.same(reply.emails.slice(1), [
    { storedEmailId: bobs, error: notFound },
    { storedEmailId: gone, error: notFound },
    { storedEmailId: 'ezzzzz', error: notFound },
  ] satisfies EmailContentError[]);
  t.same(reply.repairs, []);

  const parse = (input: unknown) => GetEmailContentInput.safeParse(input).success;
  t.notOk(parse({ storedEmailIds: ['e0'] }), 'a leading zero is not an id this service issues');
  t.notOk(parse({ storedEmailIds: ['E1'] }));
  t.notOk(parse({ storedEmailIds: ['12'] }));
  t.notOk(parse({ storedEmailIds: [] }), 'at least one');
  t.notOk(parse({ storedEmailIds: Array.from({ length: 11 }, (_, i) => encodeStoredEmailId(i + 1)) }), 'at most ten');
  t.ok(parse({ storedEmailIds: Array.from({ length: 10 }, (_, i) => encodeStoredEmailId(i + 1)) }));
  t.notOk(parse({ storedEmailIds: ['e1', 'e1'] }), 'no duplicates');
  t.notOk(parse({}), 'one of the two is needed');
  t.notOk(parse({ storedEmailIds: ['e1'], threadId: 't' }), 'not both');
  t.notOk(parse({ storedEmailIds: ['e1', 'e2'], bodyOffset: 5 }), 'bodyOffset with one id only');
  t.notOk(parse({ threadId: 't', bodyOffset: 5 }));
  t.ok(parse({ storedEmailIds: ['e1'], bodyOffset: 5 }));
  t.notOk(parse({ storedEmailIds: ['e1'], extra: 1 }), 'strict');
});

t.test('a thread: visible members, one per Message-ID, oldest first, the newest ten', async (t) => {
  const w = world(t);
  const root = '<root@example.org>';
  const thread: Mail[] = Array.from({ length: 12 }, (_, i) => ({
    uid: i + 1,
    subject: i === 0 ? 'Plans' : 'Re: Plans',
    messageId: i === 0 ? root : `<reply${i}@example.org>`,
    ...(i === 0 ? {} : { inReplyTo: root, references: [root] }),
    body: `Message ${i + 1} of the thread.`,
  }));
  deliver(w.db, 'alice', w.bindings.aliceInbox, thread.slice(0, 8));
  // The same conversation filed in the archive too (a Gmail label): replies 8..12, and a copy of reply 3.
  deliver(w.db, 'alice', w.bindings.aliceArchive, [...thread.slice(8), { ...thread[2]!, uid: 40, at: T0 + 3 * HOUR }]);
  deliver(w.db, 'alice', w.bindings.aliceInbox, [{ uid: 20, subject: 'Other' }]);
  const first = content(w, { storedEmailIds: [sid(w, w.bindings.aliceInbox, 1)] }).emails[0] as EmailContent;
  const threadId = first.threadId!;
  t.ok(threadId);

  const reply = content(w, { threadId }, 50);
  t.equal(reply.threadMessageCount, 12, 'twelve distinct messages; the archived copy counted once');
  t.equal(reply.emails.length, 10, 'bounded by ten');
  const bodies = reply.emails.map((e) => (e as EmailContent).body!.text);
  t.same(
    bodies,
    Array.from({ length: 10 }, (_, i) => `Message ${i + 3} of the thread.`),
    'the newest ten, oldest first',
  );
  t.same(new Set(reply.emails.map((e) => (e as EmailContent).folderAlias)), new Set(['inbox', 'archive']), 'across folders');
  t.equal((reply.emails[0] as EmailContent).storedEmailId, sid(w, w.bindings.aliceInbox, 3), 'the copy stored first stands for its Message-ID');
  t.same((reply.emails[1] as EmailContent).references, [root]);
  t.equal((reply.emails[1] as EmailContent).inReplyTo, root);

  tombstone(w.db, w.bindings.aliceInbox, 7, [1, 2], 'expunged', 1);
  const after = content(w, { threadId });
  t.equal(after.threadMessageCount, 10, 'tombstoned members are gone');
  const archiveOnly = { accounts: [{ id: 'alice', folders: ['archive'] }] };
  const scoped = GetContentReply.parse(ask(w, { type: 'mail-query.get-content', scope: archiveOnly, input: { threadId }, bodyCharacterBudget: 50 }));
  t.equal(scoped.threadMessageCount, 5, 'only the folders in scope');
  t.equal(
    refusalCode(() => content(w, { threadId: 'no-such-thread' })),
    'E_NOT_FOUND',
    'a thread with nothing visible',
  );
  t.equal(
    refusalCode(() =>
      ask(w, { type: 'mail-query.get-content', scope: { accounts: [{ id: 'bob', folders: ['inbox'] }] }, input: { threadId }, bodyCharacterBudget: 50 }),
    ),
    'E_NOT_FOUND',
    "another owner's thread reads like none",
  );
});
