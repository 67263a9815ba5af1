/**
 * Synchronization run records: one `sync_runs` row per run of an account and
 * one `sync_folder_runs` row per folder it visited. Sole writer: the
 * account's sync actor. What the synchronization status reports as "last
 * run"; no detail of a failure beyond its outcome category is kept (the
 * cause is in the server log).
 *
 * Importable by the sync actor; `status.ts` reads the tables.
 */
import type { Database } from '../open.ts';
import { run } from '../rows.ts';
import { perConnection } from './prepared.ts';

export const folderOutcomes = ['no-such-folder', 'ambiguous-folder', 'server-unresponsive', 'concurrency-conflict', 'unexpected', 'interrupted'] as const;
export type FolderOutcome = (typeof folderOutcomes)[number];
export const runOutcomes = ['ok', 'failed', 'partial', 'interrupted'] as const;
export type RunOutcome = (typeof runOutcomes)[number];

export type FolderRunRecord = {
  startedAt: number;
  endedAt: number;
  outcome: FolderOutcome | 'ok';
  stored: number;
  oversized: number;
  unreadable: number;
  hasMore: boolean;
};

export type RunEnd = { endedAt: number; outcome: RunOutcome; foldersFailed: number; consecutiveFailures: number; nextDueAt: number | null };

/** Runs kept per account; older ones are pruned when a run begins. */
export const runsKept = 20;

const statements = perConnection((db: Database) => ({
  begin: db.prepare('INSERT INTO sync_runs (account_id, started_at) VALUES (?, ?)'),
  // Children first, explicitly: a libSQL server may not enforce the cascade.
  pruneFolders: db.prepare(
    'DELETE FROM sync_folder_runs WHERE sync_run_id IN (SELECT id FROM sync_runs WHERE account_id = ? ORDER BY id DESC LIMIT -1 OFFSET ?)',
  ),
  pruneRuns: db.prepare('DELETE FROM sync_runs WHERE id IN (SELECT id FROM sync_runs WHERE account_id = ? ORDER BY id DESC LIMIT -1 OFFSET ?)'),
  folder: db.prepare(
    `INSERT INTO sync_folder_runs (sync_run_id, binding_id, started_at, ended_at, outcome, stored_count, oversized_count, unreadable_count, has_more)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (sync_run_id, binding_id) DO UPDATE SET ended_at = excluded.ended_at, outcome = excluded.outcome,
       stored_count = stored_count + excluded.stored_count, oversized_count = oversized_count + excluded.oversized_count,
       unreadable_count = unreadable_count + excluded.unreadable_count, has_more = excluded.has_more`,
  ),
  end: db.prepare(
    'UPDATE sync_runs SET ended_at = ?, outcome = ?, folders_failed = ?, consecutive_failures = ?, next_due_at = ? WHERE id = ? AND ended_at IS NULL',
  ),
  closeFolders: db.prepare(
    "UPDATE sync_folder_runs SET ended_at = ?, outcome = 'interrupted' WHERE ended_at IS NULL AND sync_run_id IN (SELECT id FROM sync_runs WHERE account_id = ? AND ended_at IS NULL)",
  ),
  closeRuns: db.prepare("UPDATE sync_runs SET ended_at = ?, outcome = 'interrupted' WHERE account_id = ? AND ended_at IS NULL"),
}));

/** Opens a run record; prunes the account's runs to the latest `runsKept`, this one included. */
export function beginRun(db: Database, accountId: string, now: number): number {
  const s = statements(db);
  const apply = db.transaction((): number => {
    const id = Number(run(s.begin, [accountId, now]).lastInsertRowid);
    run(s.pruneFolders, [accountId, runsKept]);
    run(s.pruneRuns, [accountId, runsKept]);
    return id;
  });
  return apply.immediate();
}

/**
 * Records how a folder's part of the run ended. Recording the same folder
 * twice in one run (a second pass over it) adds the counts and keeps the
 * latest outcome.
 */
export function recordFolderRun(db: Database, runId: number, bindingId: number, r: FolderRunRecord): void {
  run(statements(db).folder, [runId, bindingId, r.startedAt, r.endedAt, r.outcome, r.stored, r.oversized, r.unreadable, r.hasMore ? 1 : 0]);
}

/** Closes the run; a run already closed (by `closeInterruptedRuns`) stays as it was. */
export function endRun(db: Database, runId: number, r: RunEnd): void {
  run(statements(db).end, [r.endedAt, r.outcome, r.foldersFailed, r.consecutiveFailures, r.nextDueAt, runId]);
}

/** At actor start: runs a crash left open are closed as interrupted. Returns how many. */
export function closeInterruptedRuns(db: Database, accountId: string, now: number): number {
  const s = statements(db);
  const apply = db.transaction((): number => {
    run(s.closeFolders, [now, accountId]);
    return run(s.closeRuns, [now, accountId]).changes;
  });
  return apply.immediate();
}
