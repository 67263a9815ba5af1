/**
 * The answering audit's store (runtime/store/answering/audit.ts) and its
 * page on the query pool (actors/mail-query/answering-audit.ts), on a real
 * migrated file database with real stored mail:
 * - a record holds its run and reads in position order; a read of a
 *   message that no longer exists is skipped; a record refused by the
 *   schema keeps nothing of its call;
 * - the page: newest first by ended then id, one account at a time, reads
 *   in position order; rows naming an unknown ending or degradation are
 *   omitted, counted and still advance the window;
 * - erasing a folder with the real erasure pass removes its messages'
 *   reads and keeps the runs;
 * - prune removes at most its limit of runs ended before the instant,
 *   oldest first, with their reads.
 */
import t from 'tap';
import { answeringAuditPage } from '../../../../actors/mail-query/answering-audit.ts';
import type { AnsweringAuditRequest } from '../../../../actors/mail-query/protocol/answering-audit.ts';
import { encodeStoredEmailId } from '../../../../actors/mail-query/protocol/stored-email-id.ts';
import type { AnsweringRunRecord } from '../../../../actors/answering/protocol.ts';
import { pruneAnsweringRuns, recordAnsweringRuns } from '../../../../runtime/store/answering/audit.ts';
import { syncBindings } from '../../../../runtime/store/mailbox/bindings.ts';
import { erasePass } from '../../../../runtime/store/mailbox/maintenance.ts';
import { storeBatch } from '../../../../runtime/store/mailbox/store-batch.ts';
import type { Database } from '../../../../runtime/store/open.ts';
import { run } from '../../../../runtime/store/rows.ts';
import { count, fetched, freshStore, idOf } from '../mailbox/helpers.ts';

const BASE = Date.parse('2026-11-20T00:00:00.000Z');

type Mail = { db: Database; alice: { inbox: number[]; old: number[] }; bob: number[] };

/** alice: inbox (uids 1-3) and old (1-2); bob: inbox (1-2). */
function mail(t: Parameters<typeof freshStore>[0]): Mail {
  const db = freshStore(t);
  const store = (account: string, bindingId: number, uids: number[]): number[] => {
    const result = storeBatch(db, {
      accountId: account,
      bindingId,
      uidValidity: 7,
      expectedEpoch: null,
      messages: uids.map((uid) => fetched(uid, { subject: `${account} letter ${uid}` })),
      advanceTo: { lastUid: Math.max(...uids), highestModseq: 9n },
      now: 2,
    });
    if (!result.ok) throw new Error('setup refused');
    return uids.map((uid) => idOf(db, bindingId, uid));
  };
  const [aliceInbox, aliceOld] = syncBindings(
    db,
    'alice',
    [
      { alias: 'inbox', path: 'INBOX' },
      { alias: 'old', path: 'Old' },
    ],
    1,
  ).sort((a, b) => (a.alias === 'inbox' ? -1 : b.alias === 'inbox' ? 1 : 0));
  const [bobInbox] = syncBindings(db, 'bob', [{ alias: 'inbox', path: 'INBOX' }], 1);
  return {
    db,
    alice: { inbox: store('alice', aliceInbox!.id, [1, 2, 3]), old: store('alice', aliceOld!.id, [1, 2]) },
    bob: store('bob', bobInbox!.id, [1, 2]),
  };
}

function record(over: Partial<AnsweringRunRecord> & Pick<AnsweringRunRecord, 'runId' | 'accountId' | 'endedAt'>): AnsweringRunRecord {
  return {
    endpointAlias: 'local-chat',
    instructionVersion: 'ask-mail/1',
    beganAt: over.endedAt - 1_500,
    ending: 'answered',
    degradation: [],
    reads: [],
    ...over,
  };
}

const page = (db: Database, account: string, more: Partial<AnsweringAuditRequest> = {}) =>
  answeringAuditPage(db, { type: 'mail-query.answering-audit', account, pageSize: 50, ...more });

