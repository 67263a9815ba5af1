/**
 * One account's answering audit, a page at a time (docs/admin-api.md
 * "Answering audit"): the questions
 * answered from the account's mail, newest first by when each run ended,
 * keyset-paginated through the read-only query pool. An entry names the
 * run, the endpoint, the instruction version, the instants, the ending and
 * degradations, and the messages read; never the question, the answer, an
 * extract or a subject. `nextCursor` is present while more remain; it is
 * signed and bound to the filters (account, from, before), so only
 * `pageSize` may change along a walk.
 *
 * Entries naming an ending or degradation this build does not declare are
 * left out, and a warning names the account and how many (never what they
 * hold).
 */
import { AnsweringAuditReply, type AnsweringAuditEntry, type AnsweringAuditRequest } from '../../../actors/mail-query/protocol/answering-audit.ts';
import type { Principal } from '../../auth/principal.ts';
import type { AdminDeps } from '../route.ts';
import { ADMIN_PREFIX } from '../routes/prefix.ts';
import { checkRange, nextCursorOf, resumeAfter } from './audit-page.ts';
import { requirePrincipal } from './guard.ts';
import { configuredAccount } from './scope.ts';

/** The page's path, which its cursors are bound to. */
export const ANSWERING_AUDIT_PATH = `${ADMIN_PREFIX}/answering/audit`;

export type AnsweringAuditQuery = {
  account: string;
  /** Epoch ms, inclusive. */
  from?: number | undefined;
  /** Epoch ms, exclusive. */
  before?: number | undefined;
  pageSize: number;
  cursor?: string | undefined;
};

export type AnsweringAuditPage = { entries: AnsweringAuditEntry[]; nextCursor?: string };

export async function answeringAudit(
  deps: Pick<AdminDeps, 'config' | 'queryPool' | 'cursors' | 'log'>,
  principal: Principal | null,
  query: AnsweringAuditQuery,
  deadlineMs: number,
): Promise<AnsweringAuditPage> {
  requirePrincipal(principal, 'service.admin.audit.read');
  const account = configuredAccount(deps.config, query.account);
  const { from, before } = query;
  checkRange(from, before);
  const filters = { account, from, before };
  const after = resumeAfter(deps.cursors, ANSWERING_AUDIT_PATH, filters, query.cursor);
  const request: AnsweringAuditRequest = {
    type: 'mail-query.answering-audit',
    account,
    pageSize: query.pageSize,
    ...(from !== undefined ? { endedFrom: from } : {}),
    ...(before !== undefined ? { endedBefore: before } : {}),
    ...(after !== undefined ? { after } : {}),
  };
  const page = await deps.queryPool.ask(request, { reply: AnsweringAuditReply, deadlineMs });
  if (page.omittedCount > 0) {
    // A later build wrote runs this one cannot interpret (docs/admin-api.md "Answering audit": left out, with a warning).
    deps.log.warn({ event: 'admin.answering-audit-entries-omitted', account, omittedCount: page.omittedCount }, 'admin.answering-audit-entries-omitted');
  }
  return { entries: page.entries, ...nextCursorOf(deps.cursors, ANSWERING_AUDIT_PATH, filters, page.next) };
}
