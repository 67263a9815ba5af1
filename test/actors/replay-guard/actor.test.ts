/**
 * The replay guard: one-statement claims on `assertion_replays`, pruning of
 * expired identifiers (at start and on its timer), and the actor on a real
 * host thread under the supervisor, started from the child spec that
 * service/system-children.ts uses; a served identifier stays refused across
 * a restart of the whole tree on the same database file.
 */
import { join } from 'node:path';
import t, { type Test } from 'tap';
import replayGuard from '../../../actors/replay-guard/actor.ts';
import { REPLAY_GUARD_ID, replayClaimer, replayGuardChild } from '../../../actors/replay-guard/protocol.ts';
import { replayStatements } from '../../../actors/replay-guard/replays.ts';
import type { ActorContext } from '../../../runtime/actor.ts';
import { AppError } from '../../../runtime/errors.ts';
import { migrate } from '../../../runtime/store/migrate.ts';
import { openStore, type Database } from '../../../runtime/store/open.ts';
import { many } from '../../../runtime/store/rows.ts';
import type { StoreSlice } from '../../../runtime/store/store-slice.ts';
import { Supervisor } from '../../../runtime/supervisor/supervisor.ts';
import { tempDir } from '../../helpers/daemon.ts';
import { captureLog } from '../../helpers/log-capture.ts';

function database(t: Test): { slice: StoreSlice; open: () => Database } {
  const slice: StoreSlice = { database: join(tempDir(t), 'mailcairn.db'), busyTimeoutMs: 5_000, synchronous: 'Normal' };
  const open = (): Database => {
    const db = openStore(slice);
    t.teardown(() => db.close());
    return db;
  };
  migrate(open());
  return { slice, open };
}

function rows(db: Database): Array<{ jti: string; expires_at: number }> {
  return many(db.prepare('SELECT jti, expires_at FROM assertion_replays ORDER BY jti'));
}

t.test('a claim is fresh once; pruning forgets only what has expired', async (t) => {
  const { open } = database(t);
  const db = open();
  const replays = replayStatements(db);
  t.equal(replays.claim('a', 1_000), true);
  t.equal(replays.claim('a', 1_000), false, 'the same identifier again');
  t.equal(replays.claim('a', 9_000), false, 'whatever expiry it is presented with');
  t.equal(replays.claim('b', 2_000), true);
  t.equal(replayStatements(open()).claim('b', 2_000), false, 'another connection to the same file sees it');
  t.same(
    rows(db),
    [
      { jti: 'a', expires_at: 1_000 },
      { jti: 'b', expires_at: 2_000 },
    ],
    'the first expiry is kept',
  );
  t.equal(replays.prune(999), 0);
  t.equal(replays.prune(1_000), 1, 'an identifier whose assertion expired at this instant goes');
  t.same(rows(db), [{ jti: 'b', expires_at: 2_000 }]);
  t.equal(replays.claim('a', 5_000), true, 'once pruned (its assertion refused as expired anyway) it may be stored again');
});

