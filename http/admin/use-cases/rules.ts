/**
 * Mail rules on the admin surface (docs/rules-and-spam.md): the listing and
 * rule runs are asked of the mail-rules actor; the history is read through
 * the query pool under the audit routes' common rules (newest first, keyset
 * pages, a cursor bound to its filters), as the mutation audit is.
 *
 * A run POST records a run for the account, or returns the one under way
 * (`started: false`), answered 200 either way as re-derivation is.
 */
import { ListRulesReply, MAIL_RULES_ID, RunStatusReply, StartRunReply } from '../../../actors/mail-rules/protocol.ts';
import { RuleHistoryReply, type RuleHistoryEntry, type RuleHistoryRequest } from '../../../actors/mail-query/protocol/rule-history.ts';
import type { Principal } from '../../auth/principal.ts';
import type { AdminDeps } from '../route.ts';
import { ADMIN_PREFIX } from '../routes/prefix.ts';
import { checkRange, nextCursorOf, resumeAfter } from './audit-page.ts';
import { requirePrincipal } from './guard.ts';
import { configuredAccount } from './scope.ts';

export const RULES_PATH = `${ADMIN_PREFIX}/rules`;
export const RULE_RUNS_PATH = `${ADMIN_PREFIX}/rules/runs`;
export const RULE_HISTORY_PATH = `${ADMIN_PREFIX}/rules/history`;

export function listRules(deps: Pick<AdminDeps, 'actor'>, principal: Principal | null, deadlineMs: number): Promise<ListRulesReply> {
  requirePrincipal(principal, 'service.admin.read');
  return deps.actor(MAIL_RULES_ID).ask({ type: 'mail-rules.list' }, { reply: ListRulesReply, deadlineMs });
}

export function startRuleRun(
  deps: Pick<AdminDeps, 'config' | 'actor'>,
  principal: Principal | null,
  body: { account: string },
  deadlineMs: number,
): Promise<StartRunReply> {
  requirePrincipal(principal, 'service.admin.operate');
  const account = configuredAccount(deps.config, body.account);
  return deps.actor(MAIL_RULES_ID).ask({ type: 'mail-rules.start-run', account }, { reply: StartRunReply, deadlineMs });
}

export function ruleRunStatus(
  deps: Pick<AdminDeps, 'config' | 'actor'>,
  principal: Principal | null,
  query: { account: string },
  deadlineMs: number,
): Promise<RunStatusReply> {
  requirePrincipal(principal, 'service.admin.read');
  const account = configuredAccount(deps.config, query.account);
  return deps.actor(MAIL_RULES_ID).ask({ type: 'mail-rules.run-status', account }, { reply: RunStatusReply, deadlineMs });
}

export type RuleHistoryQuery = { account: string; from?: number | undefined; before?: number | undefined; pageSize: number; cursor?: string | undefined };
export type RuleHistoryPage = { entries: RuleHistoryEntry[]; nextCursor?: string };

export async function ruleHistory(
  deps: Pick<AdminDeps, 'config' | 'queryPool' | 'cursors'>,
  principal: Principal | null,
  query: RuleHistoryQuery,
  deadlineMs: number,
): Promise<RuleHistoryPage> {
  requirePrincipal(principal, 'service.admin.audit.read');
  const account = configuredAccount(deps.config, query.account);
  const { from, before } = query;
  checkRange(from, before);
  const filters = { account, from, before };
  const after = resumeAfter(deps.cursors, RULE_HISTORY_PATH, filters, query.cursor);
  const request: RuleHistoryRequest = {
    type: 'mail-query.rule-history',
    account,
    pageSize: query.pageSize,
    ...(from !== undefined ? { endedFrom: from } : {}),
    ...(before !== undefined ? { endedBefore: before } : {}),
    ...(after !== undefined ? { after } : {}),
  };
  const page = await deps.queryPool.ask(request, { reply: RuleHistoryReply, deadlineMs });
  return { entries: page.entries, ...nextCursorOf(deps.cursors, RULE_HISTORY_PATH, filters, page.next) };
}
