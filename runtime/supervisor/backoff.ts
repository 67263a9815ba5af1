/**
 * Restart delay maths: exponential growth with jitter, reset only after
 * proven uptime. Pure: the consumers own the timers. (A server that drops
 * connections right after a successful setup looped at ~17 logins per second
 * in another mail system because its backoff reset on setup; uptime is the
 * only proof of health we accept.)
 */
import { z } from 'zod';
import type { Random } from '../clock.ts';

export const BackoffPolicy = z.strictObject({
  baseMs: z.number().int().positive().default(1_000),
  factor: z.number().min(1).default(2),
  maxMs: z.number().int().positive().default(60_000),
  /** Fraction of the delay added or removed at random, 0 to 1. */
  jitter: z.number().min(0).max(1).default(0.2),
  /** A child up at least this long before it ended starts again from `baseMs`. */
  stableAfterMs: z.number().int().nonnegative().default(60_000),
});
export type BackoffPolicy = z.output<typeof BackoffPolicy>;

/** Delay before restart number `attempt` (1 for the first restart). */
export function backoffDelay(policy: BackoffPolicy, attempt: number, random: Random): number {
  const exponent = Math.max(0, attempt - 1);
  const raw = Math.min(policy.maxMs, policy.baseMs * policy.factor ** exponent);
  const spread = raw * policy.jitter;
  const jittered = raw - spread + 2 * spread * random.next();
  return Math.max(0, Math.round(Math.min(policy.maxMs, jittered)));
}

/** Consecutive restarts to count from, given how long the child was up. */
export function attemptAfterExit(policy: BackoffPolicy, previousAttempts: number, uptimeMs: number): number {
  return uptimeMs >= policy.stableAfterMs ? 1 : previousAttempts + 1;
}
