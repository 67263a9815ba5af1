/**
 * recordRepairRequest: one open request per message whatever is asked
 * meanwhile; a new one once the previous is resolved; nothing for a message
 * that is gone, tombstoned or of another account.
 */
import t from 'tap';
import { recordRepairRequest } from '../../../../runtime/store/mailbox/repair-requests.ts';
import { tombstone } from '../../../../runtime/store/mailbox/server-changes.ts';
import { storeBatch } from '../../../../runtime/store/mailbox/store-batch.ts';
import { many, run } from '../../../../runtime/store/rows.ts';
import { aliceFolders, count, fetched, freshStore, idOf } from './helpers.ts';

t.test('one open request per message; idempotent; reopened after resolution', async (t) => {
  const db = freshStore(t);
  const { inbox } = aliceFolders(db);
  storeBatch(db, {
    accountId: 'alice',
    bindingId: inbox.id,
    uidValidity: 9,
    expectedEpoch: null,
    messages: [fetched(1), fetched(2)],
    advanceTo: { lastUid: 2, highestModseq: null },
    now: 10,
  });
  const first = idOf(db, inbox.id, 1);
  const second = idOf(db, inbox.id, 2);

  t.equal(recordRepairRequest(db, { messageId: first, accountId: 'alice', reason: 'damaged', now: 100 }), true, 'created');
  t.equal(recordRepairRequest(db, { messageId: first, accountId: 'alice', reason: 'damaged', now: 200 }), false, 'asked again: nothing new');
  t.equal(recordRepairRequest(db, { messageId: first, accountId: 'alice', reason: 'missing', now: 300 }), false, 'another reason while open: the first stands');
  t.equal(recordRepairRequest(db, { messageId: second, accountId: 'alice', reason: 'missing', now: 400 }), true, 'another message');
  t.same(many(db.prepare('SELECT message_id, account_id, reason, requested_at, attempt_count, resolved_at FROM repair_requests ORDER BY id')), [
    { message_id: first, account_id: 'alice', reason: 'damaged', requested_at: 100, attempt_count: 0, resolved_at: null },
    { message_id: second, account_id: 'alice', reason: 'missing', requested_at: 400, attempt_count: 0, resolved_at: null },
  ]);

  run(db.prepare("UPDATE repair_requests SET resolved_at = 500, outcome = 'refetched' WHERE message_id = ?"), [first]);
  t.equal(recordRepairRequest(db, { messageId: first, accountId: 'alice', reason: 'missing', now: 600 }), true, 'after resolution a new request opens');
  t.equal(count(db, 'repair_requests', 'message_id = ?', [first]), 2, 'the resolved one is kept');
});

t.test('nothing for a message that is gone, tombstoned, or of another account', async (t) => {
  const db = freshStore(t);
  const { inbox } = aliceFolders(db);
  storeBatch(db, {
    accountId: 'alice',
    bindingId: inbox.id,
    uidValidity: 9,
    expectedEpoch: null,
    messages: [fetched(1)],
    advanceTo: { lastUid: 1, highestModseq: null },
    now: 10,
  });
  const id = idOf(db, inbox.id, 1);
  t.equal(recordRepairRequest(db, { messageId: id, accountId: 'bob', reason: 'damaged', now: 1 }), false, 'another account');
  t.equal(recordRepairRequest(db, { messageId: id + 1000, accountId: 'alice', reason: 'damaged', now: 1 }), false, 'no such message (erased)');
  tombstone(db, inbox.id, 9, [1], 'expunged', 20);
  t.equal(recordRepairRequest(db, { messageId: id, accountId: 'alice', reason: 'damaged', now: 30 }), false, 'tombstoned');
  t.equal(count(db, 'repair_requests'), 0);
});
