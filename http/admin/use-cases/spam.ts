/**
 * Spam runs and classifications (docs/admin-api.md "Spam"): the POST asks
 * the spam actor to start a run over one account's stored mail (a dry run
 * unless `apply` is true) or returns the run under way (`started: false`);
 * the GET reads the account's latest run (`run: null` when none was asked).
 * The classifications page follows the audit routes' common rules, through
 * the read-only query pool like the mutation audit.
 */
import { SpamClassificationsReply, type SpamClassificationEntry } from '../../../actors/mail-query/protocol/spam-classifications.ts';
import { SPAM_ID, SpamRunReply } from '../../../actors/spam/protocol.ts';
import type { Principal } from '../../auth/principal.ts';
import type { AdminDeps } from '../route.ts';
import { ADMIN_PREFIX } from '../routes/prefix.ts';
import { checkRange, nextCursorOf, resumeAfter } from './audit-page.ts';
import { requirePrincipal } from './guard.ts';
import { configuredAccount } from './scope.ts';

export const SPAM_CLASSIFICATIONS_PATH = `${ADMIN_PREFIX}/spam/classifications`;

export async function requestSpamRun(
  deps: Pick<AdminDeps, 'config' | 'actor'>,
  principal: Principal | null,
  body: { account: string; apply?: boolean | undefined },
  deadlineMs: number,
): Promise<SpamRunReply> {
  requirePrincipal(principal, 'service.admin.operate');
  const account = configuredAccount(deps.config, body.account);
  return deps.actor(SPAM_ID).ask({ type: 'spam.run', account, apply: body.apply === true }, { reply: SpamRunReply, deadlineMs });
}

export async function spamRunStatus(
  deps: Pick<AdminDeps, 'config' | 'actor'>,
  principal: Principal | null,
  query: { account: string },
  deadlineMs: number,
): Promise<SpamRunReply> {
  requirePrincipal(principal, 'service.admin.read');
  const account = configuredAccount(deps.config, query.account);
  return deps.actor(SPAM_ID).ask({ type: 'spam.run-status', account }, { reply: SpamRunReply, deadlineMs });
}

export type SpamClassificationsQuery = {
  account: string;
  /** Epoch ms, inclusive. */
  from?: number | undefined;
  /** Epoch ms, exclusive. */
  before?: number | undefined;
  pageSize: number;
  cursor?: string | undefined;
};

export async function spamClassifications(
  deps: Pick<AdminDeps, 'config' | 'queryPool' | 'cursors'>,
  principal: Principal | null,
  query: SpamClassificationsQuery,
  deadlineMs: number,
): Promise<{ entries: SpamClassificationEntry[]; nextCursor?: string }> {
  requirePrincipal(principal, 'service.admin.audit.read');
  const account = configuredAccount(deps.config, query.account);
  const { from, before } = query;
  checkRange(from, before);
  const filters = { account, from, before };
  const after = resumeAfter(deps.cursors, SPAM_CLASSIFICATIONS_PATH, filters, query.cursor);
  const page = await deps.queryPool.ask(
    {
      type: 'mail-query.spam-classifications',
      account,
      pageSize: query.pageSize,
      ...(from !== undefined ? { endedFrom: from } : {}),
      ...(before !== undefined ? { endedBefore: before } : {}),
      ...(after !== undefined ? { after } : {}),
    },
    { reply: SpamClassificationsReply, deadlineMs },
  );
  return { entries: page.entries, ...nextCursorOf(deps.cursors, SPAM_CLASSIFICATIONS_PATH, filters, page.next) };
}
