/** The synchronization status, as the scheduler answers it (it alone knows phases and backoff). */
import { SCHEDULER_ID } from '../../../actors/sync-scheduler/protocol.ts';
import { SynchronizationStatus } from '../../../runtime/store/mailbox/status.ts';
import type { Principal } from '../../auth/principal.ts';
import type { AdminDeps } from '../route.ts';
import { requirePrincipal } from './guard.ts';

export async function synchronizationStatus(deps: Pick<AdminDeps, 'actor'>, principal: Principal | null, deadlineMs: number): Promise<SynchronizationStatus> {
  requirePrincipal(principal, 'service.admin.read');
  return deps.actor(SCHEDULER_ID).ask({ type: 'sync-scheduler.status' }, { reply: SynchronizationStatus, deadlineMs });
}
