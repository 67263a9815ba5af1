/**
 * Audit routes, newest first, a keyset page at a time: one account's record
 * of changes made to its mailbox, and of questions answered from its mail.
 */
import { z } from 'zod';
import { ANSWERING_AUDIT_PAGE_MAX, AnsweringAuditEntry } from '../../../actors/mail-query/protocol/answering-audit.ts';
import { MUTATION_KINDS, MutationAuditEntry } from '../../../actors/mail-query/protocol/mutation-audit.ts';
import { CursorField, instantField, pageSizeField } from '../query-fields.ts';
import { defineRoute } from '../route.ts';
import { ANSWERING_AUDIT_PATH, answeringAudit } from '../use-cases/answering-audit.ts';
import { MUTATION_AUDIT_PATH, mutationAudit } from '../use-cases/mutation-audit.ts';
import { AccountField } from './mailbox.ts';

/** The mailbox-change audit's `pageSize`: 1 to 200, default 50 (docs/admin-api.md "Mailbox-change audit"). */
export const MUTATION_AUDIT_PAGE_MAX = 200;
export const MUTATION_AUDIT_PAGE_DEFAULT = 50;
/** The answering audit's `pageSize`: 1 to 100, default 50 (docs/admin-api.md "Answering audit"). */
export const ANSWERING_AUDIT_PAGE_DEFAULT = 50;

const NextCursor = z.string().optional().describe('Present while more remain: send it as cursor, with the same filters, for the next page');

const MUTATION_SENTENCE = `Send mutation as one of ${MUTATION_KINDS.join(', ')}, or leave it out.`;

export const MutationAuditQuery = z.strictObject({
  account: AccountField,
  mutation: z.enum(MUTATION_KINDS, { error: MUTATION_SENTENCE }).optional().describe('Only this kind of change'),
  from: instantField('from').describe('ISO 8601 instant: entries that ended at or after it'),
  before: instantField('before').describe('ISO 8601 instant: entries that ended before it; must be later than from'),
  pageSize: pageSizeField(MUTATION_AUDIT_PAGE_MAX, MUTATION_AUDIT_PAGE_DEFAULT),
  cursor: CursorField,
});

export const MutationAuditAnswer = z.strictObject({
  entries: z
    .array(MutationAuditEntry)
    .describe('Newest first by endedAt, then id; entries naming a change this build does not permit are left out, so a page may hold fewer than pageSize'),
  nextCursor: NextCursor,
});

export const AnsweringAuditQuery = z.strictObject({
  account: AccountField,
  from: instantField('from').describe('ISO 8601 instant: runs that ended at or after it'),
  before: instantField('before').describe('ISO 8601 instant: runs that ended before it; must be later than from'),
  pageSize: pageSizeField(ANSWERING_AUDIT_PAGE_MAX, ANSWERING_AUDIT_PAGE_DEFAULT),
  cursor: CursorField,
});

export const AnsweringAuditAnswer = z.strictObject({
  entries: z
    .array(AnsweringAuditEntry)
    .describe(
      'Newest first by endedAt, then by when the entry was written; entries naming an ending or degradation this build does not declare are left out, so a page may hold fewer than pageSize',
    ),
  nextCursor: NextCursor,
});

export const auditRoutes = [
  defineRoute({
    method: 'GET',
    path: MUTATION_AUDIT_PATH,
    permission: 'service.admin.audit.read',
    summary: "One account's record of changes made to its mailbox, newest first",
    query: MutationAuditQuery,
    answer: MutationAuditAnswer,
    async handle({ principal, deadlineMs, query }, deps) {
      return { status: 200, json: await mutationAudit(deps, principal, query, deadlineMs) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: ANSWERING_AUDIT_PATH,
    permission: 'service.admin.audit.read',
    summary: "One account's record of answered questions, newest first; no question, answer, extract or subject",
    query: AnsweringAuditQuery,
    answer: AnsweringAuditAnswer,
    async handle({ principal, deadlineMs, query }, deps) {
      return { status: 200, json: await answeringAudit(deps, principal, query, deadlineMs) };
    },
  }),
];
