/**
 * The rate-limiting metrics through the global @opentelemetry/api meter,
 * read back from an in-memory SDK MeterProvider: admissions by result,
 * active leases, queued requests, time in queue and lease duration, every
 * point tagged with the surface's policy name and never with a partition.
 * The limiters are made before the SDK is installed: their instruments are
 * looked up at use (made at limiter creation, they recorded nothing).
 */
import t from 'tap';
import { createRateLimiter, partitionFor, type RateLimitingSettings } from '../../../http/limits/rate-limiter.ts';
import { installTelemetrySdk, type MetricPoint as Point } from '../../helpers/telemetry-sdk.ts';
import { fakeLimiterClock } from './fake-limiter-clock.ts';

const settings: RateLimitingSettings = {
  Enabled: true,
  MaxConcurrentRequests: 1,
  ConcurrencyQueueLimit: 1,
  TokenCapacity: 2,
  TokensPerReplenishmentPeriod: 2,
  ReplenishmentPeriod: 60_000,
  RequestQueueLimit: 0,
};

t.test('every instrument is tagged with the policy, never the partition', async (t) => {
  const clock = fakeLimiterClock();
  // Made before the SDK is installed, as the service may make them: their instruments are looked up at use.
  const mcp = createRateLimiter(settings, { surface: 'mcp', clock });
  const admin = createRateLimiter(settings, { surface: 'admin', clock });
  const sdk = installTelemetrySdk(t);
  const key = partitionFor('mcp', { kind: 'api-key', name: 'secret-key-name' });

  const first = await mcp.acquire(key);
  const queued = mcp.acquire(key); // waits for the one concurrency permit
  t.same(await mcp.acquire(key), { ok: false, retryAfterSeconds: 60 }, 'the bucket is spent');
  await clock.advance(250);
  if (first.ok) first.release();
  const second = await queued;
  await clock.advance(1_000);
  if (second.ok) second.release();
  const adminLease = await admin.acquire(partitionFor('admin', { kind: 'other' }));
  t.ok(adminLease.ok);

  const all = await sdk.points();
  for (const point of all) {
    t.match(point.attributes.policy, /^Service:(Mcp|Admin):RateLimiting$/, `${point.name} carries the policy`);
    t.notOk(JSON.stringify(point.attributes).includes('secret-key-name'), `${point.name} names no partition`);
    t.same(
      Object.keys(point.attributes).filter((k) => k !== 'policy' && k !== 'result'),
      [],
      `${point.name} carries policy and result only`,
    );
  }
  const find = (name: string, attributes: Record<string, unknown>): Point | undefined =>
    all.find((p) => p.name === name && Object.entries(attributes).every(([k, v]) => p.attributes[k] === v));
  const mcpPolicy = { policy: 'Service:Mcp:RateLimiting' };

  t.equal(find('service.rate_limiting.requests', { ...mcpPolicy, result: 'acquired' })?.value, 2);
  t.equal(find('service.rate_limiting.requests', { ...mcpPolicy, result: 'bucket_exhausted' })?.value, 1);
  t.equal(find('service.rate_limiting.requests', { policy: 'Service:Admin:RateLimiting', result: 'acquired' })?.value, 1);
  t.equal(find('service.rate_limiting.active_request_leases', mcpPolicy)?.value, 0, 'both MCP leases released');
  t.equal(find('service.rate_limiting.active_request_leases', { policy: 'Service:Admin:RateLimiting' })?.value, 1, 'the admin lease is held');
  t.equal(find('service.rate_limiting.queued_requests', mcpPolicy)?.value, 0);

  const inQueue = find('service.rate_limiting.request.time_in_queue', { ...mcpPolicy, result: 'acquired' })?.value as
    | { count: number; sum: number }
    | undefined;
  t.equal(inQueue?.count, 1);
  t.equal(inQueue?.sum, 0.25, 'seconds');
  const lease = find('service.rate_limiting.request_lease.duration', mcpPolicy)?.value as { count: number; sum: number } | undefined;
  t.equal(lease?.count, 2);
  t.equal(lease?.sum, 0.25 + 1, 'seconds');
  t.end();
});
