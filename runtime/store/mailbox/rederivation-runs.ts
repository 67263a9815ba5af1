/**
 * Durable state of re-derivation runs, per scope (an account, optionally a
 * folder alias). Sole writer of `rederivation_runs`: the account's sync
 * actor — the admin route asks it to start a run; one job (runtime/store/
 * jobs.ts) carries the run across bounded segments (`rederivation.ts`), and
 * each segment's progress is recorded here.
 *
 * Asking while a run of the scope is outstanding returns that run; two
 * scopes are two runs. A run reaching the end of its scope forgets its
 * position. `requestedAt`/`endedAt` are ISO 8601 instants, as the admin
 * answer carries them.
 *
 * Importable through `maintenance.ts`.
 */
import type { Database } from '../open.ts';
import { many, one, run } from '../rows.ts';
import { perConnection } from './prepared.ts';
import { folderOf } from './scope.ts';

export type RederivationCarriage = 'carried' | 'queue-at-capacity' | 'stopped';

/** The admin answer's `run`. */
export type RederivationRun = {
  account: string;
  folder: string | null;
  requestedAt: string;
  isOutstanding: boolean;
  rederivedEmailCount: number;
  unreadableEmailCount: number;
  missingContentEmailCount: number;
  endedAt: string | null;
};

/** What the sync actor needs besides the answer: the run id (in its job's idempotency key), carriage and position. */
export type RederivationRecord = { runId: number; carriage: RederivationCarriage; lastMessageId: number | null; run: RederivationRun };

export type RederivationAdvance = {
  /** Position after the segment: the highest message id it covered. */
  lastMessageId: number;
  /** The run's totals so far, this segment included (not the segment's own counts). */
  rederived: number;
  unreadable: number;
  missing: number;
  /** The segment reached the end of the scope: the run ends and forgets its position. */
  done: boolean;
  now: number;
};

type Row = {
  id: number;
  account_id: string;
  folder_alias: string | null;
  carriage: string;
  requested_at: number;
  last_message_id: number | null;
  rederived_count: number;
  unreadable_count: number;
  missing_count: number;
  ended_at: number | null;
};

const columns = 'id, account_id, folder_alias, carriage, requested_at, last_message_id, rederived_count, unreadable_count, missing_count, ended_at';

const statements = perConnection((db: Database) => ({
  latest: db.prepare(`SELECT ${columns} FROM rederivation_runs WHERE account_id = ? AND folder_alias IS ? ORDER BY id DESC LIMIT 1`),
  byId: db.prepare(`SELECT ${columns} FROM rederivation_runs WHERE id = ?`),
  insert: db.prepare('INSERT INTO rederivation_runs (account_id, folder_alias, requested_at, last_message_id, updated_at) VALUES (?, ?, ?, 0, ?)'),
  // Totals, not increments, and only a position beyond the recorded one
  // moves the run: a segment recorded twice (a retry) changes nothing.
  advance: db.prepare(
    `UPDATE rederivation_runs SET last_message_id = CASE WHEN ? THEN NULL ELSE ? END,
       rederived_count = ?, unreadable_count = ?, missing_count = ?,
       ended_at = CASE WHEN ? THEN ? ELSE NULL END, updated_at = ?
     WHERE id = ? AND ended_at IS NULL AND (last_message_id < ? OR (? AND last_message_id <= ?))`,
  ),
  carriage: db.prepare('UPDATE rederivation_runs SET carriage = ?, updated_at = ? WHERE id = ?'),
  // Ending forgets the position (the table's CHECK pairs ended_at with last_message_id NULL).
  end: db.prepare("UPDATE rederivation_runs SET carriage = 'stopped', last_message_id = NULL, ended_at = ?, updated_at = ? WHERE id = ? AND ended_at IS NULL"),
}));

/**
 * Starts a run for the scope, or returns the one outstanding (`started:
 * false`). `onStart` runs inside the same transaction with the new run, so
 * the job carrying it is enqueued with it or not at all.
 */
export function requestRederivation(
  db: Database,
  accountId: string,
  alias: string | null,
  now: number,
  onStart?: (record: RederivationRecord) => void,
): { started: boolean } & RederivationRecord {
  const folder = folderOf(alias);
  const s = statements(db);
  const apply = db.transaction(() => {
    const latest = one<Row>(s.latest, [accountId, folder]);
    if (latest !== undefined && latest.ended_at === null) return { started: false, ...toRecord(latest) };
    const id = Number(run(s.insert, [accountId, folder, now, now]).lastInsertRowid);
    const record = toRecord(one<Row>(s.byId, [id])!);
    onStart?.(record);
    return { started: true, ...record };
  });
  return apply.immediate();
}

/** The scope's latest run (outstanding or ended); null for a scope never asked about. */
export function rederivationRun(db: Database, accountId: string, alias: string | null): RederivationRun | null {
  return rederivationRecord(db, accountId, alias)?.run ?? null;
}

export function rederivationRecord(db: Database, accountId: string, alias: string | null): RederivationRecord | null {
  const row = one<Row>(statements(db).latest, [accountId, folderOf(alias)]);
  return row === undefined ? null : toRecord(row);
}

export function rederivationRecordById(db: Database, runId: number): RederivationRecord | null {
  const row = one<Row>(statements(db).byId, [runId]);
  return row === undefined ? null : toRecord(row);
}

/**
 * Records the run's progress after a segment (position and totals); false
 * when that position was already recorded or the run has ended.
 */
export function advanceRederivation(db: Database, runId: number, a: RederivationAdvance): boolean {
  const done = a.done ? 1 : 0;
  const params = [done, a.lastMessageId, a.rederived, a.unreadable, a.missing, done, a.now, a.now, runId, a.lastMessageId, done, a.lastMessageId];
  return run(statements(db).advance, params).changes === 1;
}

/** How the run is carried: by its job, refused by a full queue (never in this build), or stopped (its job dead-lettered or dropped). */
export function setRederivationCarriage(db: Database, runId: number, carriage: RederivationCarriage, now: number): void {
  run(statements(db).carriage, [carriage, now, runId]);
}

/** The run ends where it stood (its job was dropped): a new request of the scope starts a new run. */
export function endRederivation(db: Database, runId: number, now: number): boolean {
  return run(statements(db).end, [now, now, runId]).changes === 1;
}

function toRecord(row: Row): RederivationRecord {
  return {
    runId: row.id,
    carriage: isCarriage(row.carriage) ? row.carriage : 'stopped',
    lastMessageId: row.last_message_id,
    run: {
      account: row.account_id,
      folder: row.folder_alias,
      requestedAt: new Date(row.requested_at).toISOString(),
      isOutstanding: row.ended_at === null,
      rederivedEmailCount: row.rederived_count,
      unreadableEmailCount: row.unreadable_count,
      missingContentEmailCount: row.missing_count,
      endedAt: row.ended_at === null ? null : new Date(row.ended_at).toISOString(),
    },
  };
}

function isCarriage(value: string): value is RederivationCarriage {
  return value === 'carried' || value === 'queue-at-capacity' || value === 'stopped';
}

/** Runs of an account still under way, oldest first: the sync actor carries them on after a restart. */
export function outstandingRederivations(db: Database, accountId: string): RederivationRecord[] {
  return many<Row>(db.prepare('SELECT * FROM rederivation_runs WHERE account_id = ? AND ended_at IS NULL ORDER BY id'), [accountId]).map(toRecord);
}
