/**
 * The concurrency limiter of one surface, shared by all its callers (.NET
 * `ConcurrencyLimiter`, oldest first): `MaxConcurrentRequests` permits;
 * when none is free a request waits in a FIFO queue of at most
 * `ConcurrencyQueueLimit`, and beyond that it is refused at once. A released
 * permit passes straight to the oldest waiter, so a newcomer never overtakes
 * the queue. Releasing a permit twice is harmless (a request that ends and
 * times out at the same moment releases from both paths).
 *
 * Imported by http/limits/rate-limiter.ts (and tests).
 */

export type ConcurrencySettings = {
  readonly MaxConcurrentRequests: number;
  readonly ConcurrencyQueueLimit: number;
};

export type Permit = { release(): void };

export type ConcurrencyTake =
  | { readonly kind: 'granted'; readonly permit: Permit }
  | { readonly kind: 'refused' }
  /** Resolves to the permit, or null when the signal aborted while waiting. */
  | { readonly kind: 'queued'; readonly permit: Promise<Permit | null> };

export type ConcurrencyLimiter = {
  take(signal?: AbortSignal): ConcurrencyTake;
  /** Permits held now (tests, diagnostics). */
  inUse(): number;
  /** Requests waiting now (tests, diagnostics). */
  waiting(): number;
};

type Waiter = { readonly resolve: (permit: Permit | null) => void; readonly signal: AbortSignal | undefined; readonly onAbort: () => void };

export function createConcurrencyLimiter(settings: ConcurrencySettings): ConcurrencyLimiter {
  const limit = settings.MaxConcurrentRequests;
  if (!(limit >= 1 && settings.ConcurrencyQueueLimit >= 0)) throw new RangeError('concurrency settings out of range');
  let held = 0;
  const queue: Waiter[] = [];

  const handOver = (): void => {
    const waiter = queue.shift();
    if (waiter === undefined) {
      held -= 1;
      return;
    }
    // The permit moves to the oldest waiter without ever being free.
    waiter.signal?.removeEventListener('abort', waiter.onAbort);
    waiter.resolve(newPermit());
  };

  const newPermit = (): Permit => {
    let released = false;
    return {
      release() {
        if (released) return;
        released = true;
        handOver();
      },
    };
  };

  return {
    take(signal) {
      if (held < limit && queue.length === 0) {
        held += 1;
        return { kind: 'granted', permit: newPermit() };
      }
      if (queue.length >= settings.ConcurrencyQueueLimit) return { kind: 'refused' };
      if (signal?.aborted === true) return { kind: 'queued', permit: Promise.resolve(null) };
      const permit = new Promise<Permit | null>((resolve) => {
        const onAbort = (): void => {
          const at = queue.indexOf(waiter);
          if (at < 0) return;
          queue.splice(at, 1);
          resolve(null);
        };
        const waiter: Waiter = { resolve, signal, onAbort };
        queue.push(waiter);
        signal?.addEventListener('abort', onAbort, { once: true });
      });
      return { kind: 'queued', permit };
    },
    inUse: () => held,
    waiting: () => queue.length,
  };
}
