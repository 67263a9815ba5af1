/**
 * Durable background work (`jobs`, migration 1). Sole writer of an
 * account's rows: that account's sync actor, which carries both job types
 * this build has: the re-derivation run (actors/imap-sync/
 * rederivation-carriage.ts) and the mailbox change (mailbox/changes.ts,
 * actors/imap-sync/change-journal.ts). Reader: the query pool's
 * dead-letter listing.
 *
 * Lifecycle. `queued` → `running` (an attempt under way) → `done`. A failed
 * attempt goes back to `queued` with `due_at` pushed out by the backoff;
 * after `MAX_JOB_ATTEMPTS` failed attempts in a row the job is `dead` (a
 * dead letter). An attempt that succeeds gives the count back, so a long
 * run dies of one position failing repeatedly, never of failures scattered
 * over hours. Retry: `dead` → `queued`, same row, id and idempotency key,
 * attempts given back. Drop: `dead` → `dropped`, the row kept. One live job
 * (queued, running, dead) per idempotency key.
 *
 * `failure_code` is an internal code (a SQLite result code or one of
 * runtime/errors.ts), `failure_class` a word of `JobFailureClass` and
 * `failure_reason` a constant sentence: never content.
 *
 * Every write is one statement guarded by the state it leaves, so it is
 * atomic alone and composes inside a caller's transaction (libsql does not
 * nest them). Importable by the sync actor and the query pool.
 */
import type { JobType } from './job-vocabulary.ts';
import { perConnection } from './mailbox/prepared.ts';
import type { Database } from './open.ts';
import { many, one, run } from './rows.ts';

// Named in the shape-only vocabulary, so protocols and routes need not load this writer.
export { JOB_ID_PATTERN, JOB_TYPES, type JobType, jobIdOf, jobRowOf } from './job-vocabulary.ts';

export type JobState = 'queued' | 'running' | 'done' | 'dead' | 'dropped';

/** Attempts at one position before the job is dead-lettered. */
export const MAX_JOB_ATTEMPTS = 5;
/** Wait before the first retry; it doubles with each failed attempt after that (1 s, 2 s, 4 s, 8 s). */
export const JOB_RETRY_BASE_MS = 1_000;

/** How long to wait after `failedAttempts` failed attempts before the next one. */
export function jobRetryDelayMs(failedAttempts: number): number {
  return JOB_RETRY_BASE_MS * 2 ** Math.max(0, failedAttempts - 1);
}

export const JOB_FAILURE_CLASSES = [
  'authentication-refused',
  'database-busy',
  'database-failure',
  'parser-unavailable',
  'server-protocol',
  'server-refused',
  'server-unresponsive',
  'tls-refused',
  'unexpected',
] as const;
export type JobFailureClass = (typeof JOB_FAILURE_CLASSES)[number];

/** What ended an attempt: a class, an internal code, a constant sentence. */
export type JobFailure = { classification: JobFailureClass; code: string; reason: string };

export type Job = {
  id: number;
  type: string;
  accountId: string | null;
  idempotencyKey: string;
  payload: unknown;
  /** A type's position where it has no table of its own (a mailbox change's outcome, or what it began); null before any. */
  progress: unknown;
  state: JobState;
  attemptCount: number;
  enqueuedAt: number;
  dueAt: number;
  failureClass: string | null;
  failureCode: string | null;
  failureReason: string | null;
  deadLetteredAt: number | null;
  droppedAt: number | null;
};

type Row = {
  id: number;
  type: string;
  account_id: string | null;
  idempotency_key: string;
  payload: string;
  progress: string | null;
  state: JobState;
  attempt_count: number;
  enqueued_at: number;
  due_at: number;
  failure_class: string | null;
  failure_code: string | null;
  failure_reason: string | null;
  dead_lettered_at: number | null;
  dropped_at: number | null;
};

const columns =
  'id, type, account_id, idempotency_key, payload, progress, state, attempt_count, enqueued_at, due_at, failure_class, failure_code, failure_reason, dead_lettered_at, dropped_at';
