import t from 'tap';
import { LAG_OF_BINDING, rawMimeOf, underivedInBinding, underivedSegment } from '../../../../runtime/store/mailbox/underived.ts';
import { storeBatch } from '../../../../runtime/store/mailbox/store-batch.ts';
import { many } from '../../../../runtime/store/rows.ts';
import { aliceFolders, fetched, freshStore, rawOf } from './helpers.ts';

t.test('a folder’s not-yet-indexed count: only its stored, underived mail, read from the index of what is underived', async (t) => {
  const db = freshStore(t);
  const { inbox, archive } = aliceFolders(db);
  const store = (bindingId: number, messages: ReturnType<typeof fetched>[]) => {
    const stored = storeBatch(db, {
      accountId: 'alice',
      bindingId,
      uidValidity: 7,
      expectedEpoch: null,
      messages,
      advanceTo: { lastUid: messages.length, highestModseq: null },
      now: 1,
    });
    if (!stored.ok) throw new Error('the batch was refused');
  };
  // inbox: two derived, three not yet (one of them a message too large to keep, which is never derived).
  store(inbox.id, [fetched(1), fetched(2), { ...fetched(3), parsed: null }, { ...fetched(4), parsed: null }, fetched(5, undefined, 'oversized')]);
  // archive: one not yet.
  store(archive.id, [{ ...fetched(1), parsed: null }, fetched(2)]);

  t.equal(underivedInBinding(db, 'alice', inbox.id), 2);
  t.equal(underivedInBinding(db, 'alice', archive.id), 1);
  t.equal(underivedInBinding(db, 'bob', inbox.id), 0, 'another account’s count of the folder is its own');

  // Every search and listing asks this for each folder it answers from: it must not read the folder's whole mail.
  const plan = many<{ detail: string }>(db.prepare(`EXPLAIN QUERY PLAN ${LAG_OF_BINDING}`), ['alice', inbox.id]).map((r) => r.detail);
  t.match(plan.join(' | '), /USING INDEX messages_underived/);
});

t.test("a segment of underived mail is bounded by rows and raw bytes; each message's raw MIME is read on its own", async (t) => {
  const db = freshStore(t);
  const { inbox } = aliceFolders(db);
  const messages = [1, 2, 3, 4].map((uid) => ({ ...fetched(uid, { subject: `Letter ${uid}`, body: 'x'.repeat(100 * uid) }), parsed: null }));
  const stored = storeBatch(db, {
    accountId: 'alice',
    bindingId: inbox.id,
    uidValidity: 7,
    expectedEpoch: null,
    messages,
    advanceTo: { lastUid: 4, highestModseq: null },
    now: 1,
  });
  if (!stored.ok) throw new Error('the batch was refused');
  const sizes = messages.map((m) => m.raw!.byteLength);

  const all = underivedSegment(db, 'alice', { afterId: 0, throughId: Number.MAX_SAFE_INTEGER, limit: 16, maxBytes: 1 << 20 });
  t.same(
    all.map((m) => [m.uid, m.alias, m.hasRaw]),
    [1, 2, 3, 4].map((uid) => [uid, 'inbox', true]),
  );
  const two = underivedSegment(db, 'alice', { afterId: 0, throughId: Number.MAX_SAFE_INTEGER, limit: 16, maxBytes: sizes[0]! + sizes[1]! });
  t.equal(two.length, 2, 'stops before the bytes bound');
  const one = underivedSegment(db, 'alice', { afterId: 0, throughId: Number.MAX_SAFE_INTEGER, limit: 16, maxBytes: 1 });
  t.equal(one.length, 1, 'the first row is taken whatever its size');
  const after = underivedSegment(db, 'alice', { afterId: all[1]!.id, throughId: all[2]!.id, limit: 16, maxBytes: 1 << 20 });
  t.same(
    after.map((m) => m.uid),
    [3],
    "after the cursor, up to the pass's last id",
  );

  t.same(Buffer.from(rawMimeOf(db, all[2]!.id)!), Buffer.from(rawOf({ subject: 'Letter 3', body: 'x'.repeat(300) })), 'the stored bytes');
  t.equal(rawMimeOf(db, all[3]!.id + 1000), null, 'a message with no raw row');
});
