/**
 * The journal's placements in the store: recording once per request
 * identifier (shared with message changes), what the outbox reads of a
 * job, a placement ending or dead-lettered (its mark kept), and that a
 * placement in the queue leaves the message changes' overlay alone. A
 * copy's mark survives a dead letter too.
 */
import t from 'tap';
import { type Change, deadLetterChange, headChange, recordChangeProgress, recordChanges } from '../../../../runtime/store/mailbox/changes.ts';
import {
  appendSource,
  deadLetterPlacement,
  endPlacement,
  type Placement,
  readPlacement,
  recordAppend,
  recordRemoval,
  removalEnded,
} from '../../../../runtime/store/mailbox/placements.ts';
import { storeBatch } from '../../../../runtime/store/mailbox/store-batch.ts';
import type { Database } from '../../../../runtime/store/open.ts';
import { one, run } from '../../../../runtime/store/rows.ts';
import { aliceFolders, count, fetched, freshStore, idOf } from './helpers.ts';

const failure = { classification: 'server-unresponsive', code: 'E_IMAP_UNRESPONSIVE', reason: 'x' } as const;

function outgoing(db: Database, account: string, messageId: string): number {
  const raw = Buffer.from(`Message-ID: ${messageId}\r\n\r\nbody\r\n`);
  return Number(
    run(
      db.prepare(
        `INSERT INTO outgoing_emails (account_id, requester, idempotency_key, fingerprint, origin, message_id, envelope_from, raw_mime, size_bytes,
           stage, due_at, recorded_at) VALUES (?, 'agent', ?, 'fp', 'new', ?, 'a@example.org', ?, ?, 'Sent', 0, 0)`,
      ),
      [account, messageId, messageId, raw, raw.length],
    ).lastInsertRowid,
  );
}

const progressOf = (db: Database, job: number): Record<string, unknown> =>
  JSON.parse(one<{ progress: string }>(db.prepare('SELECT progress FROM jobs WHERE id = ?'), [job])!.progress);

t.test('an append is recorded once per request identifier, and read back as the outbox reads it', async (t) => {
  const db = freshStore(t);
  const id = outgoing(db, 'alice', '<s1@example.org>');
  const ask = {
    accountId: 'alice',
    requester: 'agent',
    requestId: 'copy-1',
    target: 'sent',
    source: { table: 'outgoing_emails', id },
    flags: ['\\Seen'],
    messageIdHeader: '<s1@example.org>',
    now: 5,
  } as const;
  const first = recordAppend(db, { ...ask, flags: [...ask.flags] });
  t.match(first, { outcome: 'recorded', repeated: false, view: { state: 'pending', outcome: null, placed: null } });
  const job = first.outcome === 'recorded' ? first.job : 0;
  t.match(recordAppend(db, { ...ask, flags: ['\\Seen', '\\Seen'] }), { outcome: 'recorded', job, repeated: true }, 'the same ask again (flags as a set)');
  t.same(recordAppend(db, { ...ask, flags: [], now: 6 }), { outcome: 'request-conflict' }, 'something else under the identifier');
  t.same(recordAppend(db, { ...ask, accountId: 'bob', flags: ['\\Seen'] }), { outcome: 'request-conflict' }, 'another account under the identifier');
  t.same(recordAppend(db, { ...ask, requestId: 'copy-2', flags: ['\\Seen'], messageIdHeader: '<other@example.org>' }), { outcome: 'not-found' });
  t.same(recordAppend(db, { ...ask, requestId: 'copy-3', flags: ['\\Seen'], accountId: 'bob' }), { outcome: 'not-found' }, 'another account’s row');
  t.same(
    recordChanges(db, { accountId: 'alice', messageId: 1, requester: 'agent', requestId: 'copy-1', changes: [{ kind: 'delete' }], now: 7 }),
    { outcome: 'request-conflict' },
    'message changes share the identifiers',
  );
  t.equal(count(db, 'jobs', "type = 'mailbox-change'"), 1, 'one job');
  t.same(appendSource(db, 'alice', { table: 'outgoing_emails', id })?.messageIdHeader, '<s1@example.org>');
  t.equal(appendSource(db, 'bob', { table: 'outgoing_emails', id }), null);
  t.same(readPlacement(db, job), { state: 'pending', outcome: null, placed: null });
  t.equal(readPlacement(db, job, 'bob'), null);

  // A removal names an append of the account.
  t.same(recordRemoval(db, { accountId: 'bob', requester: 'agent', requestId: 'rm-1', appendJob: job, now: 8 }), { outcome: 'not-found' });
  t.same(recordRemoval(db, { accountId: 'alice', requester: 'agent', requestId: 'rm-1', appendJob: job + 100, now: 8 }), { outcome: 'not-found' });
  const removal = recordRemoval(db, { accountId: 'alice', requester: 'agent', requestId: 'rm-1', appendJob: job, now: 8 });
  t.match(removal, { outcome: 'recorded', repeated: false });
  const removalJob = removal.outcome === 'recorded' ? removal.job : 0;
  t.same(
    recordRemoval(db, { accountId: 'alice', requester: 'agent', requestId: 'rm-2', appendJob: removalJob, now: 8 }),
    { outcome: 'not-found' },
    'not a removal of a removal',
  );

  // An attempt's mark, then a dead letter: the mark stays beside the outcome.
  const head = headChange(db, 'alice') as Placement;
  t.equal(head.job.id, job, 'the append is first in line');
  recordChangeProgress(db, job, { placement: { path: 'Sent', uidValidity: 3, uidNext: 10 } });
  deadLetterPlacement(db, head, { outcome: 'failed', attempts: 5, failure, now: 9 });
  t.same(progressOf(db, job), { placement: { path: 'Sent', uidValidity: 3, uidNext: 10 }, outcome: 'failed' });
  t.same(readPlacement(db, job), { state: 'dead-lettered', outcome: 'failed', placed: null });
  t.notOk(removalEnded(db, 'alice', job));

  const next = headChange(db, 'alice') as Placement;
  t.equal(next.job.id, removalJob);
  endPlacement(db, next, { outcome: 'gone', placed: null, now: 10 });
  t.same(readPlacement(db, removalJob), { state: 'completed', outcome: 'gone', placed: null });
  t.ok(removalEnded(db, 'alice', job), 'the removal of the append has ended');
  t.same(one(db.prepare("SELECT mutation, message_id, source_path, target_path, detail, outcome FROM mutation_audit WHERE mutation = 'remove-appended'")), {
    mutation: 'remove-appended',
    message_id: null,
    source_path: null,
    target_path: null,
    detail: JSON.stringify({ appendJob: job }),
    outcome: 'gone',
  });
  t.equal(headChange(db, 'alice'), null);
});

