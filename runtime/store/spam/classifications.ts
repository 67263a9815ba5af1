/**
 * Spam verdicts as recorded (migration 17 `spam_classifications`), the
 * arrival stage's cursor and admin runs. Sole writer: the spam actor. A
 * verdict is recorded in the transaction that moves its position (the
 * arrival cursor or the run's), so a crash repeats the ask (answered again
 * by the journal under the same request id) but never records a verdict
 * twice.
 *
 * Importable by the spam actor only (the query pool reads the table).
 */
import type { Database } from '../open.ts';
import { many, one, run } from '../rows.ts';
import { perConnection } from '../mailbox/prepared.ts';

export type Verdict = 'spam' | 'ham';
export type VerdictSource = 'trusted-header' | 'engine';
/** Why a spam verdict asked for no change though it applied: the move's folder has no binding, or the message was gone. */
export type Conclusion = 'folder-unbound' | 'message-gone' | 'request-conflict';

export type Classification = {
  messageId: number;
  verdict: Verdict;
  /** Mapped score, 0..1. */
  score: number;
  source: VerdictSource;
  /** Whether changes were asked for (false: a dry run, a ham verdict, or Action None). */
  applied: boolean;
  changeJobs: readonly number[];
  conclusion: Conclusion | null;
};

export type SpamRun = {
  runId: number;
  account: string;
  apply: boolean;
  requestedAt: number;
  throughId: number;
  totalCount: number;
  lastMessageId: number;
  judgedCount: number;
  spamCount: number;
  changesCount: number;
  /** Since when the run waits for the engine; null while it is not waiting. */
  waitingSince: number | null;
  endedAt: number | null;
};

type RunRow = {
  id: number;
  account_id: string;
  apply: number;
  requested_at: number;
  through_id: number;
  total_count: number;
  last_message_id: number;
  judged_count: number;
  spam_count: number;
  changes_count: number;
  waiting_since: number | null;
  ended_at: number | null;
};

const runColumns =
  'id, account_id, apply, requested_at, through_id, total_count, last_message_id, judged_count, spam_count, changes_count, waiting_since, ended_at';

