/**
 * A limiter clock that only moves when told to, firing the timers that fall
 * due on the way, in order (tests of http/limits/).
 */
import type { LimiterClock } from '../../../http/limits/clock.ts';

export type FakeLimiterClock = LimiterClock & {
  /** Moves time forward, running each timer at its due instant; then lets awaiting code run. */
  advance(ms: number): Promise<void>;
  pending(): number;
};

export function fakeLimiterClock(start = 1_000_000): FakeLimiterClock {
  let now = start;
  let seq = 0;
  const timers = new Map<number, { at: number; run: () => void }>();
  const settle = async (): Promise<void> => {
    for (let i = 0; i < 10; i += 1) await Promise.resolve();
  };
  return {
    now: () => now,
    schedule(run, delayMs) {
      seq += 1;
      const id = seq;
      timers.set(id, { at: now + Math.max(0, delayMs), run });
      return () => {
        timers.delete(id);
      };
    },
    async advance(ms) {
      const until = now + ms;
      for (;;) {
        let next: [number, { at: number; run: () => void }] | undefined;
        for (const entry of timers) if (entry[1].at <= until && (next === undefined || entry[1].at < next[1].at)) next = entry;
        if (next === undefined) break;
        timers.delete(next[0]);
        now = next[1].at;
        next[1].run();
        await settle();
      }
      now = until;
      await settle();
    },
    pending: () => timers.size,
  };
}
