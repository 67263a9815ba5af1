/**
 * One account's mailbox-change audit, a page at a time (docs/admin-api.md
 * "Mailbox-change audit"): newest first
 * by when each change ended, keyset-paginated through the read-only query
 * pool. `nextCursor` is present while more remain; it is signed and bound
 * to the filters (account, mutation, from, before), so only `pageSize` may
 * change along a walk.
 *
 * Entries naming a change this build does not permit are left out, and a
 * warning names the account and how many (never what they hold).
 */
import {
  MutationAuditReply,
  type MutationAuditEntry,
  type MutationAuditRequest,
  type MutationKind,
} from '../../../actors/mail-query/protocol/mutation-audit.ts';
import type { Principal } from '../../auth/principal.ts';
import type { AdminDeps } from '../route.ts';
import { ADMIN_PREFIX } from '../routes/prefix.ts';
import { checkRange, nextCursorOf, resumeAfter } from './audit-page.ts';
import { requirePrincipal } from './guard.ts';
import { configuredAccount } from './scope.ts';

/** The page's path, which its cursors are bound to. */
export const MUTATION_AUDIT_PATH = `${ADMIN_PREFIX}/mailbox/mutations/audit`;

export type MutationAuditQuery = {
  account: string;
  mutation?: MutationKind | undefined;
  /** Epoch ms, inclusive. */
  from?: number | undefined;
  /** Epoch ms, exclusive. */
  before?: number | undefined;
  pageSize: number;
  cursor?: string | undefined;
};

export type MutationAuditPage = { entries: MutationAuditEntry[]; nextCursor?: string };

export async function mutationAudit(
  deps: Pick<AdminDeps, 'config' | 'queryPool' | 'cursors' | 'log'>,
  principal: Principal | null,
  query: MutationAuditQuery,
  deadlineMs: number,
): Promise<MutationAuditPage> {
  requirePrincipal(principal, 'service.admin.audit.read');
  const account = configuredAccount(deps.config, query.account);
  const { mutation, from, before } = query;
  checkRange(from, before);
  const filters = { account, mutation, from, before };
  const after = resumeAfter(deps.cursors, MUTATION_AUDIT_PATH, filters, query.cursor);
  const request: MutationAuditRequest = {
    type: 'mail-query.mutation-audit',
    account,
    pageSize: query.pageSize,
    ...(mutation !== undefined ? { mutation } : {}),
    ...(from !== undefined ? { endedFrom: from } : {}),
    ...(before !== undefined ? { endedBefore: before } : {}),
    ...(after !== undefined ? { after } : {}),
  };
  const page = await deps.queryPool.ask(request, { reply: MutationAuditReply, deadlineMs });
  if (page.omittedCount > 0) {
    // A later build wrote changes this one cannot interpret: left out, with a warning (docs/admin-api.md "Mailbox-change audit").
    deps.log.warn({ event: 'admin.audit-entries-omitted', account, omittedCount: page.omittedCount }, 'admin.audit-entries-omitted');
  }
  return { entries: page.entries, ...nextCursorOf(deps.cursors, MUTATION_AUDIT_PATH, filters, page.next) };
}
