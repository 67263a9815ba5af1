/**
 * `RateLimiting` of an HTTP endpoint: one concurrency limiter for all callers
 * plus a token bucket per partition (per client on the MCP endpoint, one
 * shared bucket on the administrative one). Keys, defaults and ranges:
 * docs/security.md "Rate limits", docs/configuration.md; the two relations
 * between keys (`TokensPerReplenishmentPeriod` at most `TokenCapacity`,
 * `RequestQueueLimit` below `MaxConcurrentRequests`) are checked in
 * `config/checks/rate-limits.ts`.
 */
import { z } from 'zod';
import { flag, wholeNumber } from './fields.ts';
import { timeSpan } from './time-span.ts';

export const RateLimiting = z
  .strictObject({
    Enabled: flag('Whether limits apply; false logs a startup warning').default(true),
    MaxConcurrentRequests: wholeNumber(1, 1000, 'Requests served at once, all clients together').default(20),
    ConcurrencyQueueLimit: wholeNumber(0, 1000, 'Requests waiting for a concurrency slot').default(0),
    TokenCapacity: wholeNumber(1, 1_000_000, 'Largest burst one partition may spend').default(60),
    TokensPerReplenishmentPeriod: wholeNumber(1, 1_000_000, 'Tokens regained per period')
      .meta({ description: 'Tokens regained per period', range: '1 to TokenCapacity' })
      .default(60),
    ReplenishmentPeriod: timeSpan('00:00:01', '01:00:00', 'How often tokens are restored').prefault('00:01:00'),
    RequestQueueLimit: wholeNumber(0, 999, "One partition's waiting requests")
      .meta({ description: "One partition's waiting requests", range: '0 to MaxConcurrentRequests minus 1' })
      .default(0),
  })
  .meta({ description: 'Concurrency limit and per-partition token bucket' });
