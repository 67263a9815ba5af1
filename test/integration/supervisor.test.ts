/**
 * The supervisor against real worker threads and a fixture actor that
 * misbehaves in every way the issue names. Each test asserts what an
 * operator would see: the one log line per event, restarts, give-up and
 * readiness, and what a caller of `ask` experiences.
 */
import t, { type Test } from 'tap';
import { Supervisor } from '../../runtime/supervisor/supervisor.ts';
import type { ChildSpecInput } from '../../runtime/supervisor/child-spec.ts';
import { AppError } from '../../runtime/errors.ts';
import { captureLog, until } from '../helpers/log-capture.ts';

const entry = new URL('../fixtures/actors/misbehaving.ts', import.meta.url);
const fast = { baseMs: 20, factor: 2, maxMs: 200, jitter: 0.1, stableAfterMs: 60_000 };

function spec(id: string, extra: Partial<ChildSpecInput> = {}): ChildSpecInput {
  return { id, entry, restart: 'permanent', backoff: fast, ...extra };
}

function setup(t: Test, watchdog = { heartbeatMs: 200, missedBeats: 3 }) {
  const capture = captureLog();
  const supervisor = new Supervisor({ log: capture.log, watchdog });
  t.teardown(() => supervisor.stop(2_000));
  return { supervisor, ...capture };
}

async function rejection(p: Promise<unknown>): Promise<AppError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error('expected a rejection');
}

t.test('ask and tell round trip through a real thread; invalid messages and AppErrors are replies', async (t) => {
  const { supervisor, events } = setup(t);
  await supervisor.start([spec('echo')]);
  const ref = supervisor.ref('echo');
  t.same(await ref.ask({ type: 'echo', payload: { a: [1, 2] } }), { a: [1, 2] });
  t.equal((await rejection(ref.ask({ type: 'no-such-message' }))).code, 'E_PROTOCOL_INVALID');
  t.equal((await rejection(ref.ask({ type: 'app-error' }))).code, 'E_TOOL_INVALID_INPUT');
  ref.tell({ type: 'count' });
  t.equal(await ref.ask({ type: 'count' }), 2, 'the tell was handled before the ask, in order');
  t.equal(events('actor.start', 'echo').length, 1);
  t.equal(events('actor.exit', 'echo').length, 0, 'none of that crashed the actor');
});

t.test('large payloads move without copying (transfer list)', async (t) => {
  const { supervisor } = setup(t);
  await supervisor.start([spec('echo')]);
  const bytes = new Uint8Array(1024 * 1024).fill(7);
  const back = (await supervisor.ref('echo').ask({ type: 'echo-bytes', bytes }, { transfer: [bytes.buffer] })) as Uint8Array;
  t.equal(bytes.byteLength, 0, "the sender's buffer was detached: it moved, not copied");
  t.equal(back.byteLength, 1024 * 1024);
  t.equal(back[1000], 7);
});

t.test('a full mailbox refuses at once with a typed error, then admits again', async (t) => {
  const { supervisor } = setup(t);
  await supervisor.start([spec('small', { mailboxCapacity: 3 })]);
  const ref = supervisor.ref('small');
  const slow = ref.ask({ type: 'sleep', ms: 300 });
  ref.tell({ type: 'count' });
  ref.tell({ type: 'count' });
  t.throws(() => ref.tell({ type: 'count' }), { code: 'E_ACTOR_MAILBOX_FULL' });
  t.equal((await rejection(ref.ask({ type: 'count' }))).code, 'E_ACTOR_MAILBOX_FULL');
  t.equal(await slow, 'slept');
  let count: unknown;
  for (const end = Date.now() + 5_000; count === undefined && Date.now() < end; ) {
    count = await ref.ask({ type: 'count' }).catch(async (err: AppError) => {
      if (err.code !== 'E_ACTOR_MAILBOX_FULL') throw err;
      await new Promise((r) => setTimeout(r, 10));
      return undefined;
    });
  }
  t.equal(count, 3, 'once the mailbox drained, both admitted tells had been handled and asks are admitted again');
});

t.test('a handler that throws: the actor restarts with fresh state and the documented lines', async (t) => {
  const { supervisor, events } = setup(t);
  await supervisor.start([spec('crashy')]);
  const ref = supervisor.ref('crashy');
  t.equal(await ref.ask({ type: 'count' }), 1);
  t.equal((await rejection(ref.ask({ type: 'throw' }))).code, 'E_ACTOR_DOWN', 'the caller learns at once');
  await until(() => events('actor.start', 'crashy').length === 2, 10_000, 'restart');
  const [exit] = events('actor.exit', 'crashy');
  t.match(exit, { event: 'actor.exit', actor: 'crashy', reason: 'E_ACTOR_CRASHED', restarts: 0, nextDelayMs: Number });
  t.match(events('actor.restart', 'crashy')[0], { reason: 'E_ACTOR_CRASHED', restarts: 1, nextDelayMs: null });
  t.match(events('actor.start', 'crashy')[1], { reason: 'E_ACTOR_CRASHED', restarts: 1 });
  t.equal(await ref.ask({ type: 'count' }), 1, 'state started afresh');
  await until(() => supervisor.health().threads === 1, 5_000, 'the old thread to end');
  t.equal(supervisor.health().threads, 1, 'the crashed incarnation left no thread behind');
});

