/**
 * One page of an account's answering audit (`answering_runs` and
 * `answering_reads`, written by the answering actor through
 * runtime/store/answering/audit.ts) on the read-only query pool, for the
 * admin route `GET /api/admin/answering/audit`. Newest first by `ended_at`
 * then `id`, keyset-paginated on that pair; the range filters apply to
 * `ended_at` (`endedFrom` inclusive, `endedBefore` exclusive). An entry's
 * reads come in position order.
 *
 * A row naming an ending or a degradation this build does not declare (a
 * later build wrote it) is left out and only counted (`omittedCount`); it
 * still takes its place in the window, so a page may carry fewer entries
 * than `pageSize`, and `next` says whether more follow.
 *
 * Pool message `mail-query.answering-audit` (its contract:
 * protocol/answering-audit.ts). Reads only; logs
 * nothing (the admin use case warns about omitted rows).
 *
 * Importable by the query pool task and tests.
 */
import type { Database } from '../../runtime/store/open.ts';
import { many } from '../../runtime/store/rows.ts';
import { auditWindow } from './audit-window.ts';
import { RUN_DEGRADATIONS, RUN_ENDINGS, type RunDegradation, type RunEnding } from '../../runtime/store/answering/run-vocabulary.ts';
import type { AnsweringAuditEntry, AnsweringAuditReply, AnsweringAuditRequest } from './protocol/answering-audit.ts';
import { iso, prepared } from './statements.ts';
import { encodeStoredEmailId } from './protocol/stored-email-id.ts';

type RunRow = {
  id: number;
  run_id: string;
  account_id: string;
  endpoint_alias: string;
  instruction_version: string;
  began_at: number;
  ended_at: number;
  ending: string;
  degradation: string;
};

type ReadRow = { answering_run_id: number; position: number; message_id: number; cited: number };

const endings = new Set<string>(RUN_ENDINGS);
const degradations = new Set<string>(RUN_DEGRADATIONS);

const READS = `SELECT answering_run_id, position, message_id, cited FROM answering_reads
  WHERE answering_run_id IN (SELECT value FROM json_each(?)) ORDER BY answering_run_id, position`;

export function answeringAuditPage(db: Database, msg: AnsweringAuditRequest): AnsweringAuditReply {
  const { window, next } = auditWindow<RunRow>(
    db,
    'SELECT id, run_id, account_id, endpoint_alias, instruction_version, began_at, ended_at, ending, degradation FROM answering_runs',
    msg,
  );
  const shown = window.flatMap((row) => {
    const degradation = knownDegradation(row.degradation);
    return endings.has(row.ending) && degradation !== null ? [{ row, degradation }] : [];
  });
  const reads = new Map<number, AnsweringAuditEntry['reads']>();
  if (shown.length > 0) {
    for (const read of many<ReadRow>(prepared(db, READS), [JSON.stringify(shown.map(({ row }) => row.id))])) {
      const list = reads.get(read.answering_run_id) ?? [];
      reads.set(read.answering_run_id, list);
      list.push({ position: read.position, storedEmailId: encodeStoredEmailId(read.message_id), cited: read.cited === 1 });
    }
  }
  return {
    entries: shown.map(({ row, degradation }) => ({
      runId: row.run_id,
      accountId: row.account_id,
      endpointAlias: row.endpoint_alias,
      instructionVersion: row.instruction_version,
      beganAt: iso(row.began_at),
      endedAt: iso(row.ended_at),
      ending: row.ending as RunEnding,
      degradation,
      reads: reads.get(row.id) ?? [],
    })),
    omittedCount: window.length - shown.length,
    next,
  };
}

/** The degradations, or null when the list names one this build does not declare (or is not a list of names at all). */
function knownDegradation(text: string): RunDegradation[] | null {
  const value: unknown = JSON.parse(text);
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string' && degradations.has(v))) return null;
  return value as RunDegradation[];
}
