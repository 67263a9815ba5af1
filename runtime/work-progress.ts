/**
 * Progress of long work over stored mail (docs/admin-api.md "Progress"):
 * one shape for every answer that reports it (a folder's first mirror, an
 * embedding generation's backfill; the client builds it for a folder
 * erasure; rule and spam runs report through it when they come), so the
 * client draws them all alike. Counts and a rate only: it names no mail.
 *
 * The rate is measured, never guessed: from spans of work that was done
 * (`Span`: how many emails between two instants), over the last
 * RATE_WINDOW_MS. A span reaching back past the window counts for the part
 * inside it. Too little measured (nothing in the window, or less than
 * MIN_MEASURED_MS of it) reads as no rate rather than a wild one, and with
 * no rate there is no estimate.
 *
 * Importable from anywhere (protocols included: it loads only zod).
 */
import { z } from 'zod';

/** How far back the rate looks: long enough to smooth batch by batch steps, short enough to follow a change of pace. */
export const RATE_WINDOW_MS = 30_000;

/** Less measured time than this gives no rate (one batch is no pace). */
const MIN_MEASURED_MS = 1_000;

const Count = z.number().int().nonnegative();

export const WorkProgress = z.strictObject({
  completedEmailCount: Count.describe('Emails the work has done so far (mirrored, embedded, erased, classified, per the answer it is in)'),
  totalEmailCount: Count.nullable().describe('Emails the work covers as now known; null while unknown (a folder not selected yet)'),
  emailsPerSecond: z
    .number()
    .nonnegative()
    .nullable()
    .describe('Emails done per second over the last 30 seconds, from when the work was recorded as done; null: too little measured'),
  secondsLeft: Count.nullable().describe('Estimate of the time left at that rate; 0 when nothing is left; null without a rate or a total'),
});
export type WorkProgress = z.infer<typeof WorkProgress>;

/** `count` emails done between `from` and `to` (epoch ms). */
export type Span = { from: number; to: number; count: number };

/** Emails per second over the window before `now`, or null when too little of it was measured. */
export function ratePerSecond(spans: Iterable<Span>, now: number, windowMs = RATE_WINDOW_MS): number | null {
  const windowStart = now - windowMs;
  let done = 0;
  let earliest = Number.POSITIVE_INFINITY;
  for (const span of spans) {
    const to = Math.min(span.to, now);
    if (to <= windowStart || span.to <= span.from) continue;
    const from = Math.max(span.from, windowStart);
    done += (span.count * (to - from)) / (span.to - span.from);
    earliest = Math.min(earliest, from);
  }
  const measured = now - earliest;
  if (!Number.isFinite(measured) || measured < MIN_MEASURED_MS) return null;
  return done / (measured / 1000);
}

/**
 * Spans from instants at which batches were recorded done (`at`, `count`
 * each, oldest first): batch i covers the time since batch i − 1. The first
 * batch has no known start, so it only opens the first span.
 */
export function spansBetween(batches: ReadonlyArray<{ at: number; count: number }>): Span[] {
  const spans: Span[] = [];
  for (let i = 1; i < batches.length; i += 1) spans.push({ from: batches[i - 1]!.at, to: batches[i]!.at, count: batches[i]!.count });
  return spans;
}

/** The answer's figures: the rate to one decimal, the estimate in whole seconds (rounded up). */
export function workProgress(completed: number, total: number | null, perSecond: number | null): WorkProgress {
  const left = total === null ? null : Math.max(0, total - completed);
  const rate = perSecond === null ? null : Math.round(perSecond * 10) / 10;
  return {
    completedEmailCount: completed,
    totalEmailCount: total,
    emailsPerSecond: rate,
    secondsLeft: left === 0 ? 0 : left === null || perSecond === null || perSecond <= 0 ? null : Math.ceil(left / perSecond),
  };
}

/**
 * The recent spans of one piece of work, kept by whoever does it (the
 * embedding actor per generation): bounded in time and in length.
 */
export class RecentWork {
  private spans: Span[] = [];
  private readonly windowMs: number;

  constructor(windowMs = RATE_WINDOW_MS) {
    this.windowMs = windowMs;
  }

  add(span: Span): void {
    if (span.count <= 0 || span.to <= span.from) return;
    this.spans.push(span);
    // Only the window is ever read; 256 spans in 30 s is one every ~120 ms, finer than any batch.
    const keepFrom = span.to - this.windowMs;
    this.spans = this.spans.filter((s) => s.to > keepFrom).slice(-256);
  }

  perSecond(now: number): number | null {
    return ratePerSecond(this.spans, now, this.windowMs);
  }
}
