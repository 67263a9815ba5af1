/** The change journal's store: recording in one transaction, request identifiers, the overlay of requested flags, and how a change ends locally. */
import t, { type Test } from 'tap';
import {
  type Change,
  changeById,
  deadLetterChange,
  endChange,
  endChanges,
  headChange as journalHead,
  recordChanges,
  recordChangesMany,
  views,
} from '../../../../runtime/store/mailbox/changes.ts';
import { applyFlagChanges } from '../../../../runtime/store/mailbox/server-changes.ts';
import { storeBatch } from '../../../../runtime/store/mailbox/store-batch.ts';
import type { Database } from '../../../../runtime/store/open.ts';
import { many, one } from '../../../../runtime/store/rows.ts';
import { aliceFolders, count, fetched, freshStore, idOf } from './helpers.ts';

function mirrored(t: Test): { db: Database; inbox: number; archive: number; first: number; second: number } {
  const db = freshStore(t);
  const { inbox, archive } = aliceFolders(db);
  const stored = storeBatch(db, {
    accountId: 'alice',
    bindingId: inbox.id,
    uidValidity: 7,
    expectedEpoch: null,
    messages: [fetched(1), fetched(2)],
    advanceTo: { lastUid: 2, highestModseq: 10n },
    now: 1,
  });
  t.ok(stored.ok);
  return { db, inbox: inbox.id, archive: archive.id, first: idOf(db, inbox.id, 1), second: idOf(db, inbox.id, 2) };
}

/** The head of the journal: this file records message changes only. */
const headChange = (db: Database, account: string): Change | null => journalHead(db, account) as Change | null;

const row = (db: Database, id: number) =>
  one<{ flags: string; keywords: string; requested_flags: string | null; requested_keywords: string | null; state: string; binding_id: number; uid: number }>(
    db.prepare('SELECT flags, keywords, requested_flags, requested_keywords, state, binding_id, uid FROM messages WHERE id = ?'),
    [id],
  )!;

