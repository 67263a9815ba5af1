import t from 'tap';
import { LAG_OF_BINDING, underivedInBinding } from '../../../../runtime/store/mailbox/underived.ts';
import { storeBatch } from '../../../../runtime/store/mailbox/store-batch.ts';
import { many } from '../../../../runtime/store/rows.ts';
import { aliceFolders, fetched, freshStore } from './helpers.ts';

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
