/**
 * The concurrency limiter: MaxConcurrentRequests permits, a FIFO queue of
 * ConcurrencyQueueLimit, refusal beyond it, permits handed to the oldest
 * waiter, idempotent release, and a waiter leaving on abort.
 */
import t from 'tap';
import { createConcurrencyLimiter, type Permit } from '../../../http/limits/concurrency.ts';

t.test('permits, then the queue, then refusal', async (t) => {
  const limiter = createConcurrencyLimiter({ MaxConcurrentRequests: 2, ConcurrencyQueueLimit: 2 });
  const first = limiter.take();
  const second = limiter.take();
  t.equal(first.kind, 'granted');
  t.equal(second.kind, 'granted');
  const third = limiter.take();
  const fourth = limiter.take();
  t.equal(third.kind, 'queued');
  t.equal(fourth.kind, 'queued');
  t.equal(limiter.take().kind, 'refused', 'beyond the queue limit');
  t.equal(limiter.waiting(), 2);

  if (first.kind !== 'granted' || third.kind !== 'queued' || fourth.kind !== 'queued') throw new Error('unexpected');
  const order: string[] = [];
  void third.permit.then(() => order.push('third'));
  void fourth.permit.then(() => order.push('fourth'));
  first.permit.release();
  await Promise.resolve();
  t.same(order, ['third'], 'the oldest waiter gets the released permit');
  t.equal(limiter.inUse(), 2, 'the permit moved without ever being free');
  first.permit.release();
  await Promise.resolve();
  t.same(order, ['third'], 'a second release of the same permit frees nothing');
  t.end();
});

t.test('no queue: refused as soon as every permit is held', (t) => {
  const limiter = createConcurrencyLimiter({ MaxConcurrentRequests: 1, ConcurrencyQueueLimit: 0 });
  const held = limiter.take();
  t.equal(limiter.take().kind, 'refused');
  if (held.kind === 'granted') held.permit.release();
  t.equal(limiter.take().kind, 'granted');
  t.end();
});

t.test('an aborted waiter leaves the queue; the next waiter is served', async (t) => {
  const limiter = createConcurrencyLimiter({ MaxConcurrentRequests: 1, ConcurrencyQueueLimit: 2 });
  const held = limiter.take();
  const controller = new AbortController();
  const gone = limiter.take(controller.signal);
  const stays = limiter.take();
  if (held.kind !== 'granted' || gone.kind !== 'queued' || stays.kind !== 'queued') throw new Error('unexpected');
  controller.abort();
  t.equal(await gone.permit, null);
  t.equal(limiter.waiting(), 1);
  held.permit.release();
  const permit: Permit | null = await stays.permit;
  t.not(permit, null);
  permit?.release();
  t.equal(limiter.inUse(), 0);
  t.end();
});
