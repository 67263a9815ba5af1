/**
 * The supervision tree of the service, as data, in start order. Later
 * capabilities add their children here (one sync actor per account, the
 * outbox, jobs, embedding and answering actors).
 */
import type { Config } from '../config/schema.ts';
import { moduleUrl } from './module-url.ts';
import type { ChildSpecInput } from './supervisor/child-spec.ts';

export const STORE_MAINTENANCE_INTERVAL_MS = 10 * 60_000;

export function systemChildren(config: Config): ChildSpecInput[] {
  return [
    {
      id: 'store-maintenance',
      entry: moduleUrl('../actors/store-maintenance/actor.ts', import.meta.url),
      restart: 'permanent',
      shutdownMs: 5_000,
      placement: { kind: 'shared', group: 'system', actorsPerThread: 8 },
      config: {
        database: config.Storage.Database,
        ...(config.Storage.AuthToken ? { authTokenRef: config.Storage.AuthToken } : {}),
        busyTimeoutMs: config.Storage.BusyTimeout,
        synchronous: config.Storage.Synchronous,
        intervalMs: STORE_MAINTENANCE_INTERVAL_MS,
      },
    },
  ];
}
