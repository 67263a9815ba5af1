/**
 * Keeps the database healthy while the service runs for months: every
 * second it copies the WAL back into the database file (PASSIVE: it never
 * waits for a reader or writer; sync actors leave this to it so their
 * commits do not stall), and every interval it also runs `PRAGMA optimize`,
 * which SQLite recommends for long-lived connections. `journal_size_limit`
 * keeps the -wal file from staying large. Writes no table.
 */
import { z } from 'zod';
import { defineActor, type ActorContext } from '../../runtime/actor.ts';
import { AppError } from '../../runtime/errors.ts';
import { isStorageFull, noteStorageFull, noteStorageWritable } from '../../runtime/storage-full.ts';
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

/**
 * Run `work`; a full disk is said once (`store.full`) and waited out, the
 * ticks going on (docs/operations.md "A full disk"). Null when it was full.
 */
function waitingOutFullDisk<T>(ctx: ActorContext, work: () => T): T | null {
  try {
    const result = work();
    noteStorageWritable(ctx.log, PLACE);
    return result;
  } catch (err) {
    if (!isStorageFull(err)) throw err;
    noteStorageFull(ctx.log, PLACE, err);
    return null;
  }
}

const PLACE = 'store-maintenance';

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
      // The next tick is scheduled first: a full disk (a checkpoint grows the database file) must not end the ticks.
      ctx.schedule({ type: 'store-maintenance.checkpoint-tick' }, state.config.checkpointCheckMs);
      if (!state.remote) waitingOutFullDisk(ctx, () => checkpointPassive(state));
      return undefined;
    }
    if (msg.type === 'store-maintenance.tick') {
      ctx.schedule({ type: 'store-maintenance.tick' }, state.config.intervalMs);
      const report = waitingOutFullDisk(ctx, () => maintain(state));
      if (report !== null) ctx.log.debug({ event: 'store.maintained', ...report }, 'store.maintained');
      return undefined;
    }
    const report = waitingOutFullDisk(ctx, () => maintain(state));
    if (report === null) throw new AppError('E_STORE_FULL');
    return report;
  },
});
