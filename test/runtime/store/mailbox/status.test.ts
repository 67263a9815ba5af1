import t from 'tap';
import { syncBindings } from '../../../../runtime/store/mailbox/bindings.ts';
import { recordServerCount } from '../../../../runtime/store/mailbox/folder-progress.ts';
import { beginRun, endRun, recordFolderRun } from '../../../../runtime/store/mailbox/runs.ts';
import { SynchronizationStatus, synchronizationStatus } from '../../../../runtime/store/mailbox/status.ts';
import { storeBatch } from '../../../../runtime/store/mailbox/store-batch.ts';
import { run } from '../../../../runtime/store/rows.ts';
import { fetched, freshStore } from './helpers.ts';

const boot = Date.UTC(2025, 0, 1);

function accounts(phase: 'running' | 'waiting' | 'not-started' = 'waiting') {
  return [
    { id: 'alice', phase, nextRunDueAt: boot + 60_000, consecutiveFailureCount: 2 },
    { id: 'bob', phase: 'not-started' as const, nextRunDueAt: null, consecutiveFailureCount: 0 },
  ];
}

t.test('the status has exactly the documented shape, runs since the start, and persisted progress', async (t) => {
  const db = freshStore(t);
  const [archive, inbox] = syncBindings(
    db,
    'alice',
    [
      { alias: 'inbox', path: 'INBOX' },
      { alias: 'archive', path: 'Archive' },
    ],
    boot - 10,
  );
  storeBatch(db, {
    accountId: 'alice',
    bindingId: inbox!.id,
    uidValidity: 7,
    expectedEpoch: null,
    // The second is stored as the sync actor stores it, before the derivation writer parses it.
    messages: [fetched(1), { ...fetched(2), parsed: null }],
    advanceTo: { lastUid: 41, highestModseq: 5n },
    now: boot - 5,
  });
  const before = beginRun(db, 'alice', boot - 100);
  recordFolderRun(db, before, inbox!.id, { startedAt: boot - 100, endedAt: boot - 90, outcome: 'ok', stored: 1, oversized: 0, unreadable: 0, hasMore: false });
  endRun(db, before, { endedAt: boot - 90, outcome: 'ok', foldersFailed: 0, consecutiveFailures: 0, nextDueAt: boot });

  const afterRestart = synchronizationStatus(db, { enabled: true, since: boot, now: boot + 5_000, accounts: accounts('not-started') });
  SynchronizationStatus.parse(afterRestart);
  t.match(
    afterRestart.accounts[0],
    {
      phase: 'not-started',
      lastRun: null,
      folders: [
        { alias: 'archive', lastRun: null },
        { alias: 'inbox', lastRun: null, lastSeenUid: 41 },
      ],
    },
    'runs before the start read as none; progress persists',
  );

  const now = beginRun(db, 'alice', boot + 1000);
  recordFolderRun(db, now, inbox!.id, { startedAt: boot + 1000, endedAt: boot + 2000, outcome: 'ok', stored: 3, oversized: 1, unreadable: 2, hasMore: true });
  recordFolderRun(db, now, archive!.id, {
    startedAt: boot + 1000,
    endedAt: boot + 1500,
    outcome: 'server-unresponsive',
    stored: 0,
    oversized: 0,
    unreadable: 0,
    hasMore: false,
  });
  endRun(db, now, { endedAt: boot + 3000, outcome: 'partial', foldersFailed: 1, consecutiveFailures: 2, nextDueAt: boot + 60_000 });
  syncBindings(db, 'alice', [{ alias: 'inbox', path: 'INBOX' }], boot + 4000);

  const status = synchronizationStatus(db, { enabled: true, since: boot, now: boot + 5_000, accounts: accounts() });
  t.same(SynchronizationStatus.parse(status), status, 'zod-valid, nothing stripped');
  t.same(status, {
    synchronizationEnabled: true,
    accounts: [
      {
        account: 'alice',
        phase: 'waiting',
        nextRunDueAt: '2025-01-01T00:01:00.000Z',
        consecutiveFailureCount: 2,
        lastRun: { outcome: 'partial', endedAt: '2025-01-01T00:00:03.000Z', foldersFailed: 1 },
        folders: [
          {
            alias: 'archive',
            mirrored: false,
            uidValidity: null,
            lastSeenUid: null,
            progressAdvancedAt: null,
            lastRun: {
              outcome: 'server-unresponsive',
              endedAt: '2025-01-01T00:00:01.500Z',
              storedEmailCount: 0,
              oversizedEmailCount: 0,
              unreadableEmailCount: 0,
              hasMoreEmails: false,
            },
            notYetIndexedEmailCount: 0,
            progress: null,
          },
          {
            alias: 'inbox',
            mirrored: true,
            uidValidity: 7,
            lastSeenUid: 41,
            progressAdvancedAt: '2024-12-31T23:59:59.995Z',
            lastRun: {
              outcome: 'ok',
              endedAt: '2025-01-01T00:00:02.000Z',
              storedEmailCount: 3,
              oversizedEmailCount: 1,
              unreadableEmailCount: 2,
              hasMoreEmails: true,
            },
            notYetIndexedEmailCount: 1,
            // One batch, long ago, and no SELECT recorded: the stored count, no total, no pace.
            progress: { completedEmailCount: 2, totalEmailCount: null, emailsPerSecond: null, secondsLeft: null },
          },
        ],
      },
      { account: 'bob', phase: 'not-started', nextRunDueAt: null, consecutiveFailureCount: 0, lastRun: null, folders: [] },
    ],
  });
  t.same(synchronizationStatus(db, { enabled: false, since: boot, now: boot + 5_000, accounts: [] }), { synchronizationEnabled: false, accounts: [] });
});

