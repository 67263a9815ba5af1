/**
 * The outbox's retention prune (docs/sending.md "Retention"): on a timer,
 * ended sends and deleted drafts past `Outbox:Retention` are erased in
 * bounded steps of PRUNE_ROWS rows, one transaction each
 * (runtime/store/outbox/retention.ts). A step that found a full batch
 * schedules the next one at once, as a message, so the sends, drafts and
 * operator decisions queued meanwhile are answered between steps and the
 * writer is never held for more than one step. A sweep that erased
 * anything is logged once with its counts (never a recipient or subject).
 */
import { z } from 'zod';
import type { ActorContext } from '../../runtime/actor.ts';
import { eraseDeletedDrafts, eraseEndedSends } from '../../runtime/store/outbox/retention.ts';
import type { OutboxState } from './actor.ts';

export const PruneTick = z.strictObject({ type: z.literal('outbox.prune') });

/** Rows one step erases at most: each a blob rewritten and its recipients' rows, well under a second on a slow disk. */
export const PRUNE_ROWS = 200;
/** Between sweeps. Retention is counted in days; an hour's lateness is nothing beside it. */
export const PRUNE_INTERVAL_MS = 10 * 60_000;
/** The first sweep after start, once the delivery loop has had its first tick. */
export const PRUNE_START_MS = 1_000;

export type Pruning = { timer: { cancel(): void } | null; sends: number; drafts: number };

export function schedulePrune(state: OutboxState, ctx: ActorContext, delayMs: number): void {
  state.pruning.timer?.cancel();
  state.pruning.timer = ctx.schedule({ type: 'outbox.prune' }, delayMs);
}

/** One step of the sweep; the next is scheduled at once while steps come back full, else after the interval. */
export function pruneStep(state: OutboxState, ctx: ActorContext): void {
  state.pruning.timer = null;
  if (state.closed || state.stopping) return;
  const now = Date.now();
  const { endedSendsMs, deletedDraftsMs } = state.config.retention;
  const sends = eraseEndedSends(state.db, now - endedSendsMs, PRUNE_ROWS, now);
  const drafts = eraseDeletedDrafts(state.db, now - deletedDraftsMs, PRUNE_ROWS, now);
  state.pruning.sends += sends;
  state.pruning.drafts += drafts;
  if (sends === PRUNE_ROWS || drafts === PRUNE_ROWS) return schedulePrune(state, ctx, 0);
  if (state.pruning.sends + state.pruning.drafts > 0) {
    ctx.log.info({ event: 'outbox.pruned', sends: state.pruning.sends, drafts: state.pruning.drafts }, 'outbox.pruned');
  }
  state.pruning.sends = 0;
  state.pruning.drafts = 0;
  schedulePrune(state, ctx, PRUNE_INTERVAL_MS);
}