t.test('the actor prunes at start and on its timer, and answers claims', async (t) => {
  const { slice, open } = database(t);
  const db = open();
  const now = Date.now();
  replayStatements(db).claim('old', now - 1);
  replayStatements(db).claim('live', now + 60_000);
  const scheduled: Array<{ msg: unknown; delayMs: number }> = [];
  const cleanups: Array<() => void | Promise<void>> = [];
  const capture = captureLog();
  const ctx = {
    actorId: REPLAY_GUARD_ID,
    log: capture.log,
    deadline: null,
    meta: undefined,
    tell: () => {},
    ask: () => Promise.reject(new Error('unused')),
    schedule: (msg: unknown, delayMs: number) => {
      scheduled.push({ msg, delayMs });
      return { cancel: () => {} };
    },
    defer: (cleanup: () => void | Promise<void>) => void cleanups.push(cleanup),
    stopSelf: () => {},
  } satisfies ActorContext;
  const state = await replayGuard.init(replayGuard.config.parse({ ...slice, pruneIntervalMs: 30_000 }), ctx);
  t.same(
    rows(db).map((r) => r.jti),
    ['live'],
    'expired rows pruned at start',
  );
  t.same(scheduled, [{ msg: { type: 'replay-guard.prune-tick' }, delayMs: 30_000 }]);
  t.same(await replayGuard.handle(state, { type: 'replay-guard.claim', jti: 'new', expiresAt: Date.now() + 50 }, ctx), { fresh: true });
  t.same(await replayGuard.handle(state, { type: 'replay-guard.claim', jti: 'live', expiresAt: now + 60_000 }, ctx), { fresh: false });
  await new Promise((resolve) => setTimeout(resolve, 60));
  t.equal(await replayGuard.handle(state, replayGuard.messages.parse({ type: 'replay-guard.prune-tick' }), ctx), undefined);
  t.same(
    rows(db).map((r) => r.jti),
    ['live'],
    'the tick pruned the expired claim',
  );
  t.equal(scheduled.length, 2, 'and scheduled the next tick');
  t.equal(capture.events('replay-guard.pruned')[0]?.pruned, 1);
  t.notOk(capture.raw().includes('"new"'), 'no identifier is logged');
  t.notOk(replayGuard.messages.safeParse({ type: 'replay-guard.claim', jti: '', expiresAt: 1 }).success, 'an empty identifier is not a message');
  t.notOk(replayGuard.messages.safeParse({ type: 'replay-guard.claim', jti: 'x', expiresAt: 1.5 }).success, 'expiry is whole milliseconds');
  for (const cleanup of cleanups.reverse()) await cleanup();
});

t.test('on a real thread from its child spec; a restart of the tree keeps what was served', async (t) => {
  const { slice } = database(t);
  const expiresAt = Date.now() + 120_000;
  const spec = replayGuardChild(slice);
  t.match(spec, { id: 'replay-guard', restart: 'permanent', config: { ...slice, pruneIntervalMs: 60_000 } });

  const first = new Supervisor({ log: captureLog().log });
  await first.start([spec]);
  const claim = replayClaimer(first.ref(REPLAY_GUARD_ID));
  t.equal(await claim('jti-one-0123456789abcdef', expiresAt), true);
  t.equal(await claim('jti-one-0123456789abcdef', expiresAt), false);
  const invalid = await first
    .ref(REPLAY_GUARD_ID)
    // @ts-expect-error a claim without its expiry: the type refuses it too, and the actor must when it arrives anyway
    .ask({ type: 'replay-guard.claim', jti: 'x' })
    .catch((err: unknown) => err);
  t.ok(invalid instanceof AppError && invalid.code === 'E_PROTOCOL_INVALID', 'a malformed claim is refused as a reply, the actor keeps running');
  t.equal(await claim('jti-two-0123456789abcdef', expiresAt), true);
  await first.stop(5_000);

  const second = new Supervisor({ log: captureLog().log });
  t.teardown(() => second.stop(5_000));
  await second.start([replayGuardChild(slice)]);
  const again = replayClaimer(second.ref(REPLAY_GUARD_ID));
  t.equal(await again('jti-one-0123456789abcdef', expiresAt), false, 'still refused after the restart');
  t.equal(await again('jti-two-0123456789abcdef', expiresAt), false);
  t.equal(await again('jti-three-0123456789abcd', expiresAt), true);
});

t.test('a claim against a stopped guard rejects (the judge fails closed)', async (t) => {
  const { slice } = database(t);
  const supervisor = new Supervisor({ log: captureLog().log });
  await supervisor.start([replayGuardChild(slice)]);
  const claim = replayClaimer(supervisor.ref(REPLAY_GUARD_ID), 2_000);
  await supervisor.stop(5_000);
  await t.rejects(claim('jti-after-stop-0123456789', Date.now() + 60_000), { code: /^E_ACTOR_/ });
});