t.test('a removal tombstones the copy the mirror holds; placements leave the overlay alone', async (t) => {
  const db = freshStore(t);
  const { inbox } = aliceFolders(db);
  t.ok(
    storeBatch(db, {
      accountId: 'alice',
      bindingId: inbox.id,
      uidValidity: 7,
      expectedEpoch: null,
      messages: [fetched(1), fetched(2)],
      advanceTo: { lastUid: 2, highestModseq: 10n },
      now: 1,
    }).ok,
  );
  const local = idOf(db, inbox.id, 2);
  const id = outgoing(db, 'alice', '<s2@example.org>');
  const appended = recordAppend(db, {
    accountId: 'alice',
    requester: 'agent',
    requestId: 'a',
    target: 'drafts',
    source: { table: 'outgoing_emails', id },
    flags: ['\\Draft'],
    messageIdHeader: '<s2@example.org>',
    now: 2,
  });
  const job = appended.outcome === 'recorded' ? appended.job : 0;
  // A flag change recorded behind the append: its overlay is laid, the placement's end does not disturb it.
  recordChanges(db, { accountId: 'alice', messageId: local, requester: 'agent', requestId: null, changes: [{ kind: 'set-flagged', value: true }], now: 3 });
  const overlay = () => one<{ requested_flags: string | null }>(db.prepare('SELECT requested_flags FROM messages WHERE id = ?'), [local])!.requested_flags;
  t.equal(overlay(), '["\\\\Flagged","\\\\Seen"]');
  endPlacement(db, headChange(db, 'alice') as Placement, { outcome: 'applied', placed: { path: 'INBOX', uidValidity: 7, uid: 2 }, now: 4 });
  t.equal(overlay(), '["\\\\Flagged","\\\\Seen"]', 'the outstanding flag change still shows');
  t.same(readPlacement(db, job), { state: 'completed', outcome: 'applied', placed: { path: 'INBOX', uidValidity: 7, uid: 2 } });
  // The flag change next, then the removal of what the append placed (here: the mirrored INBOX UID 2).
  deadLetterChange(db, headChange(db, 'alice') as Change, { outcome: 'refused', attempts: 1, failure, now: 5 });
  const removal = recordRemoval(db, { accountId: 'alice', requester: 'agent', requestId: 'r', appendJob: job, now: 6 });
  const removalJob = removal.outcome === 'recorded' ? removal.job : 0;
  endPlacement(db, headChange(db, 'alice') as Placement, { outcome: 'applied', placed: { path: 'INBOX', uidValidity: 7, uid: 2 }, now: 7 });
  t.equal(one<{ state: string }>(db.prepare('SELECT state FROM messages WHERE id = ?'), [local])!.state, 'tombstoned', 'the removed copy is tombstoned');
  t.match(one(db.prepare('SELECT message_id, source_path, source_uid, outcome FROM mutation_audit WHERE mutation = ?'), ['remove-appended']), {
    message_id: local,
    source_path: 'INBOX',
    source_uid: 2,
    outcome: 'applied',
  });
  t.match(readPlacement(db, removalJob), { state: 'completed', outcome: 'applied' });
});

t.test('a copy dead-lettered after its mark keeps the mark for a retry', async (t) => {
  const db = freshStore(t);
  const { inbox } = aliceFolders(db);
  storeBatch(db, {
    accountId: 'alice',
    bindingId: inbox.id,
    uidValidity: 7,
    expectedEpoch: null,
    messages: [fetched(1)],
    advanceTo: { lastUid: 1, highestModseq: 10n },
    now: 1,
  });
  recordChanges(db, {
    accountId: 'alice',
    messageId: idOf(db, inbox.id, 1),
    requester: 'rule',
    requestId: null,
    changes: [{ kind: 'copy', targetPath: 'Archive' }],
    now: 2,
  });
  const change = headChange(db, 'alice') as Change;
  const placement = { targetUidNext: 5, targetUidValidity: 9, size: 10, internalDate: 1, messageId: '<m1@example.org>' };
  recordChangeProgress(db, change.job.id, { placement });
  deadLetterChange(db, change, { outcome: 'failed', attempts: 5, failure, now: 3 });
  t.same(progressOf(db, change.job.id), { placement, outcome: 'failed' });
});
