/**
 * Public messages of the store-maintenance actor: its config slice and the
 * one command others may send (`store-maintenance.run-now`, used by tests
 * and, later, by the admin surface). The timer tick is private to actor.ts.
 */
import { z } from 'zod';
import { StoreSlice } from '../../runtime/store/store-slice.ts';
import { moduleUrl } from '../../runtime/module-url.ts';
import type { ProtocolOf } from '../../runtime/ref.ts';

/** The module the store maintenance actor runs from. Named here, as a URL, so that the composition root starts it without importing it. */
export const STORE_MAINTENANCE_ENTRY = moduleUrl('./actor.ts', import.meta.url);

export const StoreMaintenanceConfig = StoreSlice.extend({
  intervalMs: z.number().int().positive(),
  /** How often the WAL is copied back into the database (PASSIVE checkpoint). */
  checkpointCheckMs: z.number().int().positive(),
});
export type StoreMaintenanceConfig = z.infer<typeof StoreMaintenanceConfig>;

export const RunNow = z.strictObject({ type: z.literal('store-maintenance.run-now') });

export const MaintenanceReport = z.strictObject({
  walPagesBefore: z.number().int(),
  walPagesCheckpointed: z.number().int(),
  optimized: z.boolean(),
});
export type MaintenanceReport = z.infer<typeof MaintenanceReport>;

export type StoreMaintenanceProtocol = ProtocolOf<z.input<typeof RunNow>, { 'store-maintenance.run-now': MaintenanceReport }>;