t.test('recording lays the requested state over the server one; ending takes the server answer', async (t) => {
  const { db, first } = mirrored(t);
  const recorded = recordChanges(db, {
    accountId: 'alice',
    messageId: first,
    requester: 'agent',
    requestId: 'r1',
    changes: [
      { kind: 'set-seen', value: false },
      { kind: 'add-keywords', keywords: ['work'] },
    ],
    now: 5,
  });
  t.equal(recorded.outcome, 'recorded');
  const changes = recorded.outcome === 'recorded' ? recorded.changes : [];
  t.same(
    changes.map((c) => [c.change, c.state]),
    [
      ['set-seen', 'pending'],
      ['add-keywords', 'pending'],
    ],
  );
  t.same(
    row(db, first),
    { ...row(db, first), flags: '["\\\\Seen"]', requested_flags: '[]', requested_keywords: '["work"]' },
    'the server flags kept, the requested laid over',
  );

  // The same request again: the same records. Another change under it: refused, nothing recorded.
  const again = recordChanges(db, {
    accountId: 'alice',
    messageId: first,
    requester: 'agent',
    requestId: 'r1',
    changes: [
      { kind: 'set-seen', value: false },
      { kind: 'add-keywords', keywords: ['work'] },
    ],
    now: 6,
  });
  t.same(
    again.outcome === 'recorded' ? again.changes.map((c) => c.changeId) : null,
    changes.map((c) => c.changeId),
  );
  t.same(
    recordChanges(db, { accountId: 'alice', messageId: first, requester: 'agent', requestId: 'r1', changes: [{ kind: 'set-seen', value: true }], now: 7 }),
    { outcome: 'request-conflict' },
  );
  t.same(
    recordChanges(db, {
      accountId: 'bob',
      messageId: first,
      requester: 'agent',
      requestId: 'r1',
      changes: [
        { kind: 'set-seen', value: false },
        { kind: 'add-keywords', keywords: ['work'] },
      ],
      now: 7,
    }),
    { outcome: 'request-conflict' },
    'the same identifier for another account',
  );
  t.equal(
    recordChanges(db, {
      accountId: 'alice',
      messageId: first,
      requester: 'other-agent',
      requestId: 'r1',
      changes: [{ kind: 'set-flagged', value: true }],
      now: 8,
    }).outcome,
    'recorded',
    'identifiers are per requester',
  );
  t.same(
    recordChanges(db, { accountId: 'bob', messageId: first, requester: 'agent', requestId: null, changes: [{ kind: 'delete' }], now: 8 }),
    { outcome: 'not-found' },
    'another account’s email',
  );
  t.equal(count(db, 'jobs', "type = 'mailbox-change'"), 3, 'nothing recorded by the refusals');

  // The head is the oldest; ending it writes the server's state and lays what is still outstanding.
  const head = headChange(db, 'alice')!;
  t.equal(head.payload.effect.kind, 'set-seen');
  endChange(db, head, { outcome: 'applied', server: { flags: [], keywords: [], modseq: '12' }, now: 9 });
  const after = row(db, first);
  t.equal(after.flags, '[]', 'the server answer is the truth');
  t.equal(after.requested_keywords, '["work"]', 'the outstanding keyword change is still laid over');
  t.equal(after.requested_flags, '["\\\\Flagged"]', 'and the other requester’s flag');
  t.same(
    views(db, [head.job.id]).map((v) => [v.state, v.outcome]),
    [['completed', 'applied']],
  );

  // A change that will not apply lifts its part of the overlay.
  for (let next = headChange(db, 'alice'); next !== null; next = headChange(db, 'alice')) {
    deadLetterChange(db, next, {
      outcome: 'refused',
      attempts: 1,
      failure: { classification: 'server-refused', code: 'E_CHANGE_REFUSED', reason: 'x' },
      now: 10,
    });
  }
  t.same([row(db, first).requested_flags, row(db, first).requested_keywords], [null, null], 'nothing outstanding: no overlay');
  t.equal(count(db, 'mutation_audit'), 3, 'one audit entry per ended change');
  t.equal(changeById(db, head.job.id)?.job.state, 'done');
});

t.test('relocate follows the message into a mirrored folder under its new UID; copy stores a second row with the content', async (t) => {
  const { db, inbox, archive, first, second } = mirrored(t);
  recordChanges(db, {
    accountId: 'alice',
    messageId: first,
    requester: 'rule',
    requestId: null,
    changes: [{ kind: 'relocate', targetPath: 'Archive' }],
    now: 5,
  });
  endChange(db, headChange(db, 'alice')!, { outcome: 'applied', target: { path: 'Archive', uidValidity: 9, uid: 41 }, now: 6 });
  t.match(row(db, first), { binding_id: archive, uid: 41, state: 'stored' }, 'the local id follows');
  recordChanges(db, { accountId: 'alice', messageId: second, requester: 'rule', requestId: null, changes: [{ kind: 'copy', targetPath: 'Archive' }], now: 7 });
  const { targetMessageId } = endChange(db, headChange(db, 'alice')!, { outcome: 'applied', target: { path: 'Archive', uidValidity: 9, uid: 42 }, now: 8 });
  t.ok(targetMessageId !== null && targetMessageId !== second);
  t.match(row(db, targetMessageId!), { binding_id: archive, uid: 42, state: 'stored' });
  t.equal(count(db, 'message_raw', 'message_id = ?', [targetMessageId!]), 1, 'the raw MIME is copied');
  t.equal(count(db, 'passages', 'message_id = ?', [targetMessageId!]), count(db, 'passages', 'message_id = ?', [second]), 'and the passages');
  t.equal(count(db, 'messages', 'binding_id = ? AND state <> ?', [inbox, 'tombstoned']), 1, 'the original stays');
  recordChanges(db, {
    accountId: 'alice',
    messageId: second,
    requester: 'rule',
    requestId: null,
    changes: [{ kind: 'relocate', targetPath: 'Unmapped' }],
    now: 9,
  });
  endChange(db, headChange(db, 'alice')!, { outcome: 'applied', target: { path: 'Unmapped', uidValidity: 3, uid: 1 }, now: 10 });
  t.equal(row(db, second).state, 'tombstoned', 'moved out of the mirror');
});

