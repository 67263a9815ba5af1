/** The scheduler's phases, slots, interval, backoff and wake-ups, with a fake clock. */
import t from 'tap';
import { seededRandom } from '../../../runtime/clock.ts';
import { Schedule } from '../../../actors/sync-scheduler/schedule.ts';

const policy = { maxConcurrent: 2, intervalMs: 300_000, backoffInitialMs: 30_000, backoffMaxMs: 3_600_000, jitter: 0 };

t.test('slots: at most MaxConcurrentAccounts run; the rest wait for a slot in order', async (t) => {
  const s = new Schedule(['a', 'b', 'c'], policy, seededRandom(1), 0, true);
  t.same(s.start(0), ['a', 'b']);
  t.same(
    s.list().map((x) => x.phase),
    ['running', 'running', 'waiting-for-slot'],
  );
  s.ended('a', 'ok', false, 10_000);
  t.same(s.start(10_000), ['c']);
  t.match(s.list()[0], { phase: 'waiting', nextDueAt: 310_000, consecutiveFailures: 0 });
  t.equal(s.nextDueAt(), 310_000);
});

t.test('failed runs grow the delay from Backoff:Initial up to Backoff:Maximum; success resets it', async (t) => {
  const s = new Schedule(['a'], { ...policy, maxConcurrent: 1 }, seededRandom(1), 0, true);
  const delays: number[] = [];
  let now = 0;
  for (let i = 0; i < 10; i++) {
    s.start(now);
    s.ended('a', i % 2 === 0 ? 'failed' : 'down', false, now);
    const due = s.list()[0]!.nextDueAt!;
    delays.push(due - now);
    now = due;
  }
  t.same(delays.slice(0, 4), [30_000, 60_000, 120_000, 240_000]);
  t.equal(delays.at(-1), 3_600_000, 'capped');
  t.equal(s.list()[0]!.consecutiveFailures, 10);
  s.start(now);
  s.ended('a', 'ok', false, now);
  t.match(s.list()[0], { consecutiveFailures: 0, nextDueAt: now + 300_000 });
});

t.test('more to fetch is due at once but queues behind accounts already ready; wake brings a run forward', async (t) => {
  const s = new Schedule(['big', 'small'], { ...policy, maxConcurrent: 1 }, seededRandom(1), 0, true);
  t.same(s.start(0), ['big']);
  s.ended('big', 'ok', true, 1_000);
  t.same(s.start(1_000), ['small'], 'the waiting account goes first');
  s.ended('small', 'ok', false, 2_000);
  t.same(s.start(2_000), ['big']);
  s.ended('big', 'ok', false, 3_000);
  s.wake('small', 4_000);
  t.same(s.start(4_000), ['small'], 'new mail seen by IDLE starts a run now');
});

t.test('disabled: nothing is ever due and every account reads not started', async (t) => {
  const s = new Schedule(['a'], policy, seededRandom(1), 0, false);
  t.same(s.start(1e12), []);
  t.equal(s.list()[0]!.phase, 'not-started');
  t.equal(s.nextDueAt(), null);
});

t.test('a wake while the account runs is kept: due again as soon as the run ends, not after the interval', async (t) => {
  const s = new Schedule(['a'], { ...policy, maxConcurrent: 1 }, seededRandom(1), 0, true);
  t.same(s.start(0), ['a']);
  s.wake('a', 500);
  s.ended('a', 'ok', false, 1_000);
  t.match(s.list()[0], { phase: 'waiting', nextDueAt: 1_000 });
  t.same(s.start(1_000), ['a'], 'the change the run may have missed gets its run');
  s.ended('a', 'ok', false, 2_000);
  t.match(s.list()[0], { nextDueAt: 302_000 }, 'the kept wake is used once');
  t.same(s.start(2_000), []);
  s.start(302_000);
  s.wake('a', 302_100);
  s.ended('a', 'failed', false, 303_000);
  t.match(s.list()[0], { nextDueAt: 333_000, consecutiveFailures: 1 }, 'a failed run keeps its backoff');
});
