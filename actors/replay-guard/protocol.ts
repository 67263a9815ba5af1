/**
 * Public surface of the replay guard (`replay-guard`), the sole writer of
 * `assertion_replays`: its configuration slice, the one command others send,
 * its reply, the child spec that starts it, and the claim function the
 * credential judge is handed (http/auth/client-assertion.ts `ClaimJti`).
 *
 * `replay-guard.claim {jti, expiresAt}` answers `{fresh}`: true when the
 * identifier had not been served and is now stored until `expiresAt` (epoch
 * ms), false when it was already there. Expired rows are pruned on a timer.
 *
 * Everything outside this folder imports this file only.
 */
import { z } from 'zod';
import type { ActorId, Askable, ProtocolOf } from '../../runtime/ref.ts';
import { moduleUrl } from '../../runtime/module-url.ts';
import { StoreSlice } from '../../runtime/store/store-slice.ts';
import type { ChildSpecInput } from '../../runtime/supervisor/child-spec.ts';

export const REPLAY_GUARD_ID: ActorId<ReplayGuardProtocol> = 'replay-guard';

/** How often expired identifiers are deleted; an assertion lives five minutes at most. */
export const REPLAY_PRUNE_INTERVAL_MS = 60_000;

/** Deadline of a claim asked from the HTTP edge: one indexed insert, so a slow answer means trouble. */
export const REPLAY_CLAIM_DEADLINE_MS = 5_000;

export const ReplayGuardConfig = StoreSlice.extend({
  pruneIntervalMs: z.number().int().positive(),
});
export type ReplayGuardConfig = z.infer<typeof ReplayGuardConfig>;

export const ReplayClaim = z.strictObject({
  type: z.literal('replay-guard.claim'),
  jti: z.string().min(1).max(256),
  /** Epoch ms after which the assertion carrying `jti` is refused anyway. */
  expiresAt: z.number().int().nonnegative(),
});
export type ReplayClaim = z.infer<typeof ReplayClaim>;

export const ReplayClaimReply = z.strictObject({ fresh: z.boolean() });
export type ReplayClaimReply = z.infer<typeof ReplayClaimReply>;

export type ReplayGuardProtocol = ProtocolOf<z.input<typeof ReplayClaim>, { 'replay-guard.claim': ReplayClaimReply }>;

/**
 * The child spec of the replay guard, for service/system-children.ts.
 * Permanent: while it is down every assertion is refused (the judge fails
 * closed), so it is always restarted.
 */
export function replayGuardChild(store: StoreSlice, pruneIntervalMs: number = REPLAY_PRUNE_INTERVAL_MS): ChildSpecInput {
  return {
    id: REPLAY_GUARD_ID,
    entry: moduleUrl('./actor.ts', import.meta.url),
    restart: 'permanent',
    shutdownMs: 2_000,
    placement: { kind: 'shared', group: 'system', actorsPerThread: 10 },
    config: { ...store, pruneIntervalMs } satisfies ReplayGuardConfig,
  };
}

/**
 * The `claimJti` of the assertion judge, asking the replay guard behind
 * `guard` (`supervisor.ref(REPLAY_GUARD_ID)`). Rejects (E_ACTOR_DOWN,
 * E_ACTOR_TIMEOUT, ...) when the guard cannot answer; the judge then rejects
 * and the caller refuses the request.
 */
export function replayClaimer(
  guard: Askable<ReplayGuardProtocol>,
  deadlineMs: number = REPLAY_CLAIM_DEADLINE_MS,
): (jti: string, expiresAt: number) => Promise<boolean> {
  return async (jti, expiresAt) => {
    const reply = await guard.ask({ type: 'replay-guard.claim', jti, expiresAt }, { deadlineMs, reply: ReplayClaimReply });
    return reply.fresh;
  };
}