t.test('the overlay follows flags a run rewrote; asks of one transaction build on each other; a batch ends each change on its own', async (t) => {
  const { db, inbox, first, second } = mirrored(t);
  recordChanges(db, {
    accountId: 'alice',
    messageId: first,
    requester: 'agent',
    requestId: null,
    changes: [{ kind: 'add-keywords', keywords: ['a'] }],
    now: 5,
  });
  // Another client flags the message; the run writes the server's flags and leaves the overlay as it was laid.
  applyFlagChanges(db, inbox, 7, [{ uid: 1, flags: ['\\Seen', '\\Flagged'], keywords: [], modseq: 20n }], 20n, 6);
  const ask = (messageId: number, rule: string, change: Parameters<typeof recordChanges>[1]['changes'][number]) => ({
    accountId: 'alice',
    messageId,
    requester: `rule:${rule}`,
    requestId: `rule:${rule}:${messageId}`,
    changes: [change],
    now: 7,
  });
  const results = recordChangesMany(db, [
    ask(first, 'R1', { kind: 'set-seen', value: false }),
    ask(first, 'R2', { kind: 'add-keywords', keywords: ['b'] }),
    ask(second, 'R1', { kind: 'set-flagged', value: true }),
  ]);
  t.same(
    results.map((r) => r.outcome),
    ['recorded', 'recorded', 'recorded'],
  );
  t.same(
    [row(db, first).requested_flags, row(db, first).requested_keywords],
    ['["\\\\Flagged"]', '["a","b"]'],
    'laid over the flags the run wrote, with every outstanding change in order',
  );
  t.same([row(db, second).requested_flags, row(db, second).requested_keywords], ['["\\\\Flagged","\\\\Seen"]', '[]']);

  // The first change of each message ends in one batch; the first message's later changes stay laid over the answer.
  const ids = many<{ id: number }>(db.prepare("SELECT id FROM jobs WHERE type = 'mailbox-change' ORDER BY id"), []).map((r) => r.id);
  const [keywordA, , , flagged] = ids.map((id) => changeById(db, id) as Change);
  endChanges(db, [
    { change: keywordA!, end: { outcome: 'applied', server: { flags: ['\\Flagged', '\\Seen'], keywords: ['a'], modseq: '21' }, now: 9 } },
    { change: flagged!, end: { outcome: 'applied', server: { flags: ['\\Flagged', '\\Seen'], keywords: [], modseq: '22' }, now: 9 } },
  ]);
  t.same(
    [row(db, first).keywords, row(db, first).requested_flags, row(db, first).requested_keywords],
    ['["a"]', '["\\\\Flagged"]', '["a","b"]'],
    'the server answer written, what is outstanding laid over it',
  );
  t.same([row(db, second).flags, row(db, second).requested_flags, row(db, second).requested_keywords], ['["\\\\Flagged","\\\\Seen"]', null, null]);
  t.same(
    views(db, [keywordA!.job.id, ids[1]!, flagged!.job.id]).map((v) => [v.state, v.outcome]),
    [
      ['completed', 'applied'],
      ['pending', null],
      ['completed', 'applied'],
    ],
  );
  t.same(
    many(db.prepare('SELECT mutation, message_id, requester, requested_at, ended_at, outcome, detail FROM mutation_audit ORDER BY id'), []),
    [
      { mutation: 'add-keywords', message_id: first, requester: 'agent', requested_at: 5, ended_at: 9, outcome: 'applied', detail: '{"keywords":["a"]}' },
      { mutation: 'set-flagged', message_id: second, requester: 'rule:R1', requested_at: 7, ended_at: 9, outcome: 'applied', detail: '{"value":true}' },
    ],
    'one audit entry per change, with its requester, in order',
  );
});
