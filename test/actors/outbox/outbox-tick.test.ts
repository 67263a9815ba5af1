/**
 * The outbox's delivery loop does not spin: the actor's own handlers on a
 * real store with a recording context (nothing scheduled is delivered; the
 * test hands the ticks in). A send already due that no slot can take
 * (every slot busy, or delivery disabled) must not bring the next tick
 * forward, and a send given back because its account has no SMTP server
 * is not claimed again at once. Both were hot loops: a tick at 0 ms after
 * every tick for as long as the condition held (the first found by the
 * outbox benchmark: ~1,400 ticks per send in a burst of 300 sends).
 */
import { createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import outboxActor, { type OutboxState } from '../../../actors/outbox/actor.ts';
import type { OutboxConfig } from '../../../actors/outbox/protocol.ts';
import type { ActorContext } from '../../../runtime/actor.ts';
import { reconcileAccounts } from '../../../runtime/store/accounts.ts';
import { migrate } from '../../../runtime/store/migrate.ts';
import { openStore, type Database } from '../../../runtime/store/open.ts';
import { outgoingById, recordSend } from '../../../runtime/store/outbox/outgoing.ts';
import type { StoreSlice } from '../../../runtime/store/store-slice.ts';
import { tempDir } from '../../helpers/daemon.ts';
import { captureLog, until } from '../../helpers/log-capture.ts';

const IDLE_TICK_MS = 60_000;

/** A server that accepts connections and never greets: an attempt on it stays under way until `hangUp`. */
async function silentServer(t: Test): Promise<{ port: number; hangUp(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((s) => {
    sockets.add(s);
    s.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const destroyAll = (): void => {
    for (const s of sockets) s.destroy();
  };
  const hangUp = async (): Promise<void> => {
    // The attempt's connection may not have been accepted yet.
    await until(() => sockets.size > 0, 5_000, 'the attempt to connect');
    destroyAll();
  };
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        destroyAll();
        server.close(() => resolve());
      }),
  );
  return { port: (server.address() as { port: number }).port, hangUp };
}

type Harness = {
  db: Database;
  state: OutboxState;
  ctx: ActorContext;
  scheduled: Array<{ type: string; delayMs: number }>;
  logs: ReturnType<typeof captureLog>;
  record(key: string): number;
  tick(): Promise<void>;
  /** The delay the latest scheduled tick asked for. */
  lastTickDelay(): number | undefined;
};

async function harness(t: Test, outbox: Partial<OutboxConfig>, smtpPort: number | null): Promise<Harness> {
  const store: StoreSlice = { database: join(tempDir(t), 'mailcairn.db'), busyTimeoutMs: 5_000, synchronous: 'Normal' };
  const db = openStore(store);
  t.teardown(() => db.close());
  migrate(db);
  reconcileAccounts(db, ['ann']);
  const logs = captureLog();
  const scheduled: Array<{ type: string; delayMs: number }> = [];
  const cleanups: Array<() => void | Promise<void>> = [];
  const ctx: ActorContext = {
    actorId: 'outbox',
    log: logs.log,
    deadline: null,
    meta: undefined,
    tell() {},
    ask: () => Promise.reject(new Error('no asks here')),
    schedule(msg, delayMs) {
      scheduled.push({ type: (msg as { type: string }).type, delayMs });
      return { cancel() {} };
    },
    defer(cleanup) {
      cleanups.push(cleanup);
    },
    stopSelf() {},
  };
  const config: OutboxConfig = {
    store,
    enabled: true,
    maxAttempts: 5,
    retryDelayMs: 1_000,
    sendTimeoutMs: 10_000,
    concurrency: 1,
    accounts: [
      {
        id: 'ann',
        address: 'ann@example.org',
        syncActorId: 'imap-sync:ann',
        smtp: smtpPort === null ? null : { host: '127.0.0.1', port: smtpPort, security: 'None', username: 'ann', oauth: false, sentCopy: true },
      },
    ],
    policy: { allowedDomains: [], allowedAddresses: [], deniedDomains: [], deniedAddresses: [], contacts: 'Any' },
    ceilings: { periodMs: 86_400_000, perAccount: null, perCaller: null, perDeployment: null },
    retention: { endedSendsMs: 30 * 86_400_000, deletedDraftsMs: 7 * 86_400_000 },
    ...outbox,
  };
  const state = (await outboxActor.init(config, ctx)) as OutboxState;
  t.teardown(async () => {
    await outboxActor.stop?.(state, ctx);
    for (const c of cleanups.reverse()) await c();
  });
  let n = 0;
  return {
    db,
    state,
    ctx,
    scheduled,
    logs,
    record(key) {
      const result = recordSend(
        db,
        {
          accountId: 'ann',
          requester: 'agent',
          idempotencyKey: key,
          fingerprint: key,
          origin: 'new',
          draftId: null,
          messageId: `<${key}.${++n}@example.org>`,
          envelopeFrom: 'ann@example.org',
          raw: Buffer.from(`Subject: ${key}\r\n\r\nBody.\r\n`),
          recipients: [{ address: 'someone@example.net', header: 'to' }],
          now: Date.now() - 1,
        },
        config.ceilings,
      );
      if (result.outcome !== 'recorded') throw new Error(result.outcome);
      return result.outgoing.id;
    },
    async tick() {
      await outboxActor.handle(state, { type: 'outbox.tick' }, ctx);
    },
    lastTickDelay: () => scheduled.filter((s) => s.type === 'outbox.tick').at(-1)?.delayMs,
  };
}

t.test('a due send waiting for a busy slot does not bring the next tick forward', async (t) => {
  const silent = await silentServer(t);
  const h = await harness(t, { concurrency: 1 }, silent.port);
  const first = h.record('first');
  await h.tick();
  t.same([...h.state.underWay], [first], 'the one slot is taken by an attempt that hangs on the server');
  const second = h.record('second');
  await h.tick();
  t.same([...h.state.underWay], [first], 'the due send waits');
  t.notOk(outgoingById(h.db, second)!.claimed);
  t.equal(h.lastTickDelay(), IDLE_TICK_MS, 'no tick at once: the attempt that ends kicks the loop');
  await silent.hangUp();
  await Promise.all([...h.state.attempts]);
  t.equal(h.lastTickDelay(), 0, 'the attempt that ended kicked it');
});

t.test('with delivery disabled, a due send does not bring the next tick forward', async (t) => {
  const h = await harness(t, { enabled: false }, (await silentServer(t)).port);
  const id = h.record('kept');
  await h.tick();
  t.equal(h.state.underWay.size, 0, 'nothing offered');
  t.notOk(outgoingById(h.db, id)!.claimed);
  t.equal(h.lastTickDelay(), IDLE_TICK_MS);
});

t.test('a send whose account has no SMTP server is given back for later, not claimed again at once', async (t) => {
  const h = await harness(t, {}, null);
  const id = h.record('no-smtp');
  const before = Date.now();
  await h.tick();
  await Promise.all([...h.state.attempts]);
  const after = outgoingById(h.db, id)!;
  t.equal(after.stage, 'Recorded', 'it waits');
  t.notOk(after.claimed);
  t.ok(after.dueAt >= before + IDLE_TICK_MS, 'due again after an idle tick');
  t.equal(after.attemptCount, 0, 'no attempt counted');
  // The attempt's end kicked a tick: it finds nothing due.
  await h.tick();
  t.equal(h.state.underWay.size, 0, 'not claimed again');
  t.equal(h.logs.events('outbox.no-smtp').length, 1, 'one warning, not one per turn');
  t.ok(h.lastTickDelay()! > IDLE_TICK_MS - 5_000, 'the next tick waits');
});
