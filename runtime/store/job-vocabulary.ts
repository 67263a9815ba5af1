/**
 * What the jobs table's readers and the surfaces share of it, with no
 * statement: the job types this build has and how a job is named. The
 * writer is jobs.ts (each account's sync actor); the dead-letter routes and
 * the query pool read with these.
 *
 * Shape only. Importable from anywhere.
 */
import { rowIdCodec } from './row-id.ts';

/** The job types this build has; the dead-letter route refuses any other. */
export const JOB_TYPES = ['rederivation', 'mailbox-change'] as const;
export type JobType = (typeof JOB_TYPES)[number];

/** A job as the admin surface and the logs name it: `j` and the row id. */
const jobId = rowIdCodec('j');
export const JOB_ID_PATTERN = jobId.pattern;
export const jobIdOf = jobId.idOf;
export const jobRowOf = jobId.rowOf;
