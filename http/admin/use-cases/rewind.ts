/**
 * Rewind (docs/admin-api.md "Rewind"): the GET estimates what
 * discarding progress would fetch again and discards nothing; the POST
 * discards the progress of the scope's folder bindings. Both are answered
 * by the account's sync actor, the writer of the rows a rewind touches.
 */
import { RewindAssessmentReply, RewindReply } from '../../../actors/imap-sync/protocol.ts';
import type { Principal } from '../../auth/principal.ts';
import type { AdminDeps } from '../route.ts';
import { askScoped, type FolderScope } from './scope.ts';

export type RewindAssessment = RewindAssessmentReply;
export type RewindResult = RewindReply;

export function rewindAssessment(
  deps: Pick<AdminDeps, 'config' | 'actor'>,
  principal: Principal | null,
  scope: FolderScope,
  deadlineMs: number,
): Promise<RewindAssessment> {
  return askScoped(deps, principal, 'service.admin.read', scope, { type: 'imap-sync.rewind-assessment', reply: RewindAssessmentReply, deadlineMs });
}

export function rewind(deps: Pick<AdminDeps, 'config' | 'actor'>, principal: Principal | null, scope: FolderScope, deadlineMs: number): Promise<RewindResult> {
  return askScoped(deps, principal, 'service.admin.operate', scope, { type: 'imap-sync.rewind', reply: RewindReply, deadlineMs });
}
