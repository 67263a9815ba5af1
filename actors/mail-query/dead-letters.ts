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
 * `JobLookupReply`), re-exported by protocol.ts. Reads only; logs nothing.
 *
 * Importable by the query pool task, protocol.ts and tests.
 */
import { z } from 'zod';
import { JOB_ID_PATTERN, JOB_TYPES, deadLetters, jobById, jobIdOf, jobRowOf, type Job } from '../../runtime/store/jobs.ts';
import type { Database } from '../../runtime/store/open.ts';
import { StoreSlice } from '../../runtime/store/store-slice.ts';

export { JOB_ID_PATTERN, JOB_TYPES, jobIdOf, jobRowOf };
export const JobType = z.enum(JOB_TYPES);
export type JobType = z.infer<typeof JobType>;

/** Keyset position: `dead_lettered_at` (epoch ms) and `id` of the last row already shown. */
export const DeadLetterPosition = z.tuple([z.number().int(), z.number().int().positive()]);

/** Configured accounts: a job of any other is neither shown nor found. */
const Accounts = z.array(z.string().min(1));

export const DeadLettersRequest = z.strictObject({
  type: z.literal('mail-query.dead-letters'),
  store: StoreSlice,
  accounts: Accounts,
  jobType: JobType.optional(),
  account: z.string().min(1).optional(),
  after: DeadLetterPosition.optional(),
  pageSize: z.number().int().min(1).max(200),
});
export type DeadLettersRequest = z.infer<typeof DeadLettersRequest>;

const Instant = z.iso.datetime();

export const DeadLetter = z.strictObject({
  job: z.string().describe('The job, `j` and a number; what retry and drop take'),
  type: JobType.describe('What the job carries'),
  account: z.string().describe('The account whose work it is'),
  attemptCount: z.number().int().nonnegative().describe('Attempts made at the position where it stopped'),
  failureClassification: z.string().describe('What ended the last attempt: database-busy, database-failure, parser-unavailable or unexpected'),
  failureReason: z.string().describe('A constant sentence about that failure; never mail content'),
  enqueuedAt: Instant.describe('When the job was enqueued'),
  deadLetteredAt: Instant.describe('When it stopped'),
});
export type DeadLetter = z.infer<typeof DeadLetter>;

export const DeadLettersReply = z.strictObject({
  jobs: z.array(DeadLetter),
  /** Where the next page starts; null: nothing follows. */
  next: DeadLetterPosition.nullable(),
});
export type DeadLettersReply = z.infer<typeof DeadLettersReply>;

export const JobLookupRequest = z.strictObject({
  type: z.literal('mail-query.job'),
  store: StoreSlice,
  accounts: Accounts,
  job: z.number().int().positive(),
});
export type JobLookupRequest = z.infer<typeof JobLookupRequest>;

/** The account whose sync actor decides the job; null: no such job here. */
export const JobLookupReply = z.strictObject({ account: z.string().nullable() });
export type JobLookupReply = z.infer<typeof JobLookupReply>;

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
