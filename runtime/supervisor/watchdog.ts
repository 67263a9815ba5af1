/**
 * Liveness of host threads. Each host sends a heartbeat every `heartbeatMs`
 * from its own event loop; a loop blocked by a synchronous query or a busy
 * loop stops sending. Missing `missedBeats` in a row is a hang: the
 * supervisor terminates the thread and restarts its actors. Pure.
 */
import { z } from 'zod';

export const WatchdogPolicy = z.strictObject({
  heartbeatMs: z.number().int().positive().default(5_000),
  missedBeats: z.number().int().min(2).default(3),
});
export type WatchdogPolicy = z.output<typeof WatchdogPolicy>;

export function isHung(policy: WatchdogPolicy, lastHeartbeat: number, now: number): boolean {
  return now - lastHeartbeat > policy.heartbeatMs * policy.missedBeats;
}
