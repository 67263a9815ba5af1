import { recordServerCount } from '../../../../runtime/store/mailbox/folder-progress.ts';
import t from 'tap';
import { syncBindings } from '../../../../runtime/store/mailbox/bindings.ts';
import { progressEpoch, readCheckpoint } from '../../../../runtime/store/mailbox/checkpoints.ts';
import {
  advanceRederivation,
  applyDerivation,
  applyDerivations,
  erasePass,
  rederivationRecord,
  rederivationRun,
  rederivationSegment,
  requestRederivation,
  rewind,
  rewindAssessment,
  setRederivationCarriage,
} from '../../../../runtime/store/mailbox/maintenance.ts';
import { tombstone } from '../../../../runtime/store/mailbox/server-changes.ts';
import { storeBatch } from '../../../../runtime/store/mailbox/store-batch.ts';
import type { Database } from '../../../../runtime/store/open.ts';
import { many, one, run } from '../../../../runtime/store/rows.ts';
import { refusal } from '../fixtures/scratch.ts';
import { count, fetched, freshStore, idOf, parsedOf, search } from './helpers.ts';

type Folders = { db: Database; inbox: number; archive: number; lists: number };

/** alice: inbox (uids 1-3), archive (1-2), lists (configured, never fetched). */
function mailbox(t: Parameters<typeof freshStore>[0]): Folders {
  const db = freshStore(t);
  const [archive, inbox, lists] = syncBindings(
    db,
    'alice',
    [
      { alias: 'inbox', path: 'INBOX' },
      { alias: 'archive', path: 'Archive' },
      { alias: 'lists', path: 'Lists' },
    ],
    1,
  );
  const store = (bindingId: number, uids: number[], word: string) => {
    const result = storeBatch(db, {
      accountId: 'alice',
      bindingId,
      uidValidity: 7,
      expectedEpoch: null,
      messages: uids.map((uid) => fetched(uid, { subject: `${word} ${uid}`, body: `${word} body` })),
      advanceTo: { lastUid: Math.max(...uids), highestModseq: 9n },
      now: 2,
    });
    if (!result.ok) throw new Error('setup refused');
  };
  store(inbox!.id, [1, 2, 3], 'inboxy');
  store(archive!.id, [1, 2], 'archived');
  return { db, inbox: inbox!.id, archive: archive!.id, lists: lists!.id };
}

t.test('rewind assessment counts stored mail in scope; rewind discards progress only and bumps the epoch', async (t) => {
  const { db, inbox, archive, lists } = mailbox(t);
  tombstone(db, archive, 7, [1, 2], 'expunged', 3);
  t.same(rewindAssessment(db, 'alice'), { account: 'alice', folder: null, storedEmailCount: 3 });
  t.same(rewindAssessment(db, 'alice', 'archive'), { account: 'alice', folder: 'archive', storedEmailCount: 0 }, 'tombstones count zero');
  t.same(rewindAssessment(db, 'alice', 'nowhere'), { account: 'alice', folder: 'nowhere', storedEmailCount: 0 });
  t.same(rewindAssessment(db, 'alice', ''), { account: 'alice', folder: null, storedEmailCount: 3 }, 'a blank folder is an omission');

  t.same(rewind(db, 'alice', 'inbox', 4), { account: 'alice', folder: 'inbox', folders: ['inbox'] });
  t.equal(readCheckpoint(db, inbox), null);
  t.equal(progressEpoch(db, inbox), 1);
  t.equal(count(db, 'messages', 'binding_id = ?', [inbox]), 3, 'no mail erased');
  t.same(rewind(db, 'alice', 'inbox', 5), { account: 'alice', folder: 'inbox', folders: [] }, 'nothing left to discard');
  t.equal(progressEpoch(db, inbox), 1, 'a binding without progress keeps its epoch');

  syncBindings(db, 'alice', [{ alias: 'inbox', path: 'INBOX' }], 6); // archive and lists withdrawn
  t.same(rewind(db, 'alice', undefined, 7), { account: 'alice', folder: null, folders: ['archive'] }, 'withdrawn mappings are in the account scope');
  t.equal(progressEpoch(db, archive), 1);
  t.equal(progressEpoch(db, lists), 0);
  t.same(rewind(db, 'bob', null, 8), { account: 'bob', folder: null, folders: [] });
});

