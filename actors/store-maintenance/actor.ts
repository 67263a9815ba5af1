/**
 * Keeps the database healthy while the service runs for months: every
 * interval it checkpoints the WAL back into the database file (TRUNCATE when
 * nobody is reading, so the -wal file does not grow without bound while long
 * readers pin it) and runs `PRAGMA optimize`, which SQLite recommends for
 * long-lived connections. Writes no table. Holds its own connection.
 */
import { z } from 'zod';
import { defineActor } from '../../runtime/actor.ts';
import { readSecret } from '../../config/secret-ref.ts';
import { openStore, type Database } from '../../runtime/store/open.ts';
import { MaintenanceReport, RunNow, StoreMaintenanceConfig } from './protocol.ts';

const Tick = z.strictObject({ type: z.literal('store-maintenance.tick') });
const Msg = z.discriminatedUnion('type', [RunNow, Tick]);

type State = { db: Database; config: StoreMaintenanceConfig; remote: boolean };

function maintain(state: State): MaintenanceReport {
  if (state.remote) return { walPagesBefore: 0, walPagesCheckpointed: 0, optimized: false }; // the server keeps its own files
  const row = state.db.prepare('PRAGMA wal_checkpoint(TRUNCATE)').get() as { busy: number; log: number; checkpointed: number };
  state.db.exec('PRAGMA optimize');
  return MaintenanceReport.parse({ walPagesBefore: Math.max(0, row.log), walPagesCheckpointed: Math.max(0, row.checkpointed), optimized: true });
}

export default defineActor({
  name: 'store-maintenance',
  config: StoreMaintenanceConfig,
  messages: Msg,
  init(config, ctx) {
    const db = openStore({
      database: config.database,
      busyTimeoutMs: config.busyTimeoutMs,
      synchronous: config.synchronous,
      ...(config.authTokenRef ? { authToken: readSecret(config.authTokenRef) } : {}),
    });
    ctx.defer(() => {
      db.close();
    });
    ctx.schedule({ type: 'store-maintenance.tick' }, config.intervalMs);
    return { db, config, remote: /^(libsql|https?):/i.test(config.database) } satisfies State;
  },
  handle(state, msg, ctx) {
    const report = maintain(state);
    if (msg.type === 'store-maintenance.tick') {
      ctx.log.debug({ event: 'store.maintained', ...report }, 'store.maintained');
      ctx.schedule({ type: 'store-maintenance.tick' }, state.config.intervalMs);
      return undefined;
    }
    return report;
  },
});
