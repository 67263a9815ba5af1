/**
 * Mail-rule routes: the loaded rules, rule runs over one account's stored
 * mail, and one account's rule history (docs/rules-and-spam.md).
 */
import { z } from 'zod';
import { ListRulesReply, RunStatusReply, StartRunReply } from '../../../actors/mail-rules/protocol.ts';
import { RuleHistoryEntry } from '../../../actors/mail-query/protocol/rule-history.ts';
import { CursorField, instantField, pageSizeField } from '../query-fields.ts';
import { defineRoute, WRITE_BODY_BYTES } from '../route.ts';
import { listRules, RULE_HISTORY_PATH, RULE_RUNS_PATH, RULES_PATH, ruleHistory, ruleRunStatus, startRuleRun } from '../use-cases/rules.ts';
import { AccountField } from './mailbox.ts';

/** The rule history's `pageSize`: 1 to 200, default 50, as the mailbox-change audit. */
export const RULE_HISTORY_PAGE_MAX = 200;
export const RULE_HISTORY_PAGE_DEFAULT = 50;

export const RuleRunBody = z.strictObject({ account: AccountField });
export const RuleRunQuery = z.strictObject({ account: AccountField });

export const RuleHistoryQuery = z.strictObject({
  account: AccountField,
  from: instantField('from').describe('ISO 8601 instant: conclusions written at or after it'),
  before: instantField('before').describe('ISO 8601 instant: conclusions written before it; must be later than from'),
  pageSize: pageSizeField(RULE_HISTORY_PAGE_MAX, RULE_HISTORY_PAGE_DEFAULT),
  cursor: CursorField,
});

export const RuleHistoryAnswer = z.strictObject({
  entries: z.array(RuleHistoryEntry).describe('Newest first by concludedAt, then id'),
  nextCursor: z.string().optional().describe('Present while more remain: send it as cursor, with the same filters, for the next page'),
});

export const ruleRoutes = [
  defineRoute({
    method: 'GET',
    path: RULES_PATH,
    permission: 'service.admin.read',
    summary: 'Loaded mail rules in run order, and whether the configuration file still says what they were read from',
    answer: ListRulesReply,
    async handle({ principal, deadlineMs }, deps) {
      return { status: 200, json: await listRules(deps, principal, deadlineMs) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: RULE_RUNS_PATH,
    permission: 'service.admin.operate',
    summary: "Runs one account's rules over all its stored mail as background work, or returns the run under way",
    body: RuleRunBody,
    bodyLimit: WRITE_BODY_BYTES,
    answer: StartRunReply,
    async handle({ principal, deadlineMs, body }, deps) {
      return { status: 200, json: await startRuleRun(deps, principal, body, deadlineMs) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: RULE_RUNS_PATH,
    permission: 'service.admin.read',
    summary: "Progress or ending of the account's latest rule run",
    query: RuleRunQuery,
    answer: RunStatusReply,
    async handle({ principal, deadlineMs, query }, deps) {
      return { status: 200, json: await ruleRunStatus(deps, principal, query, deadlineMs) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: RULE_HISTORY_PATH,
    permission: 'service.admin.audit.read',
    summary: "One account's rule conclusions, newest first, with what each asked and the changes' outcomes",
    query: RuleHistoryQuery,
    answer: RuleHistoryAnswer,
    async handle({ principal, deadlineMs, query }, deps) {
      return { status: 200, json: await ruleHistory(deps, principal, query, deadlineMs) };
    },
  }),
];
