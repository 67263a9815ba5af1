/**
 * Dead letters (docs/admin-api.md "Dead
 * letters"): background work that stopped, newest first, a keyset page at a
 * time through the read-only query pool; and the operator's decision on one
 * of them, made by the sync actor of the job's account (the writer of its
 * jobs), which the query pool names first.
 *
 * Only jobs of a type this build has and of a configured account exist
 * here: anything else is `JobUnknown`, since no actor could carry it.
 */
import { JobDecisionReply, syncActorId } from '../../../actors/imap-sync/protocol.ts';
import {
  DeadLettersReply,
  JobLookupReply,
  jobRowOf,
  type DeadLetter,
  type DeadLettersRequest,
  type JobType,
} from '../../../actors/mail-query/protocol/dead-letters.ts';
import type { Principal } from '../../auth/principal.ts';
import { NOT_ISSUED_HERE } from '../cursor.ts';
import type { AdminDeps } from '../route.ts';
import { ADMIN_PREFIX } from '../routes/prefix.ts';
import { invalidRequest, requirePrincipal } from './guard.ts';
import { configuredAccount } from './scope.ts';

/** The page's path, which its cursors are bound to. */
export const DEAD_LETTERS_PATH = `${ADMIN_PREFIX}/jobs/dead-letters`;

export type DeadLettersQuery = { type?: JobType | undefined; account?: string | undefined; pageSize: number; cursor?: string | undefined };
export type DeadLettersPage = { jobs: DeadLetter[]; nextCursor?: string };

export type JobOutcome = JobDecisionReply['outcome'];
export type JobDecisionAnswer = { job: string; outcome: JobOutcome };

export async function listDeadLetters(
  deps: Pick<AdminDeps, 'config' | 'queryPool' | 'cursors'>,
  principal: Principal | null,
  query: DeadLettersQuery,
  deadlineMs: number,
): Promise<DeadLettersPage> {
  requirePrincipal(principal, 'service.admin.read');
  const account = query.account === undefined ? undefined : configuredAccount(deps.config, query.account);
  const filters = { type: query.type, account };
  const after = query.cursor === undefined ? undefined : positionOf(deps.cursors.read(DEAD_LETTERS_PATH, filters, query.cursor));
  const request: DeadLettersRequest = {
    type: 'mail-query.dead-letters',
    accounts: deps.config.Accounts.map((a) => a.Id),
    pageSize: query.pageSize,
    ...(query.type !== undefined ? { jobType: query.type } : {}),
    ...(account !== undefined ? { account } : {}),
    ...(after !== undefined ? { after } : {}),
  };
  const page = await deps.queryPool.ask(request, { reply: DeadLettersReply, deadlineMs });
  return { jobs: page.jobs, ...(page.next !== null ? { nextCursor: deps.cursors.issue(DEAD_LETTERS_PATH, filters, page.next) } : {}) };
}

/** Retry (back to the queue under the identity it was enqueued with) or drop (never runs; its record kept). */
export async function decideDeadLetter(
  deps: Pick<AdminDeps, 'config' | 'queryPool' | 'actor'>,
  principal: Principal | null,
  body: { job: string },
  decision: 'retry' | 'drop',
  deadlineMs: number,
): Promise<JobDecisionAnswer> {
  requirePrincipal(principal, 'service.admin.operate');
  const row = jobRowOf(body.job);
  if (row === null) throw invalidRequest(JOB_SHAPE);
  const lookup = { type: 'mail-query.job', accounts: deps.config.Accounts.map((a) => a.Id), job: row } as const;
  const { account } = await deps.queryPool.ask(lookup, { reply: JobLookupReply, deadlineMs });
  if (account === null) return { job: body.job, outcome: 'JobUnknown' };
  const reply = await deps.actor(syncActorId(account)).ask({ type: 'imap-sync.job-decision', job: row, decision }, { reply: JobDecisionReply, deadlineMs });
  return { job: body.job, outcome: reply.outcome };
}

export const JOB_SHAPE = 'Name the job in job as the dead-letter listing gives it: j followed by digits, such as j42.';

/** Our own signature vouches for the cursor; its position is still checked before it reaches SQL. */
function positionOf(position: ReadonlyArray<string | number>): [number, number] {
  const [at, id] = position;
  if (position.length !== 2 || !Number.isSafeInteger(at) || !Number.isSafeInteger(id) || (id as number) < 1) throw invalidRequest(NOT_ISSUED_HERE);
  return [at as number, id as number];
}
