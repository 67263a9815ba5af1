import t from 'tap';
import { readCheckpoint } from '../../../../runtime/store/mailbox/checkpoints.ts';
import { applyFlagChanges, knownUids, localFlags, retireUidValidity, tombstone } from '../../../../runtime/store/mailbox/server-changes.ts';
import { storeBatch } from '../../../../runtime/store/mailbox/store-batch.ts';
import type { Database } from '../../../../runtime/store/open.ts';
import { one, run } from '../../../../runtime/store/rows.ts';
import { aliceFolders, count, fetched, freshStore, idOf, search } from './helpers.ts';

function mailbox(t: Parameters<typeof freshStore>[0]): { db: Database; inbox: number } {
  const db = freshStore(t);
  const { inbox } = aliceFolders(db);
  const result = storeBatch(db, {
    accountId: 'alice',
    bindingId: inbox.id,
    uidValidity: 7,
    expectedEpoch: null,
    messages: [
      fetched(1, { subject: 'Secret merger plans', from: 'ceo@corp.example', body: 'Confidential: we acquire Initech' }),
      fetched(2, { subject: 'Lunch' }),
      fetched(3, { subject: 'Big file' }, 'oversized'),
    ],
    advanceTo: { lastUid: 3, highestModseq: 10n },
    now: 5,
  });
  if (!result.ok) throw new Error('setup refused');
  return { db, inbox: inbox.id };
}

t.test('known UIDs and local flags list live rows only', async (t) => {
  const { db, inbox } = mailbox(t);
  t.same([...knownUids(db, inbox, 7)], [1, 2, 3]);
  t.same([...knownUids(db, inbox, 8)], [], 'another UIDVALIDITY holds nothing');
  tombstone(db, inbox, 7, [2], 'expunged', 9);
  t.same([...knownUids(db, inbox, 7)], [1, 3]);
  t.same(
    [...localFlags(db, inbox, 7)],
    [
      [1, { flags: ['\\Seen'], keywords: [] }],
      [3, { flags: ['\\Seen'], keywords: [] }],
    ],
  );
});

t.test('flag changes update the rows and advance HIGHESTMODSEQ in the same transaction', async (t) => {
  const { db, inbox } = mailbox(t);
  const changed = applyFlagChanges(
    db,
    inbox,
    7,
    [
      { uid: 1, flags: ['\\Seen', '\\Flagged'], keywords: ['$Work'], modseq: 11n },
      { uid: 2, flags: ['\\Seen'], keywords: [], modseq: null }, // same as stored
      { uid: 99, flags: [], keywords: [], modseq: 12n }, // not held
    ],
    12n,
    20,
  );
  t.equal(changed, 1);
  t.same(localFlags(db, inbox, 7).get(1), { flags: ['\\Flagged', '\\Seen'], keywords: ['$Work'] });
  t.same(one(db.prepare('SELECT modseq, updated_at FROM messages WHERE uid = 1')), { modseq: 11, updated_at: 20 });
  t.match(readCheckpoint(db, inbox), { highestModseq: 12n, advancedAt: 20, lastUid: 3 });
  t.equal(applyFlagChanges(db, inbox, 7, [], 11n, 30), 0);
  t.match(readCheckpoint(db, inbox), { highestModseq: 12n, advancedAt: 20 }, 'a lower HIGHESTMODSEQ does not move it back');
  t.equal(applyFlagChanges(db, inbox, 8, [{ uid: 1, flags: [], keywords: [], modseq: null }], 50n, 40), 0, 'another UIDVALIDITY changes nothing');
  t.match(readCheckpoint(db, inbox), { highestModseq: 12n });
});

t.test('a tombstone keeps identity only: content emptied, child rows gone, no longer found by search', async (t) => {
  const { db, inbox } = mailbox(t);
  const id = idOf(db, inbox, 1);
  run(db.prepare("INSERT INTO repair_requests (message_id, account_id, reason, requested_at) VALUES (?, 'alice', 'damaged', 1)"), [id]);
  t.same(search(db, 'merger'), [id]);
  t.equal(tombstone(db, inbox, 7, [1, 1, 42], 'expunged', 30), 1, 'repeats and unknown UIDs count nothing');
  t.equal(tombstone(db, inbox, 7, [1], 'expunged', 31), 0, 'already a tombstone');
  t.same(search(db, 'merger'), []);
  t.same(search(db, 'initech'), []);
  t.same(search(db, 'from_text:ceo'), []);
  for (const table of ['message_raw', 'search_documents', 'passages', 'repair_requests']) {
    t.equal(count(db, table, 'message_id = ?', [id]), 0, `${table} row deleted`);
  }
  const row = one<Record<string, unknown>>(db.prepare('SELECT * FROM messages WHERE id = ?'), [id])!;
  const kept = Object.fromEntries(Object.entries(row).filter(([, value]) => value !== null));
  t.same(kept, {
    id,
    account_id: 'alice',
    binding_id: inbox,
    uidvalidity: 7,
    uid: 1,
    state: 'tombstoned',
    flags: '[]',
    keywords: '[]',
    stored_at: 5,
    updated_at: 30,
    tombstoned_at: 30,
    tombstone_reason: 'expunged',
  });
  t.notMatch(JSON.stringify(row), /merger|ceo@|Initech|m1@example/i, 'nothing of the mail remains');
  t.equal(count(db, 'messages', "uid = 2 AND state = 'stored'"), 1, 'other mail untouched');
  db.exec("INSERT INTO search_index (search_index, rank) VALUES ('integrity-check', 1)");
});

t.test('a new UIDVALIDITY retires every old row and resets the checkpoint in one transaction', async (t) => {
  const { db, inbox } = mailbox(t);
  t.same(retireUidValidity(db, inbox, 8, 40), { tombstoned: 3 });
  t.equal(count(db, 'messages', "state = 'tombstoned' AND tombstone_reason = 'uidvalidity-changed'"), 3);
  t.same([...knownUids(db, inbox, 7)], []);
  t.equal(count(db, 'message_raw'), 0);
  t.equal(count(db, 'search_documents'), 0);
  t.same(readCheckpoint(db, inbox), { bindingId: inbox, uidValidity: 8, lastUid: 0, highestModseq: null, advancedAt: 40, epoch: 0 });
  const refetch = storeBatch(db, {
    accountId: 'alice',
    bindingId: inbox,
    uidValidity: 8,
    expectedEpoch: 0,
    messages: [fetched(1, { subject: 'Secret merger plans' })],
    advanceTo: { lastUid: 1, highestModseq: 3n },
    now: 50,
  });
  t.match(refetch, { ok: true, inserted: 1, retired: 0 }, 'the refetch stores under the new UIDVALIDITY, same UID, no clash');
  t.equal(search(db, 'merger').length, 1, 'found once');
  t.same(retireUidValidity(db, inbox, 8, 60), { tombstoned: 0 }, 'the current UIDVALIDITY is left alone');
});
