/**
 * Job routes: dead letters (background work that stopped), newest first, a
 * keyset page at a time; and retry or drop of one of them. Shapes and
 * behaviour: docs/admin-api.md "Dead letters" (its reference section is
 * generated from these schemas).
 */
import { z } from 'zod';
import { DeadLetter, JOB_ID_PATTERN, JOB_TYPES } from '../../../actors/mail-query/protocol/dead-letters.ts';
import { CursorField, pageSizeField } from '../query-fields.ts';
import { defineRoute, WRITE_BODY_BYTES } from '../route.ts';
import { DEAD_LETTERS_PATH, JOB_SHAPE, decideDeadLetter, listDeadLetters } from '../use-cases/dead-letters.ts';
import { AccountField } from './mailbox.ts';

export const DEAD_LETTERS_PAGE_MAX = 200;
export const DEAD_LETTERS_PAGE_DEFAULT = 50;

const TYPE_SENTENCE = `Send type as one of the job types this build has (${JOB_TYPES.join(', ')}), or leave it out.`;

export const DeadLettersQuery = z.strictObject({
  type: z.enum(JOB_TYPES, { error: TYPE_SENTENCE }).optional().describe('Only jobs of this type'),
  account: AccountField.optional().describe('Only jobs of this configured `Accounts:Id`'),
  pageSize: pageSizeField(DEAD_LETTERS_PAGE_MAX, DEAD_LETTERS_PAGE_DEFAULT),
  cursor: CursorField,
});

export const DeadLettersAnswer = z.strictObject({
  jobs: z.array(DeadLetter).describe('Newest first by deadLetteredAt, then by job'),
  nextCursor: z.string().optional().describe('Present while more remain: send it as cursor, with the same type and account, for the next page'),
});

export const JobDecisionBody = z.strictObject({
  job: z.string({ error: JOB_SHAPE }).regex(JOB_ID_PATTERN, { error: JOB_SHAPE }).describe('A job as the dead-letter listing names it, such as `j42`'),
});

export const JobDecisionAnswer = z.strictObject({
  job: z.string().describe('The job named'),
  outcome: z
    .enum(['Accepted', 'JobUnknown', 'JobNotDeadLettered'])
    .describe('`Accepted`: done; `JobUnknown`: no such job of a configured account; `JobNotDeadLettered`: the job is not stopped, nothing changed'),
});

const decision = (name: 'retry' | 'drop', summary: string) =>
  defineRoute({
    method: 'POST',
    path: `${DEAD_LETTERS_PATH}/${name}`,
    permission: 'service.admin.operate',
    summary,
    body: JobDecisionBody,
    bodyLimit: WRITE_BODY_BYTES,
    answer: JobDecisionAnswer,
    async handle({ principal, deadlineMs, body }, deps) {
      return { status: 200, json: await decideDeadLetter(deps, principal, body, name, deadlineMs) };
    },
  });

export const jobRoutes = [
  defineRoute({
    method: 'GET',
    path: DEAD_LETTERS_PATH,
    permission: 'service.admin.read',
    summary: 'Stopped background work, newest first, with what ended each',
    query: DeadLettersQuery,
    answer: DeadLettersAnswer,
    async handle({ principal, deadlineMs, query }, deps) {
      return { status: 200, json: await listDeadLetters(deps, principal, query, deadlineMs) };
    },
  }),
  decision('retry', 'Returns one stopped job to the queue under the identity it was enqueued with; its work goes on from where it stopped'),
  decision('drop', 'Decides one stopped job never runs; keeps its record (it leaves this listing)'),
];
