/**
 * Opening the connection a store slice describes (store-slice.ts), reading
 * the server token behind its secret reference at that moment.
 */
import { readSecret } from '../secret-ref.ts';
import { openStore, type Database, type StoreOptions } from './open.ts';
import type { StoreSlice } from './store-slice.ts';

export function openSlice(slice: StoreSlice, options: Pick<StoreOptions, 'checkpoints'> = {}): Database {
  return openStore({
    database: slice.database,
    busyTimeoutMs: slice.busyTimeoutMs,
    synchronous: slice.synchronous,
    ...options,
    ...(slice.authTokenRef ? { authToken: readSecret(slice.authTokenRef, process.env, 'Storage:AuthToken') } : {}),
  });
}
