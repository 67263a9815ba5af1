/**
 * The storage part of an actor's configuration slice: every actor that holds
 * a connection receives the same four values and opens one connection in its
 * `init` (open-slice.ts), or leases its thread's (shared-connection.ts). The server token is a secret reference, read when
 * the connection opens, never carried in the slice as material. A schema
 * only, so that protocols can carry it without loading the database driver.
 */
import { z } from 'zod';

export const StoreSlice = z.strictObject({
  database: z.string(),
  authTokenRef: z.string().optional(),
  busyTimeoutMs: z.number().int().nonnegative(),
  synchronous: z.enum(['Full', 'Normal']),
});
export type StoreSlice = z.infer<typeof StoreSlice>;
