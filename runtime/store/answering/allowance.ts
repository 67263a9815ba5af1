/**
 * The question allowance of `ask_mail` (migration 0010): questions taken per
 * epoch-aligned period. A question is taken before its run makes any call,
 * by one statement that refuses to pass the bound, so the allowance holds
 * across restarts (the reference system kept it in memory).
 *
 * Writer: the answering actor. Importable by the answering actor and tests.
 */
import type { Database } from '../open.ts';
import { one, run } from '../rows.ts';
import { perConnection } from '../mailbox/prepared.ts';

const statements = perConnection((db: Database) => ({
  taken: db.prepare('SELECT questions FROM answering_allowance WHERE period_start = ?'),
  take: db.prepare(
    `INSERT INTO answering_allowance (period_start, questions) SELECT ?1, 1 WHERE ?2 >= 1
     ON CONFLICT (period_start) DO UPDATE SET questions = questions + 1 WHERE questions < ?2`,
  ),
}));

/** The first instant of the period `now` falls in (periods aligned to the epoch). */
export function allowancePeriodStart(now: number, periodMs: number): number {
  return Math.floor(now / periodMs) * periodMs;
}

/** Questions taken in the period that starts at `start`. */
export function questionsTaken(db: Database, start: number): number {
  return one<{ questions: number }>(statements(db).taken, [start])?.questions ?? 0;
}

/** Takes one question from the period's allowance of `max`; false (nothing taken) when none is left. Durable once it returns. */
export function takeQuestion(db: Database, start: number, max: number): boolean {
  return run(statements(db).take, [start, max]).changes === 1;
}
