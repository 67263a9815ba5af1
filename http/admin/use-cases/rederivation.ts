/**
 * Re-derivation (docs/admin-api.md "Re-derivation"): the POST records
 * a run for the scope, or returns the one under way (`started: false`); the
 * account's sync actor carries it across bounded segments. The GET reads the
 * scope's latest run; a scope never asked about answers `run: null` (and
 * `carriage: null`), not 404.
 */
import { RederivationReply, RederiveReply } from '../../../actors/imap-sync/protocol.ts';
import type { Principal } from '../../auth/principal.ts';
import type { AdminDeps } from '../route.ts';
import { askScoped, type FolderScope } from './scope.ts';

export type RederivationAnswer = { started: boolean; carriage: RederiveReply['carriage'] | null; run: RederiveReply['run'] | null };

export function requestRederivation(
  deps: Pick<AdminDeps, 'config' | 'actor'>,
  principal: Principal | null,
  scope: FolderScope,
  deadlineMs: number,
): Promise<RederivationAnswer> {
  return askScoped(deps, principal, 'service.admin.operate', scope, { type: 'imap-sync.rederive', reply: RederiveReply, deadlineMs });
}

export async function rederivationStatus(
  deps: Pick<AdminDeps, 'config' | 'actor'>,
  principal: Principal | null,
  scope: FolderScope,
  deadlineMs: number,
): Promise<RederivationAnswer> {
  const reply = await askScoped(deps, principal, 'service.admin.read', scope, { type: 'imap-sync.rederivation', reply: RederivationReply, deadlineMs });
  // A reading starts nothing.
  return { started: false, carriage: reply.carriage ?? null, run: reply.run };
}
