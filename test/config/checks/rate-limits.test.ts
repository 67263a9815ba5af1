/**
 * The startup refusals of rate limiting (docs/configuration.md "Rules across
 * settings"), on both endpoints and whether limits are enabled or not: a limit
 * of zero or below, an unbounded queue, a period below timer resolution, a
 * period restoring more than the bucket holds, a client queue that could hold
 * every concurrency permit. And which proxy lists count as trusting everyone
 * (the startup warning).
 */
import t from 'tap';
import { trustsEveryone } from '../../../config/checks/reverse-proxy.ts';
import { problemLines } from '../fixtures.ts';

const on = (section: 'McpEndpoint' | 'AdminEndpoint', limits: Record<string, unknown>) => problemLines({ [section]: { RateLimiting: limits } });

t.test('the defaults and the edges of every range start', (t) => {
  t.same(on('McpEndpoint', {}), []);
  t.same(
    on('AdminEndpoint', { MaxConcurrentRequests: 1, RequestQueueLimit: 0, TokenCapacity: 1, TokensPerReplenishmentPeriod: 1, ReplenishmentPeriod: '00:00:01' }),
    [],
  );
  t.same(
    on('McpEndpoint', {
      MaxConcurrentRequests: 1000,
      ConcurrencyQueueLimit: 1000,
      RequestQueueLimit: 999,
      TokenCapacity: 1_000_000,
      TokensPerReplenishmentPeriod: 1_000_000,
      ReplenishmentPeriod: '01:00:00',
    }),
    [],
  );
  t.end();
});

t.test('each refusal the spec lists, on both endpoints, enabled or not', (t) => {
  for (const section of ['McpEndpoint', 'AdminEndpoint'] as const) {
    for (const Enabled of [true, false]) {
      const lines = (limits: Record<string, unknown>) => on(section, { Enabled, ...limits });
      t.same(
        lines({ MaxConcurrentRequests: 0, RequestQueueLimit: 0 }),
        [`${section}:RateLimiting:MaxConcurrentRequests: must be between 1 and 1000 (was 0)`],
        'a limit of zero',
      );
      t.same(lines({ TokenCapacity: -5 }), [`${section}:RateLimiting:TokenCapacity: must be between 1 and 1000000 (was -5)`], 'a limit below zero');
      t.same(lines({ TokensPerReplenishmentPeriod: 0 }), [`${section}:RateLimiting:TokensPerReplenishmentPeriod: must be between 1 and 1000000 (was 0)`]);
      t.same(
        lines({ ConcurrencyQueueLimit: 1001 }),
        [`${section}:RateLimiting:ConcurrencyQueueLimit: must be between 0 and 1000 (was 1001)`],
        'an unbounded queue',
      );
      t.same(
        lines({ ConcurrencyQueueLimit: -1 }),
        [`${section}:RateLimiting:ConcurrencyQueueLimit: must be between 0 and 1000 (was -1)`],
        'no "-1 means unbounded"',
      );
      t.same(
        lines({ ReplenishmentPeriod: '00:00:00.500' }),
        [`${section}:RateLimiting:ReplenishmentPeriod: must be between 00:00:01 and 01:00:00 (was 00:00:00.500)`],
        'below timer resolution',
      );
      t.same(
        lines({ TokenCapacity: 10, TokensPerReplenishmentPeriod: 11 }),
        [`${section}:RateLimiting:TokensPerReplenishmentPeriod: must be between 1 and TokenCapacity (10) (was 11)`],
        'a period restoring more than the bucket holds',
      );
      t.same(
        lines({ MaxConcurrentRequests: 5, RequestQueueLimit: 5 }),
        [`${section}:RateLimiting:RequestQueueLimit: must be between 0 and MaxConcurrentRequests minus 1 (4) (was 5)`],
        'a client queue that could hold every concurrency permit',
      );
    }
  }
  t.end();
});

t.test('trusting everyone: empty, either family whole, or all of the IPv4-mapped range', (t) => {
  t.ok(trustsEveryone([]));
  t.ok(trustsEveryone(['10.0.0.0/8', '0.0.0.0/0']));
  t.ok(trustsEveryone(['::/0']));
  t.ok(trustsEveryone(['::ffff:0.0.0.0/96']), 'every IPv4 peer, written mapped');
  t.ok(trustsEveryone(['::/80']), 'a network holding the mapped range');
  t.notOk(trustsEveryone(['::ffff:10.0.0.0/104', 'fd00::/8', '10.0.0.0/8']));
  t.end();
});
