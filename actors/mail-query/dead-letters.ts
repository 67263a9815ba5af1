/**
 * Dead letters on the read-only query pool, for the admin routes under
 * `/api/admin/jobs/dead-letters`: a page of jobs that stopped (state
 * `dead`), newest first by when each was dead-lettered then by id (a total
 * order), keyset-paginated on that pair; and the lookup that tells the
 * retry and drop routes which account's sync actor decides a job.
 *
 * Only jobs of a type this build has and of a configured account are
 * shown or found: no actor here could carry any other, so retrying or
 * dropping one answers `JobUnknown` (docs/admin-api.md "Dead letters").
 *
 * A job is named `j<row id>` on the admin surface (`jobIdOf`).
 *
 * Pool messages `mail-query.dead-letters` (`DeadLettersRequest` in,
 * `DeadLettersReply` out) and `mail-query.job` (`JobLookupRequest`,
 * `JobLookupReply`; contract: protocol/dead-letters.ts). Reads only; logs
 * nothing.
 *
 * Importable by the query pool task and tests.
 */
import { JOB_TYPES, deadLetters, jobById, jobIdOf, type Job } from '../../runtime/store/jobs.ts';
import type { Database } from '../../runtime/store/open.ts';
import type { DeadLetter, DeadLettersReply, DeadLettersRequest, JobLookupReply, JobLookupRequest } from './protocol/dead-letters.ts';

export function deadLetterPage(db: Database, msg: DeadLettersRequest): DeadLettersReply {
  // One row past the page says whether another follows.
  const rows = deadLetters(db, {
    accounts: msg.accounts,
    types: msg.jobType === undefined ? JOB_TYPES : [msg.jobType],
    account: msg.account ?? null,
    after: msg.after === undefined ? null : { deadLetteredAt: msg.after[0], id: msg.after[1] },
    limit: msg.pageSize + 1,
  });
  const page = rows.slice(0, msg.pageSize);
  const last = page.at(-1);
  return { jobs: page.map(toDeadLetter), next: rows.length > msg.pageSize && last !== undefined ? [last.deadLetteredAt!, last.id] : null };
}

export function lookUpJob(db: Database, msg: JobLookupRequest): JobLookupReply {
  const job = jobById(db, msg.job);
  if (job === null || job.accountId === null || !msg.accounts.includes(job.accountId)) return { account: null };
  return { account: (JOB_TYPES as readonly string[]).includes(job.type) ? job.accountId : null };
}

function toDeadLetter(job: Job): DeadLetter {
  return {
    job: jobIdOf(job.id),
    type: job.type as DeadLetter['type'],
    account: job.accountId!,
    attemptCount: job.attemptCount,
    failureClassification: job.failureClass ?? 'unexpected',
    failureReason: job.failureReason ?? 'The job stopped; the cause is in the server log.',
    enqueuedAt: new Date(job.enqueuedAt).toISOString(),
    deadLetteredAt: new Date(job.deadLetteredAt!).toISOString(),
  };
}