t.test('runs are recorded with their reads and paged newest first, one account at a time', async (t) => {
  const { db, alice, bob } = mail(t);
  recordAnsweringRuns(db, [
    record({
      runId: 'run-a',
      accountId: 'alice',
      endedAt: BASE + 60_000,
      degradation: ['lexical-only', 'citations-cut'],
      // Reached out of order in the list, with a message that was erased meanwhile (id 999999).
      reads: [
        { position: 2, messageId: alice.old[0]!, cited: false },
        { position: 0, messageId: alice.inbox[1]!, cited: true },
        { position: 1, messageId: 999_999, cited: true },
        { position: 3, messageId: alice.inbox[0]!, cited: true },
      ],
    }),
    record({ runId: 'run-a', accountId: 'bob', endedAt: BASE + 60_000, reads: [{ position: 0, messageId: bob[0]!, cited: true }] }),
    record({ runId: 'run-b', accountId: 'alice', endedAt: BASE + 120_000, ending: 'deadline-passed' }),
    record({ runId: 'run-c', accountId: 'alice', endedAt: BASE + 60_000, ending: 'provider-refused-credential' }),
  ]);
  t.equal(count(db, 'answering_reads'), 4, 'the read of the missing message was skipped, nothing else');

  const alices = page(db, 'alice');
  t.same(
    alices.entries.map((e) => e.runId),
    ['run-b', 'run-c', 'run-a'],
    'newest first; a tie on the instant goes to the later row',
  );
  t.same(alices.omittedCount, 0);
  t.equal(alices.next, null);
  t.same(alices.entries[2], {
    runId: 'run-a',
    accountId: 'alice',
    endpointAlias: 'local-chat',
    instructionVersion: 'ask-mail/1',
    beganAt: new Date(BASE + 58_500).toISOString(),
    endedAt: new Date(BASE + 60_000).toISOString(),
    ending: 'answered',
    degradation: ['lexical-only', 'citations-cut'],
    reads: [
      { position: 0, storedEmailId: encodeStoredEmailId(alice.inbox[1]!), cited: true },
      { position: 2, storedEmailId: encodeStoredEmailId(alice.old[0]!), cited: false },
      { position: 3, storedEmailId: encodeStoredEmailId(alice.inbox[0]!), cited: true },
    ],
  });
  t.same(
    page(db, 'bob').entries.map((e) => [e.runId, e.reads.length]),
    [['run-a', 1]],
    "bob's entry of the shared run, with bob's reads only",
  );

  // The same run and account again, beside a new one: the schema refuses, and nothing of the call is kept.
  t.throws(() =>
    recordAnsweringRuns(db, [
      record({ runId: 'run-d', accountId: 'alice', endedAt: BASE + 180_000, reads: [{ position: 0, messageId: alice.inbox[2]!, cited: true }] }),
      record({ runId: 'run-a', accountId: 'bob', endedAt: BASE + 180_000 }),
    ]),
  );
  t.equal(count(db, 'answering_runs'), 4, 'no run of the refused call');
  t.equal(count(db, 'answering_reads'), 4, 'no read of the refused call');
});