t.test('an actor that exits its thread mid-ask: the ask is rejected at once, not at its deadline', async (t) => {
  const { supervisor, events } = setup(t);
  await supervisor.start([spec('quitter')]);
  const started = Date.now();
  const err = await rejection(supervisor.ref('quitter').ask({ type: 'exit-soon', ms: 100 }, { deadlineMs: 20_000 }));
  t.equal(err.code, 'E_ACTOR_DOWN');
  t.ok(Date.now() - started < 5_000, 'rejected long before the 20 s deadline');
  await until(() => events('actor.start', 'quitter').length === 2, 10_000, 'restart');
  t.match(events('actor.exit', 'quitter')[0], { reason: 'E_ACTOR_EXITED' });
});

t.test('an actor that exceeds its memory limit is restarted', async (t) => {
  // A generous watchdog: allocating towards the limit keeps the event loop busy, and a loaded machine must not turn OOM into a hang.
  const { supervisor, events } = setup(t, { heartbeatMs: 2_000, missedBeats: 10 });
  await supervisor.start([spec('hog', { placement: { kind: 'dedicated', resourceLimits: { maxOldGenerationSizeMb: 48 } } })]);
  supervisor.ref('hog').tell({ type: 'hog' });
  await until(() => events('actor.start', 'hog').length === 2, 30_000, 'restart after OOM');
  t.match(events('actor.exit', 'hog')[0], { reason: 'E_ACTOR_OUT_OF_MEMORY', nextDelayMs: Number });
});

t.test('a hung actor (no heartbeat) is terminated by the watchdog and restarted', async (t) => {
  const { supervisor, events } = setup(t, { heartbeatMs: 100, missedBeats: 3 });
  await supervisor.start([spec('hangs')]);
  supervisor.ref('hangs').tell({ type: 'block' });
  await until(() => events('actor.start', 'hangs').length === 2, 15_000, 'restart after hang');
  t.equal(events('actor.hang', 'hangs').length, 1, 'exactly one hang line');
  t.match(events('actor.hang', 'hangs')[0], { level: 50, reason: 'E_ACTOR_HUNG' });
  t.match(events('actor.exit', 'hangs')[0], { reason: 'E_ACTOR_HUNG' });
});

t.test('a crash loop reaches the intensity limit: given up, logged at error, readiness false', async (t) => {
  const { supervisor, events } = setup(t);
  await supervisor.start([spec('loop', { config: { failInit: true }, intensity: { maxRestarts: 3, windowMs: 60_000 } })]);
  await until(() => events('actor.give-up', 'loop').length === 1, 15_000, 'give-up');
  t.match(events('actor.give-up', 'loop')[0], { level: 50, reason: 'E_ACTOR_START_FAILED', restarts: 3, nextDelayMs: null });
  t.equal(events('actor.restart', 'loop').length, 3);
  const health = supervisor.health();
  t.equal(health.healthy, false);
  t.same(health.givenUp, ['loop']);
  t.equal((await rejection(supervisor.ref('loop').ask({ type: 'count' }))).code, 'E_ACTOR_DOWN');
});

t.test('restart types: transient stays down after a normal exit, temporary after a crash, permanent comes back', async (t) => {
  const { supervisor, events } = setup(t);
  await supervisor.start([
    spec('trans', { restart: 'transient' }),
    spec('refused', { restart: 'transient' }),
    spec('temp', { restart: 'temporary' }),
    spec('perm', { restart: 'permanent' }),
  ]);
  await supervisor.ref('trans').ask({ type: 'stop-self', reason: 'normal' });
  // A deliberate stop with a reason (a refused mailbox login) is not a crash: it stays down, logged at warn.
  await supervisor.ref('refused').ask({ type: 'stop-self', reason: 'E_IMAP_AUTH' });
  await rejection(supervisor.ref('temp').ask({ type: 'throw' }));
  await supervisor.ref('perm').ask({ type: 'stop-self', reason: 'normal' });
  await until(() => events('actor.start', 'perm').length === 2, 10_000, 'permanent restart');
  t.match(events('actor.exit', 'trans')[0], { reason: 'normal', nextDelayMs: null });
  t.match(events('actor.exit', 'temp')[0], { reason: 'E_ACTOR_CRASHED', nextDelayMs: null });
  t.match(events('actor.exit', 'refused')[0], { level: 40, reason: 'E_IMAP_AUTH', nextDelayMs: null });
  t.equal(events('actor.start', 'trans').length, 1);
  t.equal(events('actor.start', 'refused').length, 1);
  t.equal(events('actor.start', 'temp').length, 1);
  const states = Object.fromEntries(supervisor.health().children.map((c) => [c.id, c.state]));
  t.same(states, { trans: 'stopped', refused: 'stopped', temp: 'stopped', perm: 'running' });
});

