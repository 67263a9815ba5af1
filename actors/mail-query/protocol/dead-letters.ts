/**
 * The query pool's contract with the admin dead-letter routes: the messages
 * `mail-query.dead-letters` (`DeadLettersRequest` in, `DeadLettersReply`
 * out) and `mail-query.job` (`JobLookupRequest`, `JobLookupReply`), and how
 * a job is named. Schemas only; the handlers are in ../dead-letters.ts.
 */
import { z } from 'zod';
import type { ProtocolOf } from '../../../runtime/ref.ts';
import { JOB_ID_PATTERN, JOB_TYPES, jobIdOf, jobRowOf } from '../../../runtime/store/job-vocabulary.ts';

export { JOB_ID_PATTERN, JOB_TYPES, jobIdOf, jobRowOf };
export const JobType = z.enum(JOB_TYPES);
export type JobType = z.infer<typeof JobType>;

/** Keyset position: `dead_lettered_at` (epoch ms) and `id` of the last row already shown. */
export const DeadLetterPosition = z.tuple([z.number().int(), z.number().int().positive()]);

/** Configured accounts: a job of any other is neither shown nor found. */
const Accounts = z.array(z.string().min(1));

export const DeadLettersRequest = z.strictObject({
  type: z.literal('mail-query.dead-letters'),
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
  failureClassification: z
    .string()
    .describe(
      'What ended the last attempt: authentication-refused, database-busy, database-failure, parser-unavailable, server-protocol, server-refused, server-unresponsive, tls-refused or unexpected',
    ),
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
  accounts: Accounts,
  job: z.number().int().positive(),
});
export type JobLookupRequest = z.infer<typeof JobLookupRequest>;

/** The account whose sync actor decides the job; null: no such job here. */
export const JobLookupReply = z.strictObject({ account: z.string().nullable() });
export type JobLookupReply = z.infer<typeof JobLookupReply>;

export type DeadLettersProtocol = ProtocolOf<
  z.input<typeof DeadLettersRequest> | z.input<typeof JobLookupRequest>,
  { 'mail-query.dead-letters': DeadLettersReply; 'mail-query.job': JobLookupReply }
>;
