/**
 * The answering audit's writes (`answering_runs`, `answering_reads`): one
 * row per run and account, with one row per message the run read. Sole
 * writer: the answering actor (actors/answering), when a run ends, and its
 * retention prune. The admin page reads the tables on the query pool
 * (actors/mail-query/answering-audit.ts).
 *
 * The record holds no question, answer, extract or subject: only which
 * messages were read, in what order, and whether the answer cited them.
 * Erasing a message erases its reads (the schema's cascade); the run stays.
 *
 * The vocabulary of endings and degradations is in run-vocabulary.ts (the
 * answering actor publishes it); `AnsweringRunRecord` in its protocol
 * narrows `RunRecord` here to it. What a build does not know is sorted out
 * when read.
 *
 * Importable by the answering actor and tests.
 */
import type { Database } from '../open.ts';
import { many, run } from '../rows.ts';
import { perConnection } from '../mailbox/prepared.ts';

/** One entry as the actor writes it (the shape of `AnsweringRunRecord`). */
export type RunRecord = {
  runId: string;
  accountId: string;
  endpointAlias: string;
  instructionVersion: string;
  beganAt: number;
  endedAt: number;
  ending: string;
  degradation: readonly string[];
  reads: ReadonlyArray<{ position: number; messageId: number; cited: boolean }>;
};

const inIds = 'IN (SELECT value FROM json_each(?))';

const statements = perConnection((db: Database) => ({
  run: db.prepare(
    `INSERT INTO answering_runs (run_id, account_id, endpoint_alias, instruction_version, began_at, ended_at, ending, degradation)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  ),
  // A message erased while the run read it has no row left to name: nothing is inserted for it.
  read: db.prepare('INSERT INTO answering_reads (answering_run_id, position, message_id, cited) SELECT ?, ?, id, ? FROM messages WHERE id = ?'),
  ended: db.prepare('SELECT id FROM answering_runs WHERE ended_at < ? ORDER BY ended_at, id LIMIT ?'),
  // Children first, explicitly: a libSQL server may not enforce the cascade.
  pruneReads: db.prepare(`DELETE FROM answering_reads WHERE answering_run_id ${inIds}`),
  pruneRuns: db.prepare(`DELETE FROM answering_runs WHERE id ${inIds}`),
}));

/**
 * Records runs in one transaction: a row per record (degradation as a JSON
 * list) and its reads. A read of a message that no longer exists is
 * skipped. The same run and account twice is refused by the schema
 * (UNIQUE), and nothing of the call is kept.
 */
export function recordAnsweringRuns(db: Database, records: readonly RunRecord[]): void {
  if (records.length === 0) return;
  const s = statements(db);
  const apply = db.transaction((): void => {
    for (const r of records) {
      const id = Number(
        run(s.run, [r.runId, r.accountId, r.endpointAlias, r.instructionVersion, r.beganAt, r.endedAt, r.ending, JSON.stringify(r.degradation)])
          .lastInsertRowid,
      );
      for (const read of r.reads) run(s.read, [id, read.position, read.cited ? 1 : 0, read.messageId]);
    }
  });
  apply.immediate();
}

/** Deletes at most `limit` runs (oldest first) that ended before `endedBefore`, with their reads; returns how many runs. */
export function pruneAnsweringRuns(db: Database, endedBefore: number, limit: number): number {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new Error('a prune needs a limit of one run or more');
  const s = statements(db);
  const apply = db.transaction((): number => {
    const ids = many<{ id: number }>(s.ended, [endedBefore, limit]).map((row) => row.id);
    if (ids.length === 0) return 0;
    const list = JSON.stringify(ids);
    run(s.pruneReads, [list]);
    return run(s.pruneRuns, [list]).changes;
  });
  return apply.immediate();
}