const LIVE = "('queued', 'running', 'dead')";

const statements = perConnection((db: Database) => ({
  // The partial unique index (one live job per key) turns a second enqueue into a no-op.
  insert: db.prepare(`INSERT OR IGNORE INTO jobs (type, account_id, idempotency_key, payload, state, enqueued_at, due_at) VALUES (?, ?, ?, ?, 'queued', ?, ?)`),
  byId: db.prepare(`SELECT ${columns} FROM jobs WHERE id = ?`),
  liveByKey: db.prepare(`SELECT ${columns} FROM jobs WHERE idempotency_key = ? AND state IN ${LIVE}`),
  live: db.prepare(`SELECT ${columns} FROM jobs WHERE account_id = ? AND type = ? AND state IN ${LIVE} ORDER BY id`),
  start: db.prepare("UPDATE jobs SET state = 'running', started_at = ? WHERE id = ? AND state IN ('queued', 'running')"),
  fail: db.prepare(
    `UPDATE jobs SET state = 'queued', attempt_count = ?, failure_class = ?, failure_code = ?, failure_reason = ?, due_at = ?
     WHERE id = ? AND state IN ('queued', 'running')`,
  ),
  giveBack: db.prepare("UPDATE jobs SET attempt_count = 0 WHERE id = ? AND state IN ('queued', 'running') AND attempt_count <> 0"),
  dead: db.prepare(
    `UPDATE jobs SET state = 'dead', attempt_count = ?, failure_class = ?, failure_code = ?, failure_reason = ?, dead_lettered_at = ?
     WHERE id = ? AND state IN ('queued', 'running')`,
  ),
  complete: db.prepare("UPDATE jobs SET state = 'done', ended_at = ? WHERE id = ? AND state IN ('queued', 'running')"),
  // The failure of the dead-lettered attempt stays as the last one recorded.
  retry: db.prepare("UPDATE jobs SET state = 'queued', attempt_count = 0, due_at = ?, dead_lettered_at = NULL WHERE id = ? AND state = 'dead'"),
  drop: db.prepare("UPDATE jobs SET state = 'dropped', dropped_at = ?, ended_at = ? WHERE id = ? AND state = 'dead'"),
  // Newest first; `after` is the keyset position (dead_lettered_at, id) of the previous page's last row.
  deadLetters: db.prepare(
    `SELECT ${columns} FROM jobs
     WHERE state = 'dead' AND account_id IN (SELECT value FROM json_each(:accounts)) AND type IN (SELECT value FROM json_each(:types))
       AND (:account IS NULL OR account_id = :account)
       AND (:afterId IS NULL OR dead_lettered_at < :afterAt OR (dead_lettered_at = :afterAt AND id < :afterId))
     ORDER BY dead_lettered_at DESC, id DESC LIMIT :limit`,
  ),
}));

/** `payload`: plain JSON (it is stored as text). */
export type Enqueue = { type: JobType; accountId: string; idempotencyKey: string; payload: object; now: number };

/** The live job under the key, created queued (due now) if there is none. */
export function enqueueJob(db: Database, e: Enqueue): { job: Job; created: boolean } {
  const s = statements(db);
  const created = run(s.insert, [e.type, e.accountId, e.idempotencyKey, JSON.stringify(e.payload), e.now, e.now]).changes === 1;
  return { job: toJob(one<Row>(s.liveByKey, [e.idempotencyKey])!), created };
}

/**
 * A new job under a key no live job holds (a fresh one, such as a random UUID): its id, without
 * reading the row back as `enqueueJob` does. Null when a live job holds the key after all.
 */
export function enqueueNewJob(db: Database, e: Enqueue): number | null {
  const written = run(statements(db).insert, [e.type, e.accountId, e.idempotencyKey, JSON.stringify(e.payload), e.now, e.now]);
  return written.changes === 1 ? Number(written.lastInsertRowid) : null;
}

