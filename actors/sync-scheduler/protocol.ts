/** Public messages of the synchronization scheduler (`sync-scheduler`) and its configuration slice. */
import { z } from 'zod';
import { StoreSlice } from '../../runtime/store/store-slice.ts';
import { moduleUrl } from '../../runtime/module-url.ts';
import type { ActorId, ProtocolOf } from '../../runtime/ref.ts';
import type { SynchronizationStatus } from '../../runtime/store/mailbox/status.ts';

/** The module the synchronization scheduler runs from. Named here, as a URL, so that the composition root starts it without importing it. */
export const SCHEDULER_ENTRY = moduleUrl('./actor.ts', import.meta.url);

export const SCHEDULER_ID: ActorId<SchedulerProtocol> = 'sync-scheduler';

export const SchedulerConfig = z.strictObject({
  accounts: z.array(z.string()),
  enabled: z.boolean(),
  intervalMs: z.number().int().positive(),
  maxConcurrent: z.number().int().min(1),
  backoffInitialMs: z.number().int().positive(),
  backoffMaxMs: z.number().int().positive(),
  /** Longest one run may take before the scheduler stops waiting for it. */
  runDeadlineMs: z.number().int().positive(),
  store: StoreSlice,
});
export type SchedulerConfig = z.infer<typeof SchedulerConfig>;

export const SchedulerMessage = z.discriminatedUnion('type', [
  /** From an account's sync actor: the server changed (new mail, flags, expunges) in a mapped folder while it watched. */
  z.strictObject({ type: z.literal('sync-scheduler.wake'), account: z.string() }),
  /** The synchronization status of docs/admin-api.md (answered with SynchronizationStatus). */
  z.strictObject({ type: z.literal('sync-scheduler.status') }),
]);
export type SchedulerMessage = z.infer<typeof SchedulerMessage>;

export type SchedulerProtocol = ProtocolOf<
  z.input<typeof SchedulerMessage>,
  { 'sync-scheduler.wake': undefined; 'sync-scheduler.status': SynchronizationStatus }
>;
