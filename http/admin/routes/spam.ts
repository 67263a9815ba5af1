/**
 * Spam runs (durable background work, one per account: asking while one is
 * under way returns it) and the classifications page (the audit routes'
 * common rules: account required, from/before, pageSize 1..200 default 50,
 * a cursor bound to the filters).
 */
import { z } from 'zod';
import { SpamClassificationEntry } from '../../../actors/mail-query/protocol/spam-classifications.ts';
import { SpamRunReply } from '../../../actors/spam/protocol.ts';
import { CursorField, instantField, pageSizeField } from '../query-fields.ts';
import { defineRoute, WRITE_BODY_BYTES } from '../route.ts';
import { requestSpamRun, SPAM_CLASSIFICATIONS_PATH, spamClassifications, spamRunStatus } from '../use-cases/spam.ts';
import { AccountField } from './mailbox.ts';
import { ADMIN_PREFIX } from './prefix.ts';

export const SPAM_CLASSIFICATIONS_PAGE_MAX = 200;
export const SPAM_CLASSIFICATIONS_PAGE_DEFAULT = 50;

export const SpamRunBody = z.strictObject({
  account: AccountField,
  apply: z
    .boolean({ error: 'Send apply as true to ask for the changes, or leave it out for a dry run.' })
    .optional()
    .describe('true: spam verdicts ask for the configured action; absent or false: a dry run, which changes nothing on the server'),
});

export const SpamRunQuery = z.strictObject({ account: AccountField });

export const SpamClassificationsQuery = z.strictObject({
  account: AccountField,
  from: instantField('from').describe('ISO 8601 instant: verdicts recorded at or after it'),
  before: instantField('before').describe('ISO 8601 instant: verdicts recorded before it; must be later than from'),
  pageSize: pageSizeField(SPAM_CLASSIFICATIONS_PAGE_MAX, SPAM_CLASSIFICATIONS_PAGE_DEFAULT),
  cursor: CursorField,
});

export const SpamClassificationsAnswer = z.strictObject({
  entries: z.array(SpamClassificationEntry).describe('Newest first by classifiedAt, then id'),
  nextCursor: z.string().optional().describe('Present while more remain: send it as cursor, with the same filters, for the next page'),
});

export const spamRoutes = [
  defineRoute({
    method: 'POST',
    path: `${ADMIN_PREFIX}/spam/runs`,
    permission: 'service.admin.operate',
    summary: "Classifies every stored message of one account (a dry run unless apply is true), or returns the account's run under way",
    body: SpamRunBody,
    bodyLimit: WRITE_BODY_BYTES,
    answer: SpamRunReply,
    async handle({ principal, deadlineMs, body }, deps) {
      return { status: 200, json: await requestSpamRun(deps, principal, body, deadlineMs) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: `${ADMIN_PREFIX}/spam/runs`,
    permission: 'service.admin.read',
    summary: "Progress or ending of the account's latest spam run",
    query: SpamRunQuery,
    answer: SpamRunReply,
    async handle({ principal, deadlineMs, query }, deps) {
      return { status: 200, json: await spamRunStatus(deps, principal, query, deadlineMs) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: SPAM_CLASSIFICATIONS_PATH,
    permission: 'service.admin.audit.read',
    summary: "One account's spam classifications, newest first, with the mailbox changes each verdict asked for",
    query: SpamClassificationsQuery,
    answer: SpamClassificationsAnswer,
    async handle({ principal, deadlineMs, query }, deps) {
      return { status: 200, json: await spamClassifications(deps, principal, query, deadlineMs) };
    },
  }),
];