const statements = perConnection((db: Database) => ({
  insertVerdict: db.prepare(
    `INSERT INTO spam_classifications (account_id, message_id, verdict, score, source, run_id, applied, change_jobs, conclusion, classified_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ),
  cursor: db.prepare('SELECT last_message_id FROM spam_arrival_cursors WHERE account_id = ?'),
  forgetCursors: db.prepare('DELETE FROM spam_arrival_cursors'),
  setCursor: db.prepare(
    `INSERT INTO spam_arrival_cursors (account_id, last_message_id, updated_at) VALUES (?, ?, ?)
     ON CONFLICT (account_id) DO UPDATE SET last_message_id = max(last_message_id, excluded.last_message_id), updated_at = excluded.updated_at`,
  ),
  latestRun: db.prepare(`SELECT ${runColumns} FROM spam_runs WHERE account_id = ? ORDER BY id DESC LIMIT 1`),
  runById: db.prepare(`SELECT ${runColumns} FROM spam_runs WHERE id = ?`),
  outstanding: db.prepare(`SELECT ${runColumns} FROM spam_runs WHERE ended_at IS NULL ORDER BY id`),
  insertRun: db.prepare('INSERT INTO spam_runs (account_id, apply, requested_at, through_id, total_count, updated_at) VALUES (?, ?, ?, ?, ?, ?)'),
  advanceRun: db.prepare(
    `UPDATE spam_runs SET last_message_id = ?, judged_count = judged_count + ?, spam_count = spam_count + ?, changes_count = changes_count + ?,
       waiting_since = NULL, updated_at = ? WHERE id = ? AND ended_at IS NULL AND last_message_id < ?`,
  ),
  waitRun: db.prepare('UPDATE spam_runs SET waiting_since = ifnull(waiting_since, ?), updated_at = ? WHERE id = ? AND ended_at IS NULL'),
  endRun: db.prepare('UPDATE spam_runs SET ended_at = ?, waiting_since = NULL, updated_at = ? WHERE id = ? AND ended_at IS NULL'),
}));

function insertVerdict(db: Database, accountId: string, runId: number | null, c: Classification, now: number): void {
  run(statements(db).insertVerdict, [
    accountId,
    c.messageId,
    c.verdict,
    c.score,
    c.source,
    runId,
    c.applied ? 1 : 0,
    JSON.stringify(c.changeJobs),
    c.conclusion,
    now,
  ]);
}

/** The arrival stage's position for the account; null before it first met the account. */
export function arrivalCursor(db: Database, accountId: string): number | null {
  return one<{ last_message_id: number }>(statements(db).cursor, [accountId])?.last_message_id ?? null;
}

/**
 * Forgets every account's position: the stage started switched off, so when switched on again it starts from
 * the mail stored then (as the mail-rules stage does), and what was stored meanwhile is left to a run.
 */
export function forgetArrivalCursors(db: Database): void {
  run(statements(db).forgetCursors);
}

/** Sets the position (never backwards). */
export function setArrivalCursor(db: Database, accountId: string, lastMessageId: number, now: number): void {
  run(statements(db).setCursor, [accountId, lastMessageId, now]);
}

/** Records one arrival verdict and moves the cursor past its message, in one transaction. */
export function recordArrivalVerdict(db: Database, accountId: string, c: Classification, now: number): void {
  db.transaction(() => {
    insertVerdict(db, accountId, null, c, now);
    setArrivalCursor(db, accountId, c.messageId, now);
  }).immediate();
}

function toRun(row: RunRow): SpamRun {
  return {
    runId: row.id,
    account: row.account_id,
    apply: row.apply === 1,
    requestedAt: row.requested_at,
    throughId: row.through_id,
    totalCount: row.total_count,
    lastMessageId: row.last_message_id,
    judgedCount: row.judged_count,
    spamCount: row.spam_count,
    changesCount: row.changes_count,
    waitingSince: row.waiting_since,
    endedAt: row.ended_at,
  };
}

/** Starts a run, or returns the one under way (`started: false`). `scope` gives the run's end and size when it starts. */
export function requestSpamRun(
  db: Database,
  accountId: string,
  apply: boolean,
  now: number,
  scope: () => { throughId: number; totalCount: number },
): { started: boolean; run: SpamRun } {
  const s = statements(db);
  return db
    .transaction(() => {
      const latest = one<RunRow>(s.latestRun, [accountId]);
      if (latest !== undefined && latest.ended_at === null) return { started: false, run: toRun(latest) };
      const { throughId, totalCount } = scope();
      const id = Number(run(s.insertRun, [accountId, apply ? 1 : 0, now, throughId, totalCount, now]).lastInsertRowid);
      return { started: true, run: toRun(one<RunRow>(s.runById, [id])!) };
    })
    .immediate();
}

/** The account's latest run, under way or ended; null when none was asked. */
export function latestSpamRun(db: Database, accountId: string): SpamRun | null {
  const row = one<RunRow>(statements(db).latestRun, [accountId]);
  return row === undefined ? null : toRun(row);
}

export function spamRunById(db: Database, runId: number): SpamRun | null {
  const row = one<RunRow>(statements(db).runById, [runId]);
  return row === undefined ? null : toRun(row);
}

/** Runs under way (resumed after a restart), oldest first. */
export function outstandingSpamRuns(db: Database): SpamRun[] {
  return many<RunRow>(statements(db).outstanding).map(toRun);
}

/**
 * Records a segment of a run: its verdicts and the position after them, in
 * one transaction; the counts are increments, applied only when the
 * position moves (a segment recorded twice changes nothing).
 */
export function recordRunSegment(
  db: Database,
  runId: number,
  accountId: string,
  verdicts: readonly Classification[],
  lastMessageId: number,
  now: number,
): boolean {
  const s = statements(db);
  return db
    .transaction(() => {
      const spam = verdicts.filter((v) => v.verdict === 'spam').length;
      const changes = verdicts.reduce((sum, v) => sum + v.changeJobs.length, 0);
      const moved = run(s.advanceRun, [lastMessageId, verdicts.length, spam, changes, now, runId, lastMessageId]).changes === 1;
      if (moved) for (const v of verdicts) insertVerdict(db, accountId, runId, v, now);
      return moved;
    })
    .immediate();
}

/** The run waits for the engine (down or its circuit open); cleared by its next segment. */
export function markRunWaiting(db: Database, runId: number, now: number): void {
  run(statements(db).waitRun, [now, now, runId]);
}

export function endSpamRun(db: Database, runId: number, now: number): boolean {
  return run(statements(db).endRun, [now, now, runId]).changes === 1;
}
