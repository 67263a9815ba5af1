/**
 * Restart intensity, as in Erlang/OTP: more than `maxRestarts` restarts of one
 * child within `windowMs` means restarting is not helping; the supervisor
 * gives that child up, marks readiness false and logs it at error. Pure.
 */
import { z } from 'zod';

export const IntensityPolicy = z.strictObject({
  maxRestarts: z.number().int().nonnegative().default(5),
  windowMs: z.number().int().positive().default(60_000),
});
export type IntensityPolicy = z.output<typeof IntensityPolicy>;

export type RestartHistory = readonly number[];

/** Record a restart at `now`; the history keeps only the window. */
export function recordRestart(policy: IntensityPolicy, history: RestartHistory, now: number): RestartHistory {
  return [...history.filter((t) => now - t < policy.windowMs), now];
}

export function exceedsIntensity(policy: IntensityPolicy, history: RestartHistory, now: number): boolean {
  return history.filter((t) => now - t < policy.windowMs).length > policy.maxRestarts;
}
