/**
 * The synchronization status (admin `GET /api/admin/mailbox/synchronization`):
 * read-only, writes nothing. The scheduler passes what only it knows (phase,
 * next due instant, backoff count); the store supplies folder progress and
 * the last runs.
 *
 * Runs that began before `since` (the process start) read as none, as the
 * spec asks after a restart; folder progress persists. The answer holds no
 * subject, address, remote folder path or exception detail: only aliases,
 * numbers, outcome categories and instants. Each mirrored folder's
 * `progress` (folder-progress.ts) is an addition of ours: the spec's table
 * of parts leaves the answer's field names open.
 *
 * Importable by the scheduler and the admin route (`SynchronizationStatus`).
 */
import { z } from 'zod';
import { WorkProgress } from '../../work-progress.ts';
import type { Database } from '../open.ts';
import { many, one } from '../rows.ts';
import { perConnection } from './prepared.ts';
import { mirrorProgress } from './folder-progress.ts';
import { folderOutcomes, runOutcomes } from './runs.ts';
import { underivedInBinding } from './underived.ts';

const Instant = z.iso.datetime();
const Count = z.number().int().nonnegative();

export const phases = ['running', 'waiting-for-slot', 'waiting', 'not-started'] as const;
export type Phase = (typeof phases)[number];

export const FolderLastRun = z.strictObject({
  outcome: z.enum(['ok', ...folderOutcomes]),
  endedAt: Instant,
  storedEmailCount: Count,
  oversizedEmailCount: Count,
  unreadableEmailCount: Count,
  hasMoreEmails: z.boolean(),
});

export const FolderStatus = z.strictObject({
  alias: z.string(),
  mirrored: z.boolean(),
  uidValidity: Count.nullable(),
  lastSeenUid: Count.nullable(),
  progressAdvancedAt: Instant.nullable(),
  lastRun: FolderLastRun.nullable(),
  /** Mirrored emails the derivation writer has not parsed and indexed yet (agents see them as `notYetIndexed`). */
  notYetIndexedEmailCount: Count,
  /**
   * How far the mirror of a mirrored folder has come (null for one no longer
   * mirrored): emails stored of the count the server last reported, the
   * pace they were stored at lately, and an estimate of the time left.
   */
  progress: WorkProgress.nullable(),
});

export const AccountStatus = z.strictObject({
  account: z.string(),
  phase: z.enum(phases),
  nextRunDueAt: Instant.nullable(),
  consecutiveFailureCount: Count,
  lastRun: z.strictObject({ outcome: z.enum(runOutcomes), endedAt: Instant, foldersFailed: Count }).nullable(),
  folders: z.array(FolderStatus),
});

export const SynchronizationStatus = z.strictObject({
  synchronizationEnabled: z.boolean(),
  accounts: z.array(AccountStatus),
});
export type SynchronizationStatus = z.infer<typeof SynchronizationStatus>;

export type StatusInput = {
  enabled: boolean;
  /** Process start, epoch ms. */
  since: number;
  /** Now, epoch ms (the pace of each folder's mirror is measured up to it). */
  now: number;
  accounts: ReadonlyArray<{ id: string; phase: Phase; nextRunDueAt: number | null; consecutiveFailureCount: number }>;
};

type FolderRow = {
  id: number;
  alias: string;
  mirrored: number;
  uidvalidity: number | null;
  highest_uid: number | null;
  advanced_at: number | null;
};
type FolderRunRow = { outcome: string; ended_at: number; stored_count: number; oversized_count: number; unreadable_count: number; has_more: number };
type RunRow = { outcome: string; ended_at: number; folders_failed: number };

const statements = perConnection((db: Database) => ({
  folders: db.prepare(
    `SELECT b.id, b.alias, b.mirrored, c.uidvalidity, c.highest_uid, c.advanced_at
     FROM folder_bindings b LEFT JOIN checkpoints c ON c.binding_id = b.id
     WHERE b.account_id = ? AND b.retired_at IS NULL ORDER BY b.alias`,
  ),
  folderRun: db.prepare(
    `SELECT f.outcome, f.ended_at, f.stored_count, f.oversized_count, f.unreadable_count, f.has_more
     FROM sync_folder_runs f JOIN sync_runs r ON r.id = f.sync_run_id
     WHERE f.binding_id = ? AND r.started_at >= ? AND f.ended_at IS NOT NULL
     ORDER BY f.sync_run_id DESC LIMIT 1`,
  ),
  run: db.prepare(
    `SELECT outcome, ended_at, folders_failed FROM sync_runs
     WHERE account_id = ? AND started_at >= ? AND ended_at IS NOT NULL ORDER BY id DESC LIMIT 1`,
  ),
}));

const iso = (ms: number): string => new Date(ms).toISOString();

export function synchronizationStatus(db: Database, input: StatusInput): SynchronizationStatus {
  const s = statements(db);
  // One read transaction, so folders and runs agree with each other.
  const read = db.transaction(
    (): SynchronizationStatus => ({
      synchronizationEnabled: input.enabled,
      accounts: input.accounts.map((account) => ({
        account: account.id,
        phase: account.phase,
        nextRunDueAt: account.nextRunDueAt === null ? null : iso(account.nextRunDueAt),
        consecutiveFailureCount: account.consecutiveFailureCount,
        lastRun: lastRun(one<RunRow>(s.run, [account.id, input.since])),
        folders: many<FolderRow>(s.folders, [account.id]).map((folder) => ({
          alias: folder.alias,
          mirrored: folder.mirrored === 1,
          uidValidity: folder.uidvalidity,
          lastSeenUid: folder.highest_uid,
          progressAdvancedAt: folder.advanced_at === null ? null : iso(folder.advanced_at),
          lastRun: folderLastRun(one<FolderRunRow>(s.folderRun, [folder.id, input.since])),
          notYetIndexedEmailCount: underivedInBinding(db, account.id, folder.id),
          progress: folder.mirrored === 1 ? mirrorProgress(db, folder.id, input.now) : null,
        })),
      })),
    }),
  );
  return read.deferred();
}

// Outcomes are an open vocabulary (a later build may add one): a value this
// build does not know reads as no last run rather than a shape the route refuses.
function lastRun(row: RunRow | undefined): SynchronizationStatus['accounts'][number]['lastRun'] {
  if (row === undefined || !isOneOf(runOutcomes, row.outcome)) return null;
  return { outcome: row.outcome, endedAt: iso(row.ended_at), foldersFailed: row.folders_failed };
}

function folderLastRun(row: FolderRunRow | undefined): z.infer<typeof FolderLastRun> | null {
  if (row === undefined) return null;
  const outcome = row.outcome;
  if (outcome !== 'ok' && !isOneOf(folderOutcomes, outcome)) return null;
  return {
    outcome,
    endedAt: iso(row.ended_at),
    storedEmailCount: row.stored_count,
    oversizedEmailCount: row.oversized_count,
    unreadableEmailCount: row.unreadable_count,
    hasMoreEmails: row.has_more === 1,
  };
}

function isOneOf<T extends string>(values: readonly T[], value: string): value is T {
  return (values as readonly string[]).includes(value);
}
