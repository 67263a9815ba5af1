/**
 * The storage slice of the configuration: what every actor with a database
 * connection receives (and the boot opens for migrations). Imported by the
 * composition root and by use cases that ask the query pool.
 */
import type { StoreSlice } from '../runtime/store/store-slice.ts';
import type { Config } from './schema.ts';

/** The storage slice every actor with a connection receives (and the boot opens for migrations). */
export function storeSlice(config: Config): StoreSlice {
  return {
    database: config.Storage.Database,
    ...(config.Storage.AuthToken ? { authTokenRef: config.Storage.AuthToken } : {}),
    busyTimeoutMs: config.Storage.BusyTimeout,
    synchronous: config.Storage.Synchronous,
  };
}
