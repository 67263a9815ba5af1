/**
 * The synchronization scheduler: gives accounts their runs within the
 * `MaxConcurrentAccounts` slots, on the interval, sooner when the account's
 * watch saw the server change (a wake during a run makes the account due
 * again when the run ends), later after failures (schedule.ts), and answers the synchronization
 * status. It asks each account's sync actor to run; an account whose actor
 * is down counts as a failed run, so a crashed actor never holds a slot.
 */
import { z } from 'zod';
import { defineActor, type ActorContext } from '../../runtime/actor.ts';
import { mathRandom } from '../../runtime/clock.ts';
import { AppError } from '../../runtime/errors.ts';
import { synchronizationStatus } from '../../runtime/store/mailbox/status.ts';
import type { Database } from '../../runtime/store/open.ts';
import { openSlice } from '../../runtime/store/open-slice.ts';
import { RunSummary, syncActorId } from '../imap-sync/protocol.ts';
import { SchedulerConfig, SchedulerMessage } from './protocol.ts';
import { Schedule, type RunEnd } from './schedule.ts';

const Tick = z.strictObject({ type: z.literal('sync-scheduler.tick') });
const Ended = z.strictObject({ type: z.literal('sync-scheduler.ended'), account: z.string(), end: z.string(), hasMore: z.boolean() });
const Msg = z.union([SchedulerMessage, Tick, Ended]);

type State = { db: Database; config: SchedulerConfig; schedule: Schedule; timer: { cancel(): void } | null; bootAt: number };

function pump(state: State, ctx: ActorContext): void {
  const now = Date.now();
  for (const account of state.schedule.start(now)) {
    ctx.ask(syncActorId(account), { type: 'imap-sync.run' }, { deadlineMs: state.config.runDeadlineMs, reply: RunSummary }).then(
      (summary) => {
        const end = summary.waitsFor === 'storage' ? 'storage-full' : summary.outcome;
        ctx.schedule({ type: 'sync-scheduler.ended', account, end, hasMore: summary.hasMore }, 0);
      },
      (err: unknown) => {
        const reason = err instanceof AppError ? err.code : 'E_INTERNAL';
        ctx.log.warn({ event: 'sync.run-refused', account, reason }, 'sync.run-refused');
        ctx.schedule({ type: 'sync-scheduler.ended', account, end: reason === 'E_STORE_FULL' ? 'storage-full' : 'down', hasMore: false }, 0);
      },
    );
  }
  state.timer?.cancel();
  state.timer = null;
  const next = state.schedule.nextDueAt();
  if (next !== null) state.timer = ctx.schedule({ type: 'sync-scheduler.tick' }, Math.max(0, next - Date.now()));
}

export default defineActor({
  name: 'sync-scheduler',
  config: SchedulerConfig,
  messages: Msg,
  init(config, ctx) {
    const db = openSlice(config.store);
    ctx.defer(() => {
      db.close();
    });
    const policy = {
      maxConcurrent: config.maxConcurrent,
      intervalMs: config.intervalMs,
      backoffInitialMs: config.backoffInitialMs,
      backoffMaxMs: config.backoffMaxMs,
      jitter: 0.2,
    };
    const state: State = {
      db,
      config,
      schedule: new Schedule(config.accounts, policy, mathRandom, Date.now(), config.enabled),
      timer: null,
      bootAt: Date.now(),
    };
    if (config.enabled) ctx.schedule({ type: 'sync-scheduler.tick' }, 0);
    return state;
  },
  handle(state, msg, ctx) {
    switch (msg.type) {
      case 'sync-scheduler.tick':
        return pump(state, ctx);
      case 'sync-scheduler.ended':
        state.schedule.ended(msg.account, msg.end as RunEnd, msg.hasMore, Date.now());
        return pump(state, ctx);
      case 'sync-scheduler.wake':
        state.schedule.wake(msg.account, Date.now());
        return pump(state, ctx);
      case 'sync-scheduler.status':
        return synchronizationStatus(state.db, {
          enabled: state.config.enabled,
          since: state.bootAt,
          now: Date.now(),
          accounts: state.schedule.list().map((a) => ({
            id: a.account,
            phase: a.phase,
            nextRunDueAt: a.phase === 'waiting' ? a.nextDueAt : null,
            consecutiveFailureCount: a.consecutiveFailures,
          })),
        });
    }
  },
});