t.test('erasure refuses a mirrored folder, then erases in bounded passes and drops the checkpoint with the last', async (t) => {
  const { db, inbox, archive } = mailbox(t);
  const err = refusal(t, () => erasePass(db, 'alice', 'archive', 10, 3));
  t.equal(err?.code, 'E_SYNC_FOLDER_MIRRORED');
  t.match(err?.message, /archive.*is still mirrored/);
  t.same(err?.details, { account: 'alice', folder: 'archive' });
  t.equal(count(db, 'messages', 'binding_id = ?', [archive]), 2, 'nothing erased');

  syncBindings(
    db,
    'alice',
    [
      { alias: 'inbox', path: 'INBOX' },
      { alias: 'lists', path: 'Lists' },
    ],
    4,
  );
  const first = idOf(db, archive, 1);
  run(db.prepare("INSERT INTO repair_requests (message_id, account_id, reason, requested_at) VALUES (?, 'alice', 'missing', 1)"), [first]);
  recordServerCount(db, archive, 2, 4);
  t.same(erasePass(db, 'alice', 'archive', 1, 5), { erasedEmailCount: 1, emailsRemain: true, remainingEmailCount: 1 });
  t.equal(count(db, 'repair_requests'), 0, 'outstanding repair requests went with it');
  t.ok(readCheckpoint(db, archive), 'the checkpoint stays while mail remains');
  t.same(erasePass(db, 'alice', 'archive', 10, 6), { erasedEmailCount: 1, emailsRemain: false, remainingEmailCount: 0 });
  t.equal(readCheckpoint(db, archive), null, 'the pass that empties the folder removes its checkpoint');
  t.equal(count(db, 'folder_server_counts', 'binding_id = ?', [archive]), 0, "and the server's count of it");
  for (const table of ['messages', 'message_raw', 'search_documents', 'passages']) {
    t.equal(count(db, table, table === 'messages' ? 'binding_id = ?' : 'message_id IN (SELECT id FROM messages WHERE binding_id = ?)', [archive]), 0);
  }
  t.same(search(db, 'archived'), []);
  t.equal(count(db, 'folder_bindings', 'id = ?', [archive]), 1, 'the binding stays');
  t.same(
    erasePass(db, 'alice', 'archive', 10, 7),
    { erasedEmailCount: 0, emailsRemain: false, remainingEmailCount: 0 },
    'an empty folder succeeds removing nothing',
  );
  t.same(erasePass(db, 'alice', 'never-mapped', 10, 7), { erasedEmailCount: 0, emailsRemain: false, remainingEmailCount: 0 }, 'an unknown alias too');
  t.equal(count(db, 'messages', 'binding_id = ?', [inbox]), 3, 'other folders untouched');
  t.ok(readCheckpoint(db, inbox));
});

t.test('erasure takes every generation and the tombstones of a withdrawn alias', async (t) => {
  const { db, inbox } = mailbox(t);
  tombstone(db, inbox, 7, [3], 'expunged', 3);
  const moved = syncBindings(db, 'alice', [{ alias: 'inbox', path: 'Mail/Inbox' }], 4).find((b) => b.alias === 'inbox');
  storeBatch(db, {
    accountId: 'alice',
    bindingId: moved!.id,
    uidValidity: 1,
    expectedEpoch: null,
    messages: [fetched(1)],
    advanceTo: { lastUid: 1, highestModseq: null },
    now: 5,
  });
  t.equal(refusal(t, () => erasePass(db, 'alice', 'inbox', 10, 6))?.code, 'E_SYNC_FOLDER_MIRRORED');
  syncBindings(db, 'alice', [], 7);
  t.same(
    erasePass(db, 'alice', 'inbox', 100, 8),
    { erasedEmailCount: 3, emailsRemain: false, remainingEmailCount: 0 },
    'two generations, the tombstone not counted',
  );
  t.equal(count(db, 'messages', 'binding_id IN (?, ?)', [inbox, moved!.id]), 0);
  t.equal(count(db, 'checkpoints'), 1, "only archive's checkpoint remains");
});

