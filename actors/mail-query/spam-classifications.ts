/**
 * One page of an account's spam classifications (`spam_classifications`,
 * written by the spam actor) on the read-only query pool, for the admin
 * route `GET /api/admin/spam/classifications`: newest first by when each
 * verdict was recorded, then id; keyset-paginated on that pair (the audit
 * window, audit-window.ts). Each entry carries the changes its verdict
 * asked, read from the journal's jobs as the change tools show them.
 *
 * Pool message `mail-query.spam-classifications` (contract:
 * protocol/spam-classifications.ts). Reads only; logs nothing.
 *
 * Importable by the query pool task and tests.
 */
import type { Database } from '../../runtime/store/open.ts';
import { many } from '../../runtime/store/rows.ts';
import { auditWindow } from './audit-window.ts';
import type { SpamClassificationEntry, SpamClassificationsReply, SpamClassificationsRequest } from './protocol/spam-classifications.ts';
import { encodeStoredEmailId } from './protocol/stored-email-id.ts';
import { iso, prepared } from './statements.ts';

type Row = {
  id: number;
  message_id: number;
  verdict: 'spam' | 'ham';
  score: number;
  source: 'trusted-header' | 'engine';
  run_id: number | null;
  applied: number;
  change_jobs: string;
  conclusion: SpamClassificationEntry['conclusion'];
  ended_at: number;
};

type JobRow = { id: number; state: string; attempt_count: number; payload: string; progress: string | null };

// The window reads `ended_at`: the recording instant, under the name the audit window sorts by.
const select = `SELECT id, message_id, verdict, score, source, run_id, applied, change_jobs, conclusion, ended_at
  FROM (SELECT *, classified_at AS ended_at FROM spam_classifications)`;

/** A change's state as the change tools show it (runtime/store/mailbox/changes.ts `stateOf`). */
function stateOf(state: string, attempts: number): SpamClassificationEntry['changes'][number]['state'] {
  if (state === 'done') return 'completed';
  if (state === 'dead' || state === 'dropped') return 'dead-lettered';
  return state === 'running' || attempts > 0 ? 'converging' : 'pending';
}

export function spamClassificationsPage(db: Database, msg: SpamClassificationsRequest): SpamClassificationsReply {
  const { window, next } = auditWindow<Row>(db, select, msg);
  const jobIds = window.flatMap((row) => JSON.parse(row.change_jobs) as number[]);
  const jobs = new Map(
    (jobIds.length === 0
      ? []
      : many<JobRow>(prepared(db, 'SELECT id, state, attempt_count, payload, progress FROM jobs WHERE id IN (SELECT value FROM json_each(?))'), [
          JSON.stringify(jobIds),
        ])
    ).map((job) => [job.id, job]),
  );
  const entries = window.map((row): SpamClassificationEntry => {
    const changes = (JSON.parse(row.change_jobs) as number[]).flatMap((id) => {
      const job = jobs.get(id);
      if (job === undefined) return [];
      const payload = JSON.parse(job.payload) as { effect?: { kind?: string } };
      const progress = job.progress === null ? null : (JSON.parse(job.progress) as { outcome?: string });
      return [
        { changeId: `j${id}`, change: payload.effect?.kind ?? 'unknown', state: stateOf(job.state, job.attempt_count), outcome: progress?.outcome ?? null },
      ];
    });
    return {
      id: row.id,
      storedEmailId: encodeStoredEmailId(row.message_id),
      verdict: row.verdict,
      score: row.score,
      source: row.source,
      runId: row.run_id,
      applied: row.applied === 1,
      conclusion: row.conclusion,
      changes,
      classifiedAt: iso(row.ended_at),
    };
  });
  return { entries, next };
}
