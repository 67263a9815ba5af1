/**
 * Keeps the database healthy while the service runs for months: every
 * second it copies the WAL back into the database file (PASSIVE: it never
 * waits for a reader or writer; sync actors leave this to it so their
 * commits do not stall), and every interval it also runs `PRAGMA optimize`,
 * which SQLite recommends for long-lived connections. `journal_size_limit`
 * keeps the -wal file from staying large. Writes no table.
 */
import { z } from 'zod';
import { defineActor } from '../../runtime/actor.ts';
import type { Database } from '../../runtime/store/open.ts';
import { openSlice } from '../../runtime/store/open-slice.ts';
import { MaintenanceReport, RunNow, StoreMaintenanceConfig } from './protocol.ts';

const Tick = z.strictObject({ type: z.literal('store-maintenance.tick') });
const CheckpointTick = z.strictObject({ type: z.literal('store-maintenance.checkpoint-tick') });
const Msg = z.discriminatedUnion('type', [RunNow, Tick, CheckpointTick]);

type State = { db: Database; config: StoreMaintenanceConfig; remote: boolean };

function maintain(state: State): MaintenanceReport {
  if (state.remote) return { walPagesBefore: 0, walPagesCheckpointed: 0, optimized: false }; // the server keeps its own files
  const row = state.db.prepare('PRAGMA wal_checkpoint(PASSIVE)').get() as { busy: number; log: number; checkpointed: number };
  state.db.exec('PRAGMA optimize');
  return MaintenanceReport.parse({ walPagesBefore: Math.max(0, row.log), walPagesCheckpointed: Math.max(0, row.checkpointed), optimized: true });
}

/**
 * Sync actors leave checkpoints to this actor (their connections open with
 * `checkpoints: 'background'`), so copying the WAL back happens on this
 * thread while theirs go on fetching. PASSIVE never waits for a writer or a
 * reader; `journal_size_limit` trims the file once the WAL restarts.
 */
function checkpointPassive(state: State): void {
  state.db.prepare('PRAGMA wal_checkpoint(PASSIVE)').get();
}

export default defineActor({
  name: 'store-maintenance',
  config: StoreMaintenanceConfig,
  messages: Msg,
  init(config, ctx) {
    const db = openSlice(config);
    ctx.defer(() => {
      db.close();
    });
    ctx.schedule({ type: 'store-maintenance.tick' }, config.intervalMs);
    ctx.schedule({ type: 'store-maintenance.checkpoint-tick' }, config.checkpointCheckMs);
    return { db, config, remote: /^(libsql|https?):/i.test(config.database) } satisfies State;
  },
  handle(state, msg, ctx) {
    if (msg.type === 'store-maintenance.checkpoint-tick') {
      if (!state.remote) checkpointPassive(state);
      ctx.schedule({ type: 'store-maintenance.checkpoint-tick' }, state.config.checkpointCheckMs);
      return undefined;
    }
    const report = maintain(state);
    if (msg.type === 'store-maintenance.tick') {
      ctx.log.debug({ event: 'store.maintained', ...report }, 'store.maintained');
      ctx.schedule({ type: 'store-maintenance.tick' }, state.config.intervalMs);
      return undefined;
    }
    return report;
  },
});