t.test("a first mirror's progress: stored of the server's count, the pace of recent batches, the time left", async (t) => {
  const db = freshStore(t);
  const [inbox] = syncBindings(db, 'alice', [{ alias: 'inbox', path: 'INBOX' }], boot);
  const status = (now: number) =>
    synchronizationStatus(db, { enabled: true, since: boot, now, accounts: accounts('running') }).accounts[0]!.folders[0]!.progress;
  t.same(status(boot + 1), { completedEmailCount: 0, totalEmailCount: null, emailsPerSecond: null, secondsLeft: null }, 'nothing selected yet: no total');
  recordServerCount(db, inbox!.id, 1_000, boot + 500);
  // Five batches of 100, one a second: the first opens the pace, the next four make it (400 in 4 s).
  let epoch: number | null = null;
  for (let batch = 0; batch < 5; batch += 1) {
    const uids = Array.from({ length: 100 }, (_, i) => batch * 100 + i + 1);
    const stored = storeBatch(db, {
      accountId: 'alice',
      bindingId: inbox!.id,
      uidValidity: 7,
      expectedEpoch: epoch,
      messages: uids.map((uid) => ({ ...fetched(uid), parsed: null })),
      advanceTo: { lastUid: uids.at(-1)!, highestModseq: null },
      now: boot + 1_000 * (batch + 1),
    });
    if (!stored.ok) throw new Error('the batch was refused');
    epoch = stored.epoch;
  }
  t.same(status(boot + 5_000), { completedEmailCount: 500, totalEmailCount: 1_000, emailsPerSecond: 100, secondsLeft: 5 });
  t.same(status(boot + 9_000), { completedEmailCount: 500, totalEmailCount: 1_000, emailsPerSecond: 50, secondsLeft: 10 }, 'a pause slows the pace');
  t.same(status(boot + 120_000), { completedEmailCount: 500, totalEmailCount: 1_000, emailsPerSecond: null, secondsLeft: null }, 'nothing lately: no pace');
  recordServerCount(db, inbox!.id, 450, boot + 121_000);
  t.same(status(boot + 121_000)?.secondsLeft, 0, 'more stored than the server counted (expunged since): done, not negative');
  t.same(status(boot + 121_000)?.totalEmailCount, 500);
});

t.test('an outcome this build does not know reads as no last run', async (t) => {
  const db = freshStore(t);
  const [inbox] = syncBindings(db, 'alice', [{ alias: 'inbox', path: 'INBOX' }], boot);
  const id = beginRun(db, 'alice', boot + 1);
  run(db.prepare("INSERT INTO sync_folder_runs (sync_run_id, binding_id, started_at, ended_at, outcome) VALUES (?, ?, ?, ?, 'from-the-future')"), [
    id,
    inbox!.id,
    boot + 1,
    boot + 2,
  ]);
  run(db.prepare("UPDATE sync_runs SET ended_at = ?, outcome = 'from-the-future' WHERE id = ?"), [boot + 2, id]);
  const status = synchronizationStatus(db, { enabled: true, since: boot, now: boot + 5_000, accounts: accounts() });
  SynchronizationStatus.parse(status);
  t.match(status.accounts[0], { lastRun: null, folders: [{ alias: 'inbox', lastRun: null }] });
});

t.test('the status holds no subject, address or remote folder path of a mailbox with real mail', async (t) => {
  const db = freshStore(t);
  const [inbox] = syncBindings(db, 'alice', [{ alias: 'inbox', path: 'Private/Board Meetings' }], boot);
  const letters = [
    { subject: 'Acquisition of Initech', from: 'ceo@corp.example', to: 'board@corp.example' },
    { subject: 'Layoff list draft', from: 'hr@corp.example', to: 'ceo@corp.example' },
  ];
  storeBatch(db, {
    accountId: 'alice',
    bindingId: inbox!.id,
    uidValidity: 7,
    expectedEpoch: null,
    messages: letters.map((letter, i) => fetched(i + 1, letter)),
    advanceTo: { lastUid: 2, highestModseq: null },
    now: boot + 5,
  });
  const id = beginRun(db, 'alice', boot + 1);
  recordFolderRun(db, id, inbox!.id, { startedAt: boot + 1, endedAt: boot + 6, outcome: 'unexpected', stored: 2, oversized: 0, unreadable: 0, hasMore: false });
  endRun(db, id, { endedAt: boot + 7, outcome: 'failed', foldersFailed: 1, consecutiveFailures: 1, nextDueAt: boot + 10 });
  const json = JSON.stringify(synchronizationStatus(db, { enabled: true, since: boot, now: boot + 5_000, accounts: accounts() }));
  for (const secret of ['Initech', 'Layoff', 'corp.example', '@', 'Private', 'Board Meetings', 'INBOX']) {
    t.notOk(json.includes(secret), `no ${secret}`);
  }
  t.ok(json.includes('"alias":"inbox"'), 'the alias is there');
});