t.test('re-derivation segments read stored raw MIME in id order and tell missing and damaged content', async (t) => {
  const { db, inbox, archive } = mailbox(t);
  storeBatch(db, {
    accountId: 'alice',
    bindingId: inbox,
    uidValidity: 7,
    expectedEpoch: 0,
    messages: [fetched(4, undefined, 'oversized'), fetched(5, undefined, 'unreadable')],
    advanceTo: { lastUid: 5, highestModseq: null },
    now: 3,
  });
  tombstone(db, inbox, 7, [3], 'expunged', 3);
  const [i1, i2, i5] = [idOf(db, inbox, 1), idOf(db, inbox, 2), idOf(db, inbox, 5)];
  run(db.prepare('DELETE FROM message_raw WHERE message_id = ?'), [i2]);
  run(db.prepare("UPDATE message_raw SET mime = CAST('tampered' AS BLOB) WHERE message_id = ?"), [i1]);

  const all = rederivationSegment(db, 'alice', null, 0, 100);
  t.same(
    all.map((m) => m.id),
    [i1, i2, idOf(db, archive, 1), idOf(db, archive, 2), i5],
    'stored and unreadable; not oversized or tombstoned',
  );
  t.match(all[0], { id: i1, sha256ok: false });
  t.same(Buffer.from(all[0]!.raw!).toString(), 'tampered');
  t.same(all[1], { id: i2, raw: null, sha256ok: false });
  t.equal(all[2]!.sha256ok, true);
  t.same(
    rederivationSegment(db, 'alice', 'inbox', i1, 1).map((m) => m.id),
    [i2],
    'bounded, after the position, folder scope',
  );
  t.same(
    rederivationSegment(db, 'alice', 'inbox', i2, 10).map((m) => m.id),
    [i5],
  );
  t.same(rederivationSegment(db, 'bob', null, 0, 10), []);
});

t.test('applying a derivation rewrites derived columns, search document and passages only', async (t) => {
  const { db, inbox } = mailbox(t);
  storeBatch(db, {
    accountId: 'alice',
    bindingId: inbox,
    uidValidity: 7,
    expectedEpoch: 0,
    messages: [fetched(5, undefined, 'unreadable'), fetched(6, undefined, 'oversized')],
    advanceTo: { lastUid: 6, highestModseq: null },
    now: 3,
  });
  const [i1, i2, i5, i6] = [1, 2, 5, 6].map((uid) => idOf(db, inbox, uid)) as [number, number, number, number];
  const rawBefore = many(db.prepare('SELECT message_id, mime, sha256 FROM message_raw ORDER BY message_id'));
  const serverBefore = many(db.prepare('SELECT id, flags, keywords, modseq, internal_date, size FROM messages ORDER BY id'));

  t.equal(applyDerivation(db, i1, { ...parsedOf(1, { subject: 'Renamed thing', body: 'fresh words' }), parseVersion: 2 }, 10), true);
  t.same(one(db.prepare('SELECT state, subject, parse_version, derived_at FROM messages WHERE id = ?'), [i1]), {
    state: 'stored',
    subject: 'Renamed thing',
    parse_version: 2,
    derived_at: 10,
  });
  t.same(search(db, 'renamed'), [i1]);
  t.same(search(db, 'inboxy').includes(i1), false, 'the old text left the index');
  t.same(many(db.prepare('SELECT ordinal, text, parse_version FROM passages WHERE message_id = ? ORDER BY ordinal'), [i1]), [
    { ordinal: 0, text: 'fresh words', parse_version: 2 },
    { ordinal: 1, text: 'fresh words (second passage)', parse_version: 2 },
  ]);

  t.equal(applyDerivation(db, i2, null, 11), true, 'unparseable now');
  t.same(one(db.prepare('SELECT state, subject, thread_id, parse_version FROM messages WHERE id = ?'), [i2]), {
    state: 'unreadable',
    subject: null,
    thread_id: null,
    parse_version: null,
  });
  t.equal(count(db, 'search_documents', 'message_id = ?', [i2]), 0);
  t.equal(count(db, 'passages', 'message_id = ?', [i2]), 0);

  t.equal(
    applyDerivations(
      db,
      [
        { id: i5, parsed: parsedOf(5, { subject: 'Readable at last' }) },
        { id: i6, parsed: parsedOf(6, { subject: 'x' }) },
        { id: 9999, parsed: null },
      ],
      12,
    ),
    1,
    'oversized and unknown ids are skipped',
  );
  t.same(one(db.prepare('SELECT state, subject FROM messages WHERE id = ?'), [i5]), { state: 'stored', subject: 'Readable at last' });
  tombstone(db, inbox, 7, [3], 'expunged', 13);
  t.equal(applyDerivation(db, idOf(db, inbox, 3), parsedOf(3, { subject: 'resurrected' }), 14), false, 'a tombstone is never given content back');

  t.same(
    many(db.prepare('SELECT message_id, mime, sha256 FROM message_raw ORDER BY message_id')),
    rawBefore.filter((r) => (r as { message_id: number }).message_id !== idOf(db, inbox, 3)),
    'raw MIME untouched',
  );
  t.same(
    many(db.prepare('SELECT id, flags, keywords, modseq, internal_date, size FROM messages WHERE state <> ? ORDER BY id'), ['tombstoned']),
    serverBefore.filter((r) => (r as { id: number }).id !== idOf(db, inbox, 3)),
    'server properties untouched',
  );
  db.exec("INSERT INTO search_index (search_index, rank) VALUES ('integrity-check', 1)");
});