t.test('shared threads: actors pack onto few threads, a handler crash spares neighbours, a thread death restarts them all', async (t) => {
  const { supervisor, events } = setup(t);
  const shared = { kind: 'shared' as const, group: 'accounts', actorsPerThread: 4 };
  const ids = Array.from({ length: 10 }, (_, i) => `acct-${i}`);
  await supervisor.start(ids.map((id) => spec(id, { placement: shared })));
  const threads = await Promise.all(ids.map((id) => supervisor.ref(id).ask({ type: 'thread' })));
  t.equal(new Set(threads).size, 3, 'ten actors on three threads');
  const neighbours = ids.filter((id, i) => threads[i] === threads[0] && id !== 'acct-0');
  for (const id of neighbours) await supervisor.ref(id).ask({ type: 'count' });
  await rejection(supervisor.ref('acct-0').ask({ type: 'throw' }));
  for (const id of neighbours) t.equal(await supervisor.ref(id).ask({ type: 'count' }), 2, `${id} kept its state`);
  await until(() => events('actor.start', 'acct-0').length === 2, 10_000, 'acct-0 restart');

  const thread = await supervisor.ref('acct-0').ask({ type: 'thread' });
  const after = await Promise.all(ids.map((id) => supervisor.ref(id).ask({ type: 'thread' })));
  const sharing = ids.filter((id, i) => after[i] === thread && id !== 'acct-0');
  t.ok(sharing.length > 0, 'the restarted actor shares a thread again');
  await rejection(supervisor.ref('acct-0').ask({ type: 'exit' }));
  for (const id of sharing) await until(() => events('actor.start', id).length >= 2, 10_000, `${id} restart`);
  for (const id of sharing) t.match(events('actor.exit', id).at(-1), { reason: 'E_ACTOR_EXITED' });
  const untouched = ids.filter((_id, i) => after[i] !== thread);
  for (const id of untouched) t.equal(events('actor.exit', id).length, 0, `${id} on another thread never stopped`);
});

t.test('stop: reverse start order, drains, and a child that ignores stop is ended after its deadline', async (t) => {
  const { supervisor, lines } = setup(t);
  await supervisor.start([spec('first'), spec('second', { config: { slowStopMs: 60_000 }, shutdownMs: 300 }), spec('third', { config: { slowStopMs: 100 } })]);
  const pending = supervisor.ref('third').ask({ type: 'sleep', ms: 150 });
  const began = Date.now();
  await supervisor.stop(5_000);
  t.equal(await pending, 'slept', 'work in the mailbox was finished before stopping');
  t.ok(Date.now() - began < 4_000, 'stopped within the deadline');
  const exits = lines.filter((l) => l.event === 'actor.exit');
  t.same(
    exits.map((l) => l.actor),
    ['third', 'second', 'first'],
  );
  t.same(
    exits.map((l) => l.reason),
    ['shutdown', 'E_ACTOR_TIMEOUT', 'shutdown'],
  );
  t.equal(supervisor.health().healthy, false, 'a stopping supervisor is not ready');
});

t.test('a deferred answer lets the actor handle other messages meanwhile; actors reach pools and each other', async (t) => {
  const { supervisor } = setup(t);
  const { createPool } = await import('../../runtime/pool/pool.ts');
  const pool = createPool({ id: 'echo-pool', entry: new URL('../fixtures/pool/echo-task.ts', import.meta.url), maxThreads: 1 });
  t.teardown(() => pool.close());
  supervisor.router.registerPool(pool);
  await supervisor.start([spec('patient'), spec('other')]);
  const ref = supervisor.ref('patient');
  const slow = ref.ask({ type: 'later', ms: 300, fail: false });
  t.equal(await ref.ask({ type: 'count' }), 1, 'answered while the deferred work is pending');
  t.equal(await slow, 'done later');
  t.equal((await rejection(ref.ask({ type: 'later', ms: 10, fail: true }))).code, 'E_TOOL_INVALID_INPUT');
  t.equal(await ref.ask({ type: 'ask-other', to: 'echo-pool', payload: 'via pool' }), 'via pool');
  t.equal(await ref.ask({ type: 'ask-other', to: 'other', payload: 'via actor' }), 'via actor');
  const pending = ref.ask({ type: 'later', ms: 20_000, fail: false }, { deadlineMs: 30_000 });
  const began = Date.now();
  ref.tell({ type: 'exit' });
  t.equal((await rejection(pending)).code, 'E_ACTOR_DOWN', 'a deferred answer is refused at once when the actor dies');
  t.ok(Date.now() - began < 5_000);
});
