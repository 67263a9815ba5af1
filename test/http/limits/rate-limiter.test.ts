/**
 * The surface rate limiter: partition keys (typed, per surface, no
 * collisions between a key's name and the shared partitions), separate
 * buckets per partition and per surface, Retry-After only for the bucket,
 * the concurrency limit with its queue, queued requests cancelled by their
 * signal, pruning of idle buckets, limits off, the 429 answer and the
 * startup description.
 */
import type { ServerResponse } from 'node:http';
import t from 'tap';
import {
  answerTooMany,
  createRateLimiter,
  describeLimits,
  type Lease,
  partitionFor,
  type RateLimitingSettings,
  type Refusal,
} from '../../../http/limits/rate-limiter.ts';
import { fakeLimiterClock } from './fake-limiter-clock.ts';

const MINUTE = 60_000;
const limits = (over: Partial<RateLimitingSettings> = {}): RateLimitingSettings => ({
  Enabled: true,
  MaxConcurrentRequests: 20,
  ConcurrencyQueueLimit: 0,
  TokenCapacity: 3,
  TokensPerReplenishmentPeriod: 3,
  ReplenishmentPeriod: MINUTE,
  RequestQueueLimit: 0,
  ...over,
});

const alice = partitionFor('mcp', { kind: 'api-key', name: 'alice' });
const bob = partitionFor('mcp', { kind: 'api-key', name: 'bob' });

function granted(result: Lease | Refusal): Lease {
  if (!result.ok) throw new Error(`refused (retry after ${result.retryAfterSeconds})`);
  return result;
}

t.test('partition keys: typed admissions, keyed by surface, no collisions', (t) => {
  t.equal(alice, 'mcp:key:alice');
  t.equal(partitionFor('mcp', { kind: 'certificate-profile', name: 'ci' }), 'mcp:<profile:ci>');
  t.equal(partitionFor('mcp', { kind: 'other' }), 'mcp:<anonymous>');
  t.not(
    partitionFor('mcp', { kind: 'api-key', name: 'anonymous' }),
    partitionFor('mcp', { kind: 'other' }),
    'a key named anonymous is not the anonymous partition',
  );
  t.not(partitionFor('mcp', { kind: 'api-key', name: '<profile:ci>' }), partitionFor('mcp', { kind: 'certificate-profile', name: 'ci' }));
  for (const admission of [{ kind: 'api-key', name: 'alice' }, { kind: 'certificate-profile', name: 'ci' }, { kind: 'other' }] as const) {
    t.equal(partitionFor('admin', admission), 'admin', 'every administrative caller shares one partition');
  }
  t.end();
});

t.test('two partitions do not share a bucket; Retry-After only when the bucket refused', async (t) => {
  const clock = fakeLimiterClock();
  const limiter = createRateLimiter(limits(), { surface: 'mcp', clock });
  for (let i = 0; i < 3; i += 1) granted(await limiter.acquire(alice)).release();
  t.same(await limiter.acquire(alice), { ok: false, retryAfterSeconds: 60 });
  granted(await limiter.acquire(bob)).release();
  await clock.advance(MINUTE - 400);
  t.same(await limiter.acquire(alice), { ok: false, retryAfterSeconds: 1 }, '400 ms left: one second, never less');
  await clock.advance(400);
  t.ok((await limiter.acquire(alice)).ok, 'restored after the period');
  t.end();
});

t.test('the MCP and administrative limiters never share', async (t) => {
  const clock = fakeLimiterClock();
  const mcp = createRateLimiter(limits(), { surface: 'mcp', clock });
  const admin = createRateLimiter(limits(), { surface: 'admin', clock });
  const adminKey = partitionFor('admin', { kind: 'api-key', name: 'alice' });
  for (let i = 0; i < 3; i += 1) granted(await admin.acquire(adminKey)).release();
  t.equal((await admin.acquire(partitionFor('admin', { kind: 'other' }))).ok, false, 'one bucket for every administrative caller');
  t.equal((await mcp.acquire(alice)).ok, true, 'the MCP surface is untouched');
  t.equal((await admin.acquire(alice)).ok, false, 'the administrative surface uses its one bucket whatever key it is handed');
  t.equal(admin.partitions(), 1);
  t.end();
});

