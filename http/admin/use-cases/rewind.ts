/**
 * Rewind (admin-surface "Re-derivation and rewind"): the GET estimates what
 * discarding progress would fetch again and discards nothing; the POST
 * discards the progress of the scope's folder bindings. Both are answered
 * by the account's sync actor, the writer of the rows a rewind touches.
 */
import { RewindAssessmentReply, RewindReply, syncActorId } from '../../../actors/imap-sync/protocol.ts';
import type { Principal } from '../../auth/principal.ts';
import type { AdminDeps } from '../route.ts';
import { requirePrincipal } from './guard.ts';
import { configuredAccount, optionalFolder, type FolderScope } from './scope.ts';

export type RewindAssessment = RewindAssessmentReply;
export type RewindResult = RewindReply;

export async function rewindAssessment(deps: Pick<AdminDeps, 'config' | 'actor'>, principal: Principal | null, scope: FolderScope, deadlineMs: number): Promise<RewindAssessment> {
  requirePrincipal(principal, 'service.admin.read');
  const account = configuredAccount(deps.config, scope.account);
  const folder = optionalFolder(scope.folder);
  return deps.actor(syncActorId(account)).ask({ type: 'imap-sync.rewind-assessment', folder }, { reply: RewindAssessmentReply, deadlineMs });
}

export async function rewind(deps: Pick<AdminDeps, 'config' | 'actor'>, principal: Principal | null, scope: FolderScope, deadlineMs: number): Promise<RewindResult> {
  requirePrincipal(principal, 'service.admin.operate');
  const account = configuredAccount(deps.config, scope.account);
  const folder = optionalFolder(scope.folder);
  return deps.actor(syncActorId(account)).ask({ type: 'imap-sync.rewind', folder }, { reply: RewindReply, deadlineMs });
}
