/**
 * The embedding actor (`embedding`): one per deployment, on a thread of its
 * own (the local model computes there). It holds the declared provider, and
 * it alone writes embedding generations and passage vectors. This file
 * dispatches its messages; the work is in modules named for their concern:
 *
 * - generations.ts: the serving and building generations, and promotion;
 * - activation.ts: the operator's forecast, activation and cancellation;
 * - passes.ts: embedding work in bounded passes, and when the next one runs;
 * - spend.ts: the characters ledger, spent before anything is sent;
 * - endpoints.ts: how each generation's provider is reached, built once;
 * - query-placement.ts: a search query placed by the serving generation;
 * - status.ts: the status an operator reads.
 *
 * A pass and a query placement are answered with `later()`, so asks (status,
 * query placement) are answered while a pass runs, and a defect in a pass
 * crashes the actor for its supervisor to restart.
 *
 * No log line carries passage text, the query or a subject.
 */
import { z } from 'zod';
import { defineActor, later } from '../../runtime/actor.ts';
import { openSlice } from '../../runtime/store/open-slice.ts';
import { activate, cancelReindex, forecast } from './activation.ts';
import { providerFor, targets } from './endpoints.ts';
import { arrivalsDerived, pass } from './passes.ts';
import { EmbeddingConfig, EmbeddingMessage } from './protocol.ts';
import { placeQuery, readiness } from './query-placement.ts';
import { initialState } from './state.ts';
import { status } from './status.ts';

// Private: the timer of the next pass.
const Pass = z.strictObject({ type: z.literal('embedding.pass') });
const Msg = z.discriminatedUnion('type', [...EmbeddingMessage.options, Pass]);
type Msg = z.infer<typeof Msg>;

export default defineActor({
  name: 'embedding',
  config: EmbeddingConfig,
  messages: Msg,
  init(config, ctx) {
    const db = openSlice(config.store, { checkpoints: 'background' });
    const state = initialState(config, db);
    ctx.defer(async () => {
      state.abort.abort();
      state.timer?.cancel();
      await Promise.all([...state.built.values()].map((p) => p.close()));
      db.close();
    });
    // Nothing to do until an activation; otherwise resume (the first pass waits a turn, so "just started" shows no next pass).
    const work = targets(state);
    // The serving provider is built at once, so the first search after a restart does not wait for it.
    for (const { endpoint } of work) void providerFor(state, ctx, endpoint).catch(() => undefined);
    if (work.length > 0 && config.backfill.enabled) state.timer = ctx.schedule({ type: 'embedding.pass' }, 0);
    if (config.declared !== null) void providerFor(state, ctx, config.declared).catch(() => undefined);
    return state;
  },
  handle(state, msg: Msg, ctx) {
    switch (msg.type) {
      case 'embedding.status':
        return status(state);
      case 'embedding.readiness':
        return readiness(state);
      case 'embedding.forecast':
        return forecast(state);
      case 'embedding.activate':
        return activate(state, ctx);
      case 'embedding.cancel-reindex':
        return cancelReindex(state, ctx);
      case 'embedding.place-query':
        return later(placeQuery(state, ctx, msg.text));
      case 'embedding.derived':
        arrivalsDerived(state, ctx);
        return undefined;
      case 'embedding.pass':
        return later(pass(state, ctx));
    }
  },
  stop(state) {
    state.abort.abort();
    state.timer?.cancel();
  },
});
