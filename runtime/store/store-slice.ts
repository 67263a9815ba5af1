/**
 * The storage part of an actor's configuration slice, and opening it: every
 * actor that holds a connection receives the same four values and opens one
 * connection in its `init`. The server token is a secret reference, read
 * when the connection opens, never carried in the slice as material.
 */
import { z } from 'zod';
import { readSecret } from '../../config/secret-ref.ts';
import { openStore, type Database, type StoreOptions } from './open.ts';

export const StoreSlice = z.strictObject({
  database: z.string(),
  authTokenRef: z.string().optional(),
  busyTimeoutMs: z.number().int().nonnegative(),
  synchronous: z.enum(['Full', 'Normal']),
});
export type StoreSlice = z.infer<typeof StoreSlice>;

export function openSlice(slice: StoreSlice, options: Pick<StoreOptions, 'checkpoints'> = {}): Database {
  return openStore({
    database: slice.database,
    busyTimeoutMs: slice.busyTimeoutMs,
    synchronous: slice.synchronous,
    ...options,
    ...(slice.authTokenRef ? { authToken: readSecret(slice.authTokenRef, process.env, 'Storage:AuthToken') } : {}),
  });
}