t.test('the concurrency limit, with its queue; no Retry-After for it', async (t) => {
  const clock = fakeLimiterClock();
  const limiter = createRateLimiter(limits({ MaxConcurrentRequests: 2, ConcurrencyQueueLimit: 1, TokenCapacity: 100, TokensPerReplenishmentPeriod: 100 }), {
    surface: 'mcp',
    clock,
  });
  const first = granted(await limiter.acquire(alice));
  granted(await limiter.acquire(bob));
  const queued = limiter.acquire(alice);
  t.same(await limiter.acquire(bob), { ok: false, retryAfterSeconds: null }, 'the queue is full: refused at once, no Retry-After');
  first.release();
  first.release();
  const third = granted(await queued);
  const fourth = limiter.acquire(bob);
  t.same(await limiter.acquire(bob), { ok: false, retryAfterSeconds: null }, 'a double release freed only one permit: the queue is full again');
  third.release();
  granted(await fourth).release();
  t.end();
});

t.test('a queued request is served when a token arrives, or refused when its signal aborts', async (t) => {
  const clock = fakeLimiterClock();
  const limiter = createRateLimiter(limits({ TokenCapacity: 1, TokensPerReplenishmentPeriod: 1, RequestQueueLimit: 1 }), { surface: 'mcp', clock });
  granted(await limiter.acquire(alice)).release();
  let settled = false;
  const waiting = limiter.acquire(alice).then((r) => {
    settled = true;
    return r;
  });
  const over = await limiter.acquire(alice);
  t.same(over, { ok: false, retryAfterSeconds: 120 }, 'over the queue limit: refused at once, after the waiter ahead');
  await clock.advance(MINUTE - 1);
  t.notOk(settled);
  await clock.advance(1);
  t.ok((await waiting).ok, 'served by the next token');

  const controller = new AbortController();
  const cancelled = limiter.acquire(alice, { signal: controller.signal });
  controller.abort();
  t.same(await cancelled, { ok: false, retryAfterSeconds: null });
  t.end();
});

t.test('buckets are made on first use and dropped once full and idle', async (t) => {
  const clock = fakeLimiterClock();
  const limiter = createRateLimiter(limits(), { surface: 'mcp', clock });
  for (let i = 0; i < 50; i += 1) granted(await limiter.acquire(partitionFor('mcp', { kind: 'api-key', name: `k${i}` }))).release();
  t.equal(limiter.partitions(), 50, 'each holds a spent token');
  await clock.advance(MINUTE);
  granted(await limiter.acquire(alice)).release();
  t.equal(limiter.partitions(), 1, 'the refilled idle buckets went when a new one was made');
  t.end();
});

t.test('Enabled: false limits nothing', async (t) => {
  const limiter = createRateLimiter(limits({ Enabled: false, MaxConcurrentRequests: 1, TokenCapacity: 1, TokensPerReplenishmentPeriod: 1 }), {
    surface: 'mcp',
  });
  for (let i = 0; i < 100; i += 1) t.ok((await limiter.acquire(alice)).ok);
  t.equal(limiter.partitions(), 0);
  t.end();
});

t.test('answerTooMany: 429, empty, no-store, Retry-After only when given', (t) => {
  const fake = (): { res: ServerResponse; headers: Record<string, unknown>; ended: () => boolean } => {
    const headers: Record<string, unknown> = {};
    let ended = false;
    const res = {
      statusCode: 200,
      setHeader(name: string, value: unknown) {
        headers[name.toLowerCase()] = value;
        return this;
      },
      end() {
        ended = true;
        return this;
      },
    } as unknown as ServerResponse;
    return { res, headers, ended: () => ended };
  };
  const withRetry = fake();
  answerTooMany(withRetry.res, 60);
  t.equal(withRetry.res.statusCode, 429);
  t.same(withRetry.headers, { 'retry-after': '60', 'cache-control': 'no-store', 'content-length': 0 });
  t.ok(withRetry.ended());
  const without = fake();
  answerTooMany(without.res, null);
  t.same(without.headers, { 'cache-control': 'no-store', 'content-length': 0 });
  t.end();
});

t.test('describeLimits: what is in force, per surface', (t) => {
  t.same(describeLimits(limits(), 'mcp'), {
    policy: 'Service:Mcp:RateLimiting',
    enabled: true,
    maxConcurrentRequests: 20,
    concurrencyQueueLimit: 0,
    partitioning: 'per client',
    tokenCapacity: 3,
    tokensPerReplenishmentPeriod: 3,
    replenishmentPeriod: '00:01:00',
    requestQueueLimit: 0,
  });
  t.equal((describeLimits(limits(), 'admin') as { partitioning: string }).partitioning, 'one bucket for all callers');
  t.same(describeLimits(limits({ Enabled: false }), 'admin'), { policy: 'Service:Admin:RateLimiting', enabled: false });
  t.end();
});
