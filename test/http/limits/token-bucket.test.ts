/**
 * The token bucket under a fake clock: a burst of exactly TokenCapacity,
 * tokens restored all at once per whole period and never beyond capacity,
 * Retry-After from the next replenishment and never below a second, the
 * FIFO queue served as tokens arrive, refusal beyond the queue limit, and
 * a waiter leaving on abort.
 */
import t from 'tap';
import { createTokenBucket, type TokenBucketSettings } from '../../../http/limits/token-bucket.ts';
import { fakeLimiterClock } from './fake-limiter-clock.ts';

const MINUTE = 60_000;
const settings = (over: Partial<TokenBucketSettings> = {}): TokenBucketSettings => ({
  TokenCapacity: 5,
  TokensPerReplenishmentPeriod: 5,
  ReplenishmentPeriod: MINUTE,
  RequestQueueLimit: 0,
  ...over,
});

t.test('a burst gives exactly TokenCapacity successes, then refusals', (t) => {
  const bucket = createTokenBucket(settings(), fakeLimiterClock());
  const kinds = Array.from({ length: 8 }, () => bucket.take().kind);
  t.same(kinds, ['granted', 'granted', 'granted', 'granted', 'granted', 'refused', 'refused', 'refused']);
  t.end();
});

t.test('tokens come back all at once after each whole period, never beyond capacity', async (t) => {
  const clock = fakeLimiterClock();
  const bucket = createTokenBucket(settings({ TokensPerReplenishmentPeriod: 2 }), clock);
  for (let i = 0; i < 5; i += 1) bucket.take();
  t.equal(bucket.tokens(), 0);
  await clock.advance(MINUTE - 1);
  t.equal(bucket.tokens(), 0, 'nothing before the period ends');
  t.equal(bucket.take().kind, 'refused');
  await clock.advance(1);
  t.equal(bucket.tokens(), 2, 'TokensPerReplenishmentPeriod at the boundary');
  await clock.advance(MINUTE * 10);
  t.equal(bucket.tokens(), 5, 'capped at TokenCapacity');
  t.equal(clock.pending(), 0, 'an idle bucket sets no timer');
  t.end();
});

t.test('Retry-After is the time to the next replenishment, never below one second', async (t) => {
  const clock = fakeLimiterClock();
  const bucket = createTokenBucket(settings(), clock);
  for (let i = 0; i < 5; i += 1) bucket.take();
  const refused = bucket.take();
  t.same(refused, { kind: 'refused', retryAfterMs: MINUTE });
  await clock.advance(MINUTE - 20_000);
  t.same(bucket.take(), { kind: 'refused', retryAfterMs: 20_000 });
  await clock.advance(19_700);
  t.same(bucket.take(), { kind: 'refused', retryAfterMs: 1_000 }, '300 ms left is reported as one second');
  await clock.advance(300);
  t.equal(bucket.take().kind, 'granted');
  t.end();
});

t.test('Retry-After counts the periods the queue ahead will use', async (t) => {
  const clock = fakeLimiterClock();
  const bucket = createTokenBucket(settings({ TokenCapacity: 1, TokensPerReplenishmentPeriod: 1, RequestQueueLimit: 2 }), clock);
  t.equal(bucket.take().kind, 'granted');
  await clock.advance(10_000);
  t.equal(bucket.take().kind, 'queued');
  t.equal(bucket.take().kind, 'queued');
  // Two waiters take the next two tokens; a third request would get the one after.
  t.same(bucket.take(), { kind: 'refused', retryAfterMs: 50_000 + 2 * MINUTE });
  t.end();
});

t.test('a queued request is served, in order, when a token arrives; over the queue limit is refused at once', async (t) => {
  const clock = fakeLimiterClock();
  const bucket = createTokenBucket(settings({ TokenCapacity: 2, TokensPerReplenishmentPeriod: 1, RequestQueueLimit: 2 }), clock);
  t.equal(bucket.take().kind, 'granted');
  t.equal(bucket.take().kind, 'granted');
  const order: string[] = [];
  const a = bucket.take();
  const b = bucket.take();
  if (a.kind !== 'queued' || b.kind !== 'queued') throw new Error('expected queued');
  void a.granted.then((ok) => order.push(`a:${ok}`));
  void b.granted.then((ok) => order.push(`b:${ok}`));
  t.equal(bucket.take().kind, 'refused', 'the queue holds RequestQueueLimit and no more');
  t.equal(clock.pending(), 1, 'one timer while someone waits');
  await clock.advance(MINUTE);
  t.same(order, ['a:true'], 'one token, the oldest waiter');
  await clock.advance(MINUTE);
  t.same(order, ['a:true', 'b:true']);
  t.equal(clock.pending(), 0, 'no timer once the queue is empty');
  t.end();
});

t.test('a newcomer never overtakes the queue, even when the timer is late', async (t) => {
  let now = 0;
  // A clock whose timers never fire: tokens reach the queue only when the bucket is read.
  const bucket = createTokenBucket(settings({ TokenCapacity: 1, TokensPerReplenishmentPeriod: 1, RequestQueueLimit: 1 }), {
    now: () => now,
    schedule: () => () => {},
  });
  t.equal(bucket.take().kind, 'granted');
  const waiting = bucket.take();
  if (waiting.kind !== 'queued') throw new Error('expected queued');
  now = MINUTE;
  t.equal(bucket.take().kind, 'queued', 'the token went to the waiter; the newcomer queues');
  t.equal(await waiting.granted, true);
  t.end();
});

t.test('a waiter whose signal aborts leaves the queue and its place is free', async (t) => {
  const clock = fakeLimiterClock();
  const bucket = createTokenBucket(settings({ TokenCapacity: 1, TokensPerReplenishmentPeriod: 1, RequestQueueLimit: 1 }), clock);
  bucket.take();
  const controller = new AbortController();
  const waiting = bucket.take(controller.signal);
  if (waiting.kind !== 'queued') throw new Error('expected queued');
  controller.abort();
  t.equal(await waiting.granted, false);
  t.equal(clock.pending(), 0, 'the timer went with the last waiter');
  const next = bucket.take();
  t.equal(next.kind, 'queued', 'the place is free again');
  await clock.advance(MINUTE);
  if (next.kind === 'queued') t.equal(await next.granted, true);
  t.end();
});

t.test('idle means full with nobody waiting', async (t) => {
  const clock = fakeLimiterClock();
  const bucket = createTokenBucket(settings(), clock);
  t.ok(bucket.isIdle());
  bucket.take();
  t.notOk(bucket.isIdle());
  await clock.advance(MINUTE);
  t.ok(bucket.isIdle());
  t.end();
});
