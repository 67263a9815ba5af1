/**
 * Time for the limiters: a reading of now and a one-shot timer, so that
 * token replenishment and queue service run under a fake clock in tests.
 * The only timer a limiter sets is one per token bucket whose queue holds a
 * waiting request; an idle bucket has none (replenishment is computed from
 * elapsed periods when the bucket is next read).
 *
 * Imported by http/limits/ only (and by tests).
 */
export type LimiterClock = {
  now(): number;
  /** Runs `run` once after `delayMs`; the returned function cancels it (idempotent). */
  schedule(run: () => void, delayMs: number): () => void;
};

export const systemLimiterClock: LimiterClock = {
  now: () => Date.now(),
  schedule(run, delayMs) {
    const timer = setTimeout(run, Math.max(0, delayMs));
    return () => clearTimeout(timer);
  },
};
