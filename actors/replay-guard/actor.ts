/**
 * The replay guard: remembers the `jti` of every client assertion served
 * until that assertion expires, so a replayed assertion is refused, across
 * restarts too (the rows are in the database, not in memory). Sole writer of
 * `assertion_replays` (replays.ts); prunes expired rows at start and on a
 * timer. Public messages are in protocol.ts.
 */
import { z } from 'zod';
import { defineActor } from '../../runtime/actor.ts';
import { openSlice } from '../../runtime/store/open-slice.ts';
import { ReplayClaim, type ReplayClaimReply, ReplayGuardConfig } from './protocol.ts';
import { replayStatements, type ReplayStatements } from './replays.ts';

const PruneTick = z.strictObject({ type: z.literal('replay-guard.prune-tick') });
const Msg = z.discriminatedUnion('type', [ReplayClaim, PruneTick]);

type State = { statements: ReplayStatements; pruneIntervalMs: number };

export default defineActor({
  name: 'replay-guard',
  config: ReplayGuardConfig,
  messages: Msg,
  init(config, ctx) {
    // Checkpoints are the store maintenance actor's, so a claim never waits on copying the WAL back.
    const db = openSlice(config, { checkpoints: 'background' });
    ctx.defer(() => {
      db.close();
    });
    const statements = replayStatements(db);
    statements.prune(Date.now());
    ctx.schedule({ type: 'replay-guard.prune-tick' }, config.pruneIntervalMs);
    return { statements, pruneIntervalMs: config.pruneIntervalMs } satisfies State;
  },
  handle(state, msg, ctx) {
    if (msg.type === 'replay-guard.prune-tick') {
      const pruned = state.statements.prune(Date.now());
      if (pruned > 0) ctx.log.debug({ event: 'replay-guard.pruned', pruned }, 'replay-guard.pruned');
      ctx.schedule({ type: 'replay-guard.prune-tick' }, state.pruneIntervalMs);
      return undefined;
    }
    return { fresh: state.statements.claim(msg.jti, msg.expiresAt) } satisfies ReplayClaimReply;
  },
});
