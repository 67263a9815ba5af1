/**
 * One partition's token bucket, with the semantics of .NET's
 * `TokenBucketRateLimiter` (auto-replenishment, oldest-first queue):
 *
 * - the bucket starts full, at `TokenCapacity`;
 * - every whole `ReplenishmentPeriod` since the bucket was made,
 *   `TokensPerReplenishmentPeriod` tokens are added at once, never beyond
 *   `TokenCapacity`. Replenishment is computed from elapsed whole periods
 *   when the bucket is read, not by a timer, so an idle bucket costs nothing;
 * - a request takes one token. When none is left, or requests are already
 *   waiting (first come, first served: a newcomer never overtakes the
 *   queue), it waits in a FIFO queue of at most `RequestQueueLimit`; beyond
 *   that it is refused at once. The wait is bounded: the queue is short and
 *   at least one token arrives every period; an abort signal (client gone,
 *   request timeout) takes a waiter out early;
 * - while the queue is not empty one timer is set for the next period
 *   boundary, which serves waiters in order from the tokens it brings.
 *
 * Imported by http/limits/rate-limiter.ts (and tests).
 */
import type { LimiterClock } from './clock.ts';

export type TokenBucketSettings = {
  readonly TokenCapacity: number;
  readonly TokensPerReplenishmentPeriod: number;
  /** Milliseconds. */
  readonly ReplenishmentPeriod: number;
  readonly RequestQueueLimit: number;
};

export type BucketTake =
  | { readonly kind: 'granted' }
  /** `retryAfterMs` is never below 1000: a Retry-After shorter than a second cannot be written. */
  | { readonly kind: 'refused'; readonly retryAfterMs: number }
  /** Resolves true when a token was taken for the request, false when its signal aborted first. */
  | { readonly kind: 'queued'; readonly granted: Promise<boolean> };

export type TokenBucket = {
  take(signal?: AbortSignal): BucketTake;
  /** Milliseconds until a request arriving now would get a token (queued requests first); at least 1000. */
  retryAfterMs(): number;
  /** Full with nobody waiting: indistinguishable from a new bucket, so it may be dropped. */
  isIdle(): boolean;
  /** Tokens held now (tests, diagnostics). */
  tokens(): number;
};

type Waiter = { readonly resolve: (granted: boolean) => void; readonly signal: AbortSignal | undefined; readonly onAbort: () => void };

export const MIN_RETRY_AFTER_MS = 1_000;

export function createTokenBucket(settings: TokenBucketSettings, clock: LimiterClock): TokenBucket {
  const capacity = settings.TokenCapacity;
  const perPeriod = settings.TokensPerReplenishmentPeriod;
  const period = settings.ReplenishmentPeriod;
  if (!(capacity >= 1 && perPeriod >= 1 && perPeriod <= capacity && period >= 1 && settings.RequestQueueLimit >= 0)) {
    // The configuration checks refuse these values; reaching here is a wiring bug.
    throw new RangeError('token bucket settings out of range');
  }
  let tokens = capacity;
  /** The instant the last replenishment happened (or would have): period boundaries are anchor + k·period. */
  let anchor = clock.now();
  const queue: Waiter[] = [];
  let cancelTimer: (() => void) | null = null;

  const replenish = (): void => {
    const now = clock.now();
    if (now < anchor) {
      // The wall clock stepped back: restart the period here rather than wait out the step.
      anchor = now;
      return;
    }
    const periods = Math.floor((now - anchor) / period);
    if (periods === 0) return;
    anchor += periods * period;
    tokens = Math.min(capacity, tokens + periods * perPeriod);
  };

  const untilNextPeriod = (): number => anchor + period - clock.now();

  /** Hands the tokens held to the waiters, oldest first. */
  const drain = (): void => {
    while (tokens > 0 && queue.length > 0) {
      const waiter = queue.shift()!;
      waiter.signal?.removeEventListener('abort', waiter.onAbort);
      tokens -= 1;
      waiter.resolve(true);
    }
  };

  const serve = (): void => {
    cancelTimer = null;
    replenish();
    drain();
    arm();
  };

  const arm = (): void => {
    if (queue.length === 0) {
      cancelTimer?.();
      cancelTimer = null;
      return;
    }
    if (cancelTimer === null) cancelTimer = clock.schedule(serve, untilNextPeriod());
  };

  const retryAfterMs = (): number => {
    replenish();
    // Tokens still needed for everyone queued plus one more request, in whole periods.
    const needed = queue.length + 1 - tokens;
    if (needed <= 0) return MIN_RETRY_AFTER_MS;
    const periods = Math.ceil(needed / perPeriod);
    return Math.max(MIN_RETRY_AFTER_MS, untilNextPeriod() + (periods - 1) * period);
  };

  return {
    take(signal) {
      replenish();
      // A timer running late must not let a newcomer overtake the queue.
      drain();
      arm();
      if (queue.length === 0 && tokens > 0) {
        tokens -= 1;
        return { kind: 'granted' };
      }
      if (queue.length >= settings.RequestQueueLimit) return { kind: 'refused', retryAfterMs: retryAfterMs() };
      if (signal?.aborted === true) return { kind: 'queued', granted: Promise.resolve(false) };
      const granted = new Promise<boolean>((resolve) => {
        const onAbort = (): void => {
          const at = queue.indexOf(waiter);
          if (at < 0) return;
          queue.splice(at, 1);
          arm();
          resolve(false);
        };
        const waiter: Waiter = { resolve, signal, onAbort };
        queue.push(waiter);
        signal?.addEventListener('abort', onAbort, { once: true });
      });
      arm();
      return { kind: 'queued', granted };
    },
    retryAfterMs,
    isIdle() {
      replenish();
      return queue.length === 0 && tokens === capacity;
    },
    tokens() {
      replenish();
      return tokens;
    },
  };
}