/** The columns `jobFromRow` reads, for a query of another module that reads whole jobs. */
export const JOB_COLUMNS = columns;

/** A row of `JOB_COLUMNS` as a job (its payload and progress parsed). */
export function jobFromRow(row: Readonly<Record<string, unknown>>): Job {
  return toJob(row as Row);
}

export function jobById(db: Database, id: number): Job | null {
  const row = one<Row>(statements(db).byId, [id]);
  return row === undefined ? null : toJob(row);
}

export function liveJobByKey(db: Database, idempotencyKey: string): Job | null {
  const row = one<Row>(statements(db).liveByKey, [idempotencyKey]);
  return row === undefined ? null : toJob(row);
}

/** An account's queued, running and dead jobs of one type, oldest first. */
export function liveJobs(db: Database, accountId: string, type: JobType): Job[] {
  return many<Row>(statements(db).live, [accountId, type]).map(toJob);
}

/** An attempt begins (queued → running; a job found running after a restart stays so). */
export function startJob(db: Database, id: number, now: number): boolean {
  return run(statements(db).start, [now, id]).changes === 1;
}

/** A failed attempt short of the last: back to queued, due after the backoff. */
export function recordAttemptFailure(db: Database, id: number, f: { attempts: number; failure: JobFailure; dueAt: number }): boolean {
  return run(statements(db).fail, [f.attempts, f.failure.classification, f.failure.code, f.failure.reason, f.dueAt, id]).changes === 1;
}

/** An attempt succeeded after failures: the count is given back. */
export function giveAttemptsBack(db: Database, id: number): boolean {
  return run(statements(db).giveBack, [id]).changes === 1;
}

/** The last attempt failed: the job becomes a dead letter. */
export function deadLetterJob(db: Database, id: number, f: { attempts: number; failure: JobFailure; now: number }): boolean {
  return run(statements(db).dead, [f.attempts, f.failure.classification, f.failure.code, f.failure.reason, f.now, id]).changes === 1;
}

export function completeJob(db: Database, id: number, now: number): boolean {
  return run(statements(db).complete, [now, id]).changes === 1;
}

/** dead → queued, due now, attempts given back; false when the job is not dead. */
export function retryJob(db: Database, id: number, now: number): boolean {
  return run(statements(db).retry, [now, id]).changes === 1;
}

/** dead → dropped, the record kept; false when the job is not dead. */
export function dropJob(db: Database, id: number, now: number): boolean {
  return run(statements(db).drop, [now, now, id]).changes === 1;
}

export type DeadLetterQuery = {
  /** Accounts whose jobs may be shown: the configured ones. */
  accounts: readonly string[];
  /** Types shown: those this build has, or the one asked for. */
  types: readonly string[];
  account: string | null;
  after: { deadLetteredAt: number; id: number } | null;
  limit: number;
};

/** Dead letters, newest first (dead_lettered_at DESC, id DESC), after the keyset position. Reads only. */
export function deadLetters(db: Database, q: DeadLetterQuery): Job[] {
  const params = {
    accounts: JSON.stringify(q.accounts),
    types: JSON.stringify(q.types),
    account: q.account,
    afterAt: q.after?.deadLetteredAt ?? null,
    afterId: q.after?.id ?? null,
    limit: q.limit,
  };
  return many<Row>(statements(db).deadLetters, params).map(toJob);
}

function toJob(row: Row): Job {
  return {
    id: row.id,
    type: row.type,
    accountId: row.account_id,
    idempotencyKey: row.idempotency_key,
    payload: JSON.parse(row.payload) as unknown,
    progress: row.progress === null ? null : (JSON.parse(row.progress) as unknown),
    state: row.state,
    attemptCount: row.attempt_count,
    enqueuedAt: row.enqueued_at,
    dueAt: row.due_at,
    failureClass: row.failure_class,
    failureCode: row.failure_code,
    failureReason: row.failure_reason,
    deadLetteredAt: row.dead_lettered_at,
    droppedAt: row.dropped_at,
  };
}
