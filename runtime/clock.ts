/**
 * Time and randomness as injectable values, so the supervisor's timing maths
 * (backoff, intensity, watchdog) is pure and tests drive it with a fake clock
 * and a seeded random source. Importable from anywhere.
 */
export type Clock = { now(): number };
export type Random = { next(): number };

export const systemClock: Clock = { now: () => Date.now() };
export const mathRandom: Random = { next: () => Math.random() };

/** A clock that only moves when told to (tests). */
export function fakeClock(start = 0): Clock & { advance(ms: number): void; set(ms: number): void } {
  let t = start;
  return {
    now: () => t,
    advance: (ms: number) => {
      t += ms;
    },
    set: (ms: number) => {
      t = ms;
    },
  };
}

/** Deterministic random numbers in [0, 1) (mulberry32), for tests and generators. */
export function seededRandom(seed: number): Random {
  let a = seed >>> 0;
  return {
    next: () => {
      a = (a + 0x6d2b79f5) >>> 0;
      let x = a;
      x = Math.imul(x ^ (x >>> 15), x | 1);
      x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
      return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
    },
  };
}
