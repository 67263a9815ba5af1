import { createHash } from 'node:crypto';
import t from 'tap';
import { progressEpoch, readCheckpoint } from '../../../../runtime/store/mailbox/checkpoints.ts';
import { rewind } from '../../../../runtime/store/mailbox/maintenance.ts';
import { storeBatch, type StoreBatchInput } from '../../../../runtime/store/mailbox/store-batch.ts';
import type { Database } from '../../../../runtime/store/open.ts';
import { many, one } from '../../../../runtime/store/rows.ts';
import { aliceFolders, count, fetched, freshStore, idOf, search } from './helpers.ts';

function batch(bindingId: number, uids: number[], extra: Partial<StoreBatchInput> = {}): StoreBatchInput {
  return {
    accountId: 'alice',
    bindingId,
    uidValidity: 7,
    expectedEpoch: null,
    messages: uids.map((uid) => fetched(uid)),
    advanceTo: { lastUid: Math.max(0, ...uids), highestModseq: 100n },
    now: 50,
    ...extra,
  };
}

function totals(db: Database): Record<string, number> {
  return Object.fromEntries(['messages', 'message_raw', 'search_documents', 'passages', 'checkpoints'].map((table) => [table, count(db, table)]));
}

t.test('a batch stores messages, raw MIME, search documents, passages and the checkpoint together', async (t) => {
  const db = freshStore(t);
  const { inbox } = aliceFolders(db);
  const messages = [
    fetched(1, { subject: 'Quarterly invoice', from: 'billing@vendor.example', body: 'Please pay by Friday', attachment: 'invoice.pdf' }),
    fetched(2, { subject: 'Too big' }, 'oversized'),
    fetched(3, { subject: 'Broken' }, 'unreadable'),
  ];
  const result = storeBatch(db, { ...batch(inbox.id, []), messages, advanceTo: { lastUid: 3, highestModseq: 9_007_199_254_740_993n } });
  t.same(result, { ok: true, inserted: 3, refreshed: 0, retired: 0, epoch: 0 });
  t.same(totals(db), { messages: 3, message_raw: 2, search_documents: 1, passages: 2, checkpoints: 1 }, 'oversized keeps no raw; only parsed mail is indexed');
  const stored = one<Record<string, unknown>>(
    db.prepare(
      'SELECT state, subject, from_json, to_json, has_attachments, attachments_json, parse_version, flags, modseq, internal_date FROM messages WHERE uid = 1',
    ),
  );
  t.match(stored, {
    state: 'stored',
    subject: 'Quarterly invoice',
    from_json: '[{"name":"Sender","address":"billing@vendor.example"}]',
    to_json: '[{"name":null,"address":"alice@example.org"}]',
    has_attachments: 1,
    parse_version: 1,
    flags: '["\\\\Seen"]',
    modseq: 1,
    internal_date: 1_700_000_000_001,
  });
  t.match(JSON.parse(String(stored?.attachments_json)), [{ filename: 'invoice.pdf', contentType: 'application/pdf', inline: false }]);
  const raw = one<{ mime: Buffer; sha256: Buffer }>(db.prepare('SELECT mime, sha256 FROM message_raw WHERE message_id = ?'), [idOf(db, inbox.id, 1)])!;
  t.same(raw.sha256, createHash('sha256').update(raw.mime).digest(), 'sha256 of the raw MIME');
  t.same(search(db, 'invoice'), [idOf(db, inbox.id, 1)]);
  t.same(search(db, 'attachment_names:invoice'), [idOf(db, inbox.id, 1)]);
  t.same(search(db, 'from_text:vendor'), [idOf(db, inbox.id, 1)]);
  t.match(many(db.prepare('SELECT uid, state, subject, parse_version FROM messages WHERE uid > 1 ORDER BY uid')), [
    { uid: 2, state: 'oversized', subject: null, parse_version: null },
    { uid: 3, state: 'unreadable', subject: null, parse_version: null },
  ]);
  t.same(readCheckpoint(db, inbox.id), { bindingId: inbox.id, uidValidity: 7, lastUid: 3, highestModseq: 9_007_199_254_740_993n, advancedAt: 50, epoch: 0 });
  t.equal(readCheckpoint(db, aliceFolders(db).archive.id), null, 'a folder never advanced has no checkpoint');
});

t.test('storing the same UIDs again adds nothing and refreshes server properties', async (t) => {
  const db = freshStore(t);
  const { inbox } = aliceFolders(db);
  t.match(storeBatch(db, batch(inbox.id, [1, 2])), { ok: true, inserted: 2, epoch: 0 });
  const again = batch(inbox.id, [2, 3], { expectedEpoch: 0, now: 60 });
  again.messages[0]!.flags = ['\\Flagged', '\\Seen', '\\Flagged'];
  t.match(storeBatch(db, again), { ok: true, inserted: 1, refreshed: 1 });
  t.same(totals(db), { messages: 3, message_raw: 3, search_documents: 3, passages: 6, checkpoints: 1 });
  t.same(one(db.prepare('SELECT flags, updated_at FROM messages WHERE uid = 2')), { flags: '["\\\\Flagged","\\\\Seen"]', updated_at: 60 });
  t.equal(readCheckpoint(db, inbox.id)?.lastUid, 3);
  t.match(storeBatch(db, batch(inbox.id, [1], { expectedEpoch: 0, advanceTo: { lastUid: 1, highestModseq: null } })), { ok: true, inserted: 0 });
  t.match(readCheckpoint(db, inbox.id), { lastUid: 3, highestModseq: 100n }, 'the checkpoint never moves back');
});

