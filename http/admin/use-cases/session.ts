/** The session report: who authenticated, the running version, what it holds. Needs no permission, only a principal. */
import { AdminPermissions } from '../../../config/permissions.ts';
import { holds, type Principal } from '../../auth/principal.ts';
import { requirePrincipal } from './guard.ts';

export type SessionReport = { service: 'mailcairn'; version: string; credential: string; permissions: string[] };

export function sessionReport(version: string, principal: Principal | null): SessionReport {
  const caller = requirePrincipal(principal);
  return {
    service: 'mailcairn',
    version,
    credential: caller.identity,
    // In the surface's order, so two reads of one grant compare equal.
    permissions: AdminPermissions.filter((p) => holds(caller, p)),
  };
}