t.test('re-derivation runs: one outstanding run per scope, durable progress, forgotten position at the end', async (t) => {
  const { db } = mailbox(t);
  t.equal(rederivationRun(db, 'alice', null), null, 'a scope never asked about has no run');
  const first = requestRederivation(db, 'alice', null, Date.UTC(2025, 0, 1));
  t.match(first, { started: true, carriage: 'carried', lastMessageId: 0 });
  t.same(first.run, {
    account: 'alice',
    folder: null,
    requestedAt: '2025-01-01T00:00:00.000Z',
    isOutstanding: true,
    rederivedEmailCount: 0,
    unreadableEmailCount: 0,
    missingContentEmailCount: 0,
    endedAt: null,
  });
  const again = requestRederivation(db, 'alice', '', Date.UTC(2025, 0, 2));
  t.same(again, { ...first, started: false }, 'asking again returns the run under way (a blank folder is the account scope)');
  const folder = requestRederivation(db, 'alice', 'inbox', Date.UTC(2025, 0, 2));
  t.match(folder, { started: true, run: { folder: 'inbox' } });
  t.not(folder.runId, first.runId, 'two scopes are two runs');

  t.equal(advanceRederivation(db, first.runId, { lastMessageId: 3, rederived: 2, unreadable: 1, missing: 0, done: false, now: 5 }), true);
  t.equal(
    advanceRederivation(db, first.runId, { lastMessageId: 3, rederived: 2, unreadable: 1, missing: 0, done: false, now: 6 }),
    false,
    'a segment recorded twice changes nothing',
  );
  t.match(rederivationRecord(db, 'alice', null), { lastMessageId: 3, run: { rederivedEmailCount: 2, unreadableEmailCount: 1, isOutstanding: true } });
  setRederivationCarriage(db, first.runId, 'queue-at-capacity', 6);
  t.match(rederivationRecord(db, 'alice', null), { carriage: 'queue-at-capacity' });
  t.equal(advanceRederivation(db, first.runId, { lastMessageId: 5, rederived: 4, unreadable: 1, missing: 1, done: true, now: Date.UTC(2025, 0, 3) }), true);
  t.same(rederivationRun(db, 'alice', null), {
    account: 'alice',
    folder: null,
    requestedAt: '2025-01-01T00:00:00.000Z',
    isOutstanding: false,
    rederivedEmailCount: 4,
    unreadableEmailCount: 1,
    missingContentEmailCount: 1,
    endedAt: '2025-01-03T00:00:00.000Z',
  });
  t.equal(rederivationRecord(db, 'alice', null)?.lastMessageId, null, 'the ended run forgot its position');
  t.equal(
    advanceRederivation(db, first.runId, { lastMessageId: 9, rederived: 9, unreadable: 0, missing: 0, done: true, now: 7 }),
    false,
    'an ended run stays ended',
  );

  const next = requestRederivation(db, 'alice', null, Date.UTC(2025, 0, 4));
  t.match(next, { started: true, run: { isOutstanding: true, rederivedEmailCount: 0 } }, 'after the end, asking starts a new run');
  t.not(next.runId, first.runId);
  t.throws(
    () =>
      run(db.prepare("INSERT INTO rederivation_runs (account_id, folder_alias, requested_at, last_message_id, updated_at) VALUES ('alice', NULL, 1, 0, 1)")),
    { code: 'SQLITE_CONSTRAINT_UNIQUE' },
    'the schema holds one outstanding run per scope',
  );
});