t.test('a batch failing at its last message leaves nothing behind, checkpoint included', async (t) => {
  const db = freshStore(t);
  const { inbox } = aliceFolders(db);
  storeBatch(db, batch(inbox.id, [1]));
  const before = totals(db);
  const good = batch(inbox.id, [2, 3, 4], { expectedEpoch: 0, advanceTo: { lastUid: 4, highestModseq: 200n } });
  const bad = { ...good, messages: [...good.messages, { ...fetched(5), uid: 0 }] }; // refused by CHECK (uid >= 1), after three good rows
  t.throws(() => storeBatch(db, bad), { code: 'SQLITE_CONSTRAINT_CHECK' });
  t.same(totals(db), before);
  t.same(search(db, 'letter'), [idOf(db, inbox.id, 1)], 'the index holds nothing of the failed batch');
  t.match(readCheckpoint(db, inbox.id), { lastUid: 1, highestModseq: 100n });
  t.equal(db.inTransaction, false);
  t.match(storeBatch(db, batch(inbox.id, [2, 3, 4], { expectedEpoch: 0 })), { ok: true, inserted: 3 }, 'the batch goes through once fixed');
});

t.test("a rewind during a run has the run's next advance refused, and nothing of that batch is stored", async (t) => {
  const db = freshStore(t);
  const { inbox } = aliceFolders(db);
  t.equal(progressEpoch(db, inbox.id), 0);
  const first = storeBatch(db, batch(inbox.id, [1, 2]));
  if (!first.ok) throw new Error('first batch refused');
  t.match(rewind(db, 'alice', 'inbox', 70), { folders: ['inbox'] });
  t.equal(progressEpoch(db, inbox.id), 1);
  const before = totals(db);
  t.same(storeBatch(db, batch(inbox.id, [3], { expectedEpoch: first.epoch })), { ok: false, reason: 'checkpoint-moved' });
  t.same(
    storeBatch(db, batch(inbox.id, [3], { expectedEpoch: null })),
    { ok: true, inserted: 1, refreshed: 0, retired: 0, epoch: 1 },
    'a run starting afresh goes on',
  );
  t.equal(before.messages! + 1, count(db, 'messages'));
});

t.test('expectedEpoch null holds only while there is no checkpoint; a checkpoint under another UIDVALIDITY refuses', async (t) => {
  const db = freshStore(t);
  const { inbox } = aliceFolders(db);
  storeBatch(db, batch(inbox.id, [1]));
  t.same(storeBatch(db, batch(inbox.id, [2])), { ok: false, reason: 'checkpoint-moved' }, 'a checkpoint appeared that the run did not know');
  t.same(storeBatch(db, batch(inbox.id, [2], { expectedEpoch: 0, uidValidity: 8 })), { ok: false, reason: 'checkpoint-moved' });
  t.equal(count(db, 'messages'), 1);
  t.throws(() => storeBatch(db, batch(inbox.id, [2], { accountId: 'bob', expectedEpoch: 0 })), /another account/);
});

t.test('without a checkpoint, live rows under another UIDVALIDITY are retired before the refetch', async (t) => {
  const db = freshStore(t);
  const { inbox } = aliceFolders(db);
  storeBatch(db, batch(inbox.id, [1, 2]));
  rewind(db, 'alice', 'inbox', 60);
  const refetch = storeBatch(db, batch(inbox.id, [1, 2], { uidValidity: 8, expectedEpoch: 1 }));
  t.match(refetch, { ok: true, inserted: 2, retired: 2 });
  t.same(
    many(db.prepare('SELECT uidvalidity, uid, state FROM messages ORDER BY id')),
    [
      { uidvalidity: 7, uid: 1, state: 'tombstoned' },
      { uidvalidity: 7, uid: 2, state: 'tombstoned' },
      { uidvalidity: 8, uid: 1, state: 'stored' },
      { uidvalidity: 8, uid: 2, state: 'stored' },
    ],
    'no message is visible twice',
  );
  t.equal(count(db, 'search_documents'), 2);
});

t.test('programming errors are refused before anything is written', async (t) => {
  const db = freshStore(t);
  const { inbox } = aliceFolders(db);
  t.throws(() => storeBatch(db, { ...batch(inbox.id, []), messages: [{ ...fetched(1), raw: null }] }), /must carry raw MIME/);
  t.throws(() => storeBatch(db, { ...batch(inbox.id, []), messages: [{ ...fetched(1, undefined, 'oversized'), raw: Buffer.from('x') }] }), /must not carry/);
  t.throws(() => storeBatch(db, batch(999, [1])), /does not exist/);
  t.equal(count(db, 'messages'), 0);
});
