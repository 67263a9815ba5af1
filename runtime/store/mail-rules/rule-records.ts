/**
 * The mail-rules stage's own tables (migration 16): the arrival cursor per
 * account, rule runs, and the rule history. Sole writer: the mail-rules
 * actor. The history is read by the query pool (actors/mail-query).
 *
 * A segment's conclusions and the position past it are written in one
 * transaction (`concludeMessage`), after the sync actor answered the
 * changes durable: a crash before it repeats the segment, whose changes the
 * journal then answers as the same records (same request identifier), and
 * whose history rows are written once (unique per rule, message and run).
 *
 * Importable by the mail-rules actor.
 */
import type { Database } from '../open.ts';
import { many, one, run } from '../rows.ts';
import { perConnection } from '../mailbox/prepared.ts';

export type RunRecord = {
  id: number;
  accountId: string;
  requestedAt: number;
  throughId: number;
  lastMessageId: number;
  total: number;
  judged: number;
  matched: number;
  changes: number;
  endedAt: number | null;
  outcome: 'completed' | null;
};

/** One conclusion as written: `asked` is the rule's ask, `jobIds` the jobs recorded (empty with a `note`). */
export type HistoryRow = {
  ruleName: string;
  position: number;
  messageId: number;
  runId: number | null;
  asked: unknown;
  jobIds: number[];
  note: string | null;
};

/** Where a message's conclusions leave the stage: the arrival cursor, or a run's position and counts. */
export type Advance =
  | { kind: 'arrival'; accountId: string; messageId: number }
  | { kind: 'run'; runId: number; messageId: number; judged: number; matched: number; changes: number };

type RunRow = {
  id: number;
  account_id: string;
  requested_at: number;
  through_id: number;
  last_message_id: number;
  total_count: number;
  judged_count: number;
  matched_count: number;
  change_count: number;
  ended_at: number | null;
  outcome: string | null;
};

const runColumns = 'id, account_id, requested_at, through_id, last_message_id, total_count, judged_count, matched_count, change_count, ended_at, outcome';

const statements = perConnection((db: Database) => ({
  cursor: db.prepare('SELECT last_message_id FROM mail_rule_cursors WHERE account_id = ?'),
  startCursor: db.prepare('INSERT INTO mail_rule_cursors (account_id, last_message_id, updated_at) VALUES (?, ?, ?) ON CONFLICT (account_id) DO NOTHING'),
  forgetCursors: db.prepare('DELETE FROM mail_rule_cursors'),
  moveCursor: db.prepare('UPDATE mail_rule_cursors SET last_message_id = ?, updated_at = ? WHERE account_id = ? AND last_message_id < ?'),
  latestRun: db.prepare(`SELECT ${runColumns} FROM mail_rule_runs WHERE account_id = ? ORDER BY id DESC LIMIT 1`),
  runById: db.prepare(`SELECT ${runColumns} FROM mail_rule_runs WHERE id = ?`),
  outstanding: db.prepare(`SELECT ${runColumns} FROM mail_rule_runs WHERE ended_at IS NULL ORDER BY id`),
  insertRun: db.prepare('INSERT INTO mail_rule_runs (account_id, requested_at, through_id, total_count, updated_at) VALUES (?, ?, ?, ?, ?)'),
  // Counts are increments guarded by the position: a message recorded twice moves nothing.
  advanceRun: db.prepare(
    `UPDATE mail_rule_runs SET last_message_id = ?, judged_count = judged_count + ?, matched_count = matched_count + ?,
       change_count = change_count + ?, updated_at = ? WHERE id = ? AND ended_at IS NULL AND last_message_id < ?`,
  ),
  endRun: db.prepare("UPDATE mail_rule_runs SET ended_at = ?, outcome = 'completed', updated_at = ? WHERE id = ? AND ended_at IS NULL"),
  insertHistory: db.prepare(
    `INSERT INTO mail_rule_history (account_id, rule_name, rule_position, message_id, run_id, asked, job_ids, note, ended_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
  ),
}));

/** The arrival cursor of the account; undefined before the stage first met it enabled. */
export function arrivalCursor(db: Database, accountId: string): number | undefined {
  return one<{ last_message_id: number }>(statements(db).cursor, [accountId])?.last_message_id;
}

/** Starts the account's cursor at `lastMessageId` unless it has one. */
export function startArrivalCursor(db: Database, accountId: string, lastMessageId: number, now: number): void {
  run(statements(db).startCursor, [accountId, lastMessageId, now]);
}

/** Forgets every arrival cursor (the stage starts switched off): mail stored while it is off is left to a rule run. */
export function forgetArrivalCursors(db: Database): void {
  run(statements(db).forgetCursors);
}

/** Starts a run of the account, or returns the one outstanding (`started: false`). */
export function requestRuleRun(
  db: Database,
  accountId: string,
  now: number,
  scope: () => { throughId: number; total: number },
): { started: boolean; run: RunRecord } {
  const s = statements(db);
  const apply = db.transaction(() => {
    const latest = one<RunRow>(s.latestRun, [accountId]);
    if (latest !== undefined && latest.ended_at === null) return { started: false, run: toRun(latest) };
    const { throughId, total } = scope();
    const id = Number(run(s.insertRun, [accountId, now, throughId, total, now]).lastInsertRowid);
    return { started: true, run: toRun(one<RunRow>(s.runById, [id])!) };
  });
  return apply.immediate();
}

export function latestRuleRun(db: Database, accountId: string): RunRecord | null {
  const row = one<RunRow>(statements(db).latestRun, [accountId]);
  return row === undefined ? null : toRun(row);
}

export function ruleRunById(db: Database, runId: number): RunRecord | null {
  const row = one<RunRow>(statements(db).runById, [runId]);
  return row === undefined ? null : toRun(row);
}

/** Runs under way (resumed from their position after a restart). */
export function outstandingRuleRuns(db: Database): RunRecord[] {
  return many<RunRow>(statements(db).outstanding).map(toRun);
}

/** The run reached its end: it stays as the account's latest, ended. */
export function endRuleRun(db: Database, runId: number, now: number): void {
  run(statements(db).endRun, [now, now, runId]);
}

/** Conclusions (a segment's) and the position past them, in one transaction. */
export function concludeMessage(db: Database, accountId: string, rows: readonly HistoryRow[], advance: Advance, now: number): void {
  const s = statements(db);
  const apply = db.transaction(() => {
    for (const r of rows) {
      run(s.insertHistory, [accountId, r.ruleName, r.position, r.messageId, r.runId, JSON.stringify(r.asked), JSON.stringify(r.jobIds), r.note, now]);
    }
    if (advance.kind === 'arrival') run(s.moveCursor, [advance.messageId, now, advance.accountId, advance.messageId]);
    else run(s.advanceRun, [advance.messageId, advance.judged, advance.matched, advance.changes, now, advance.runId, advance.messageId]);
  });
  apply.immediate();
}

function toRun(row: RunRow): RunRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    requestedAt: row.requested_at,
    throughId: row.through_id,
    lastMessageId: row.last_message_id,
    total: row.total_count,
    judged: row.judged_count,
    matched: row.matched_count,
    changes: row.change_count,
    endedAt: row.ended_at,
    outcome: row.outcome === 'completed' ? 'completed' : null,
  };
}