t.test('rows naming what this build does not declare are omitted, counted, and still advance the window', async (t) => {
  const { db } = mail(t);
  recordAnsweringRuns(
    db,
    [1, 2, 3, 4, 5, 6].map((i) =>
      record({
        runId: `run-${i}`,
        accountId: 'alice',
        endedAt: BASE + i * 1_000,
        // Written by a later build: an ending (4) and a degradation (2) this one does not declare.
        ending: (i === 4 ? 'future-ending' : 'answered') as AnsweringRunRecord['ending'],
        degradation: (i === 2 ? ['retrieval-cut', 'future-degradation'] : ['answer-cut']) as AnsweringRunRecord['degradation'],
      }),
    ),
  );
  const first = page(db, 'alice', { pageSize: 3 });
  t.same(
    first.entries.map((e) => e.runId),
    ['run-6', 'run-5'],
    'run-4 omitted from the first window',
  );
  t.equal(first.omittedCount, 1);
  t.ok(first.next);
  const second = page(db, 'alice', { pageSize: 3, after: first.next! });
  t.same(
    second.entries.map((e) => e.runId),
    ['run-3', 'run-1'],
  );
  t.equal(second.omittedCount, 1, 'run-2 omitted');
  t.equal(second.next, null, 'nothing follows');
  t.same(
    page(db, 'alice', { endedFrom: BASE + 3_000, endedBefore: BASE + 6_000 }).entries.map((e) => e.runId),
    ['run-5', 'run-3'],
    'from inclusive, before exclusive',
  );
});

t.test("erasing a folder removes its messages' reads and keeps the runs", async (t) => {
  const { db, alice } = mail(t);
  recordAnsweringRuns(db, [
    record({
      runId: 'run-a',
      accountId: 'alice',
      endedAt: BASE,
      reads: [
        { position: 0, messageId: alice.old[0]!, cited: true },
        { position: 1, messageId: alice.inbox[0]!, cited: true },
        { position: 2, messageId: alice.old[1]!, cited: false },
      ],
    }),
    record({ runId: 'run-b', accountId: 'alice', endedAt: BASE + 1, reads: [{ position: 0, messageId: alice.old[1]!, cited: true }] }),
  ]);
  syncBindings(db, 'alice', [{ alias: 'inbox', path: 'INBOX' }], 3); // old is no longer mirrored
  t.same(erasePass(db, 'alice', 'old', 10, 4), { erasedEmailCount: 2, emailsRemain: false, remainingEmailCount: 0 });
  t.same(
    page(db, 'alice').entries.map((e) => [e.runId, e.reads]),
    [
      ['run-b', []],
      ['run-a', [{ position: 1, storedEmailId: encodeStoredEmailId(alice.inbox[0]!), cited: true }]],
    ],
    'both runs stay; only the inbox read is left',
  );
});

t.test('prune removes at most its limit of runs ended before the instant, oldest first, with their reads', async (t) => {
  const { db, alice, bob } = mail(t);
  recordAnsweringRuns(db, [
    ...[1, 2, 3, 4].map((i) =>
      record({ runId: `run-${i}`, accountId: 'alice', endedAt: BASE + i * 1_000, reads: [{ position: 0, messageId: alice.inbox[0]!, cited: true }] }),
    ),
    record({ runId: 'run-1', accountId: 'bob', endedAt: BASE + 1_000, reads: [{ position: 0, messageId: bob[0]!, cited: true }] }),
  ]);
  t.throws(() => pruneAnsweringRuns(db, BASE + 10_000, 0), /limit/);
  t.equal(pruneAnsweringRuns(db, BASE + 3_000, 2), 2, "the limit: alice's and bob's run-1 (ended first)");
  t.same(
    page(db, 'alice').entries.map((e) => e.runId),
    ['run-4', 'run-3', 'run-2'],
  );
  t.same(page(db, 'bob').entries, []);
  t.equal(pruneAnsweringRuns(db, BASE + 3_000, 10), 1, 'run-2; run-3 ended at the instant and stays');
  t.equal(pruneAnsweringRuns(db, BASE + 3_000, 10), 0, 'nothing left before it');
  t.equal(count(db, 'answering_reads'), 2, 'the pruned runs took their reads');
  // A row written by hand shows the reads go with the explicit delete even without the cascade.
  run(db.prepare('PRAGMA foreign_keys = OFF'));
  t.equal(pruneAnsweringRuns(db, BASE + 10_000, 10), 2);
  t.equal(count(db, 'answering_reads'), 0, 'reads deleted with their runs, cascade or not');
});
