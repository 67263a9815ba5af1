import t from 'tap';
import { beginRun, closeInterruptedRuns, endRun, recordFolderRun, runsKept } from '../../../../runtime/store/mailbox/runs.ts';
import { many } from '../../../../runtime/store/rows.ts';
import { aliceFolders, count, freshStore } from './helpers.ts';

const ok = { startedAt: 11, endedAt: 12, outcome: 'ok' as const, stored: 3, oversized: 1, unreadable: 0, hasMore: true };

t.test('a run and its folders are recorded and closed', async (t) => {
  const db = freshStore(t);
  const { inbox, archive } = aliceFolders(db);
  const id = beginRun(db, 'alice', 10);
  recordFolderRun(db, id, inbox.id, ok);
  recordFolderRun(db, id, inbox.id, { ...ok, endedAt: 14, stored: 2, hasMore: false });
  recordFolderRun(db, id, archive.id, { ...ok, outcome: 'no-such-folder', stored: 0, oversized: 0, hasMore: false });
  endRun(db, id, { endedAt: 15, outcome: 'partial', foldersFailed: 1, consecutiveFailures: 0, nextDueAt: 60_015 });
  t.same(many(db.prepare('SELECT account_id, started_at, ended_at, outcome, folders_failed, consecutive_failures, next_due_at FROM sync_runs')), [
    { account_id: 'alice', started_at: 10, ended_at: 15, outcome: 'partial', folders_failed: 1, consecutive_failures: 0, next_due_at: 60_015 },
  ]);
  t.same(
    many(db.prepare('SELECT binding_id, outcome, stored_count, oversized_count, has_more, ended_at FROM sync_folder_runs ORDER BY binding_id')),
    [
      { binding_id: inbox.id, outcome: 'ok', stored_count: 5, oversized_count: 2, has_more: 0, ended_at: 14 },
      { binding_id: archive.id, outcome: 'no-such-folder', stored_count: 0, oversized_count: 0, has_more: 0, ended_at: 12 },
    ],
    'a folder visited twice adds its counts and keeps the latest outcome',
  );
});

t.test('a run a crash left open is closed as interrupted at the next start; endRun then changes nothing', async (t) => {
  const db = freshStore(t);
  const open = beginRun(db, 'alice', 10);
  const bobs = beginRun(db, 'bob', 10);
  t.equal(closeInterruptedRuns(db, 'alice', 20), 1);
  t.equal(closeInterruptedRuns(db, 'alice', 21), 0);
  endRun(db, open, { endedAt: 30, outcome: 'ok', foldersFailed: 0, consecutiveFailures: 0, nextDueAt: null });
  t.same(many(db.prepare('SELECT id, ended_at, outcome FROM sync_runs ORDER BY id')), [
    { id: open, ended_at: 20, outcome: 'interrupted' },
    { id: bobs, ended_at: null, outcome: null },
  ]);
});

t.test(`each account keeps its latest ${runsKept} runs`, async (t) => {
  const db = freshStore(t);
  const { inbox } = aliceFolders(db);
  const bobs = beginRun(db, 'bob', 1);
  const ids: number[] = [];
  for (let i = 0; i < runsKept + 5; i += 1) {
    const id = beginRun(db, 'alice', 100 + i);
    recordFolderRun(db, id, inbox.id, ok);
    endRun(db, id, { endedAt: 100 + i, outcome: 'ok', foldersFailed: 0, consecutiveFailures: 0, nextDueAt: null });
    ids.push(id);
  }
  t.same(
    many<{ id: number }>(db.prepare("SELECT id FROM sync_runs WHERE account_id = 'alice' ORDER BY id")).map((r) => r.id),
    ids.slice(5),
  );
  t.equal(count(db, 'sync_folder_runs'), runsKept, 'folder runs of pruned runs went with them');
  t.equal(count(db, 'sync_runs', 'id = ?', [bobs]), 1, 'other accounts untouched');
});
