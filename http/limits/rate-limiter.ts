/**
 * The rate limiter of one HTTP surface (docs/security.md "Rate limits";
 * docs/admin-api.md "The pipeline"): the pipeline's limit stage, after
 * authentication and before authorization. Owns partitioning, the order of the
 * two limiters, the 429 answer and the startup description of what is in
 * force.
 *
 * Order: the partition's token bucket first, then the surface's concurrency
 * limiter. The bucket is what keeps one client from crowding out the rest,
 * so it stands in front of the shared resource: a client past its budget is
 * refused (with Retry-After) without ever occupying a place in the shared
 * concurrency queue, and waiting for a token holds no concurrency permit.
 * A token pays for the attempt, as in .NET's chained limiters: it is not
 * given back when the concurrency limiter then refuses, so a client that
 * hammers a saturated server soon meets its own bucket and is told when to
 * come back.
 *
 * Partitions: on the MCP surface one bucket per API key name, per
 * client-certificate profile, and one shared anonymous bucket; on the
 * administrative surface one bucket for every caller. Each surface has its
 * own limiter, so the two never draw on each other. Buckets are made on
 * first use and dropped when full and idle (a full idle bucket is a new
 * one), so memory follows the clients in flight, not every client seen.
 *
 * Imported by the listeners.
 */
import type { ServerResponse } from 'node:http';
import type { Config } from '../../config/schema.ts';
import { formatTimeSpan } from '../../config/schema/time-span.ts';
import { type LimiterClock, systemLimiterClock } from './clock.ts';
import { createConcurrencyLimiter, type Permit } from './concurrency.ts';
import { type AdmissionResult, limitMetrics, POLICY, type Surface } from './metrics.ts';
import { createTokenBucket, type TokenBucket } from './token-bucket.ts';
import { Codes } from '../../runtime/errors.ts';

export type { Surface } from './metrics.ts';

export type RateLimitingSettings = Config['McpEndpoint']['RateLimiting'];

declare const partitionKey: unique symbol;
/** A partition key; only `partitionFor` makes one, so nothing a caller writes becomes a key. */
export type PartitionKey = string & { readonly [partitionKey]: true };

/** What authentication established about a request, as far as partitioning cares. */
export type PartitionAdmission =
  | { readonly kind: 'api-key'; readonly name: string }
  | { readonly kind: 'certificate-profile'; readonly name: string }
  /** Tokens, assertions, the unauthenticated posture, refused credentials, attachment redemptions. */
  | { readonly kind: 'other' };

/**
 * The partition of a request. MCP: `mcp:key:<name>`, `mcp:<profile:name>`,
 * `mcp:<anonymous>`. The key name carries a `key:` tag (the spec writes it
 * bare) because key names are free text: a key named `anonymous` or
 * `<profile:x>` must not share a bucket with anonymous callers or a profile.
 * Administrative surface: `admin`, whatever the admission.
 */
export function partitionFor(surface: Surface, admission: PartitionAdmission): PartitionKey {
  if (surface === 'admin') return 'admin' as PartitionKey;
  switch (admission.kind) {
    case 'api-key':
      return `mcp:key:${admission.name}` as PartitionKey;
    case 'certificate-profile':
      return `mcp:<profile:${admission.name}>` as PartitionKey;
    case 'other':
      return 'mcp:<anonymous>' as PartitionKey;
  }
}

export type Lease = { readonly ok: true; release(): void };
/** `retryAfterSeconds` is set (at least 1) only when the partition's bucket refused; null for the concurrency limit or a cancelled wait. */
export type Refusal = { readonly ok: false; readonly retryAfterSeconds: number | null };

export type RateLimiter = {
  /**
   * Admits a request or refuses it. May wait (in a bounded queue) when the
   * settings allow queueing; `signal` (client gone, request timeout) ends
   * the wait with a refusal. `release()` of a lease is idempotent.
   */
  acquire(partition: PartitionKey, options?: { signal?: AbortSignal }): Promise<Lease | Refusal>;
  /** Buckets held now (tests, diagnostics). */
  partitions(): number;
};

const NO_LIMIT: Lease = { ok: true, release: () => {} };

export function createRateLimiter(settings: RateLimitingSettings, options: { surface: Surface; clock?: LimiterClock }): RateLimiter {
  if (!settings.Enabled) {
    return { acquire: () => Promise.resolve(NO_LIMIT), partitions: () => 0 };
  }
  const clock = options.clock ?? systemLimiterClock;
  const surface = options.surface;
  const concurrency = createConcurrencyLimiter(settings);
  const buckets = new Map<string, TokenBucket>();
  const record = limitMetrics(surface);

  const bucketOf = (partition: PartitionKey): TokenBucket => {
    // The administrative surface has one bucket whatever the caller passes.
    const key = surface === 'admin' ? 'admin' : partition;
    let bucket = buckets.get(key);
    if (bucket === undefined) {
      // Sweeping only when a bucket is made keeps the cost off the common path;
      // the number of buckets is bounded by the configured credentials anyway.
      for (const [other, held] of buckets) if (held.isIdle()) buckets.delete(other);
      bucket = createTokenBucket(settings, clock);
      buckets.set(key, bucket);
    }
    return bucket;
  };

  const refuse = (result: AdmissionResult, retryAfterSeconds: number | null): Refusal => {
    record.decided(result);
    return { ok: false, retryAfterSeconds };
  };

  /** Waits in a queue, counted in the queue metrics; the outcome is the awaited value. */
  const wait = async <T>(settled: Promise<T>, served: (value: T) => boolean): Promise<T> => {
    const since = clock.now();
    record.queued(1);
    const value = await settled;
    record.queued(-1);
    record.timeInQueue(clock.now() - since, served(value) ? 'acquired' : 'request_canceled');
    return value;
  };

  return {
    async acquire(partition, { signal } = {}) {
      // A function, not a narrowed property: the signal can abort across every await below.
      const aborted = (): boolean => signal?.aborted === true;
      if (aborted()) return refuse('request_canceled', null);

      const token = bucketOf(partition).take(signal);
      if (token.kind === 'refused') return refuse('bucket_exhausted', Math.ceil(token.retryAfterMs / 1000));
      if (token.kind === 'queued' && !(await wait(token.granted, (granted) => granted))) return refuse('request_canceled', null);

      const slot = concurrency.take(signal);
      if (slot.kind === 'refused') return refuse('concurrency_exhausted', null);
      let permit: Permit | null;
      if (slot.kind === 'queued') permit = await wait(slot.permit, (p) => p !== null);
      else permit = slot.permit;
      if (permit === null) return refuse('request_canceled', null);
      if (aborted()) {
        // Aborted between the hand-over and now (e.g. the request timed out):
        // nobody would release a lease returned now.
        permit.release();
        return refuse('request_canceled', null);
      }

      record.decided('acquired');
      record.leased(1);
      const since = clock.now();
      const held = permit;
      let released = false;
      return {
        ok: true,
        release() {
          if (released) return;
          released = true;
          held.release();
          record.leased(-1);
          record.leaseEnded(clock.now() - since);
        },
      };
    },
    partitions: () => buckets.size,
  };
}

/**
 * The 429 of the spec: empty body, `Cache-Control: no-store`, `Retry-After`
 * only when the bucket refused. Does nothing when the response is already
 * answered or gone (a wait cancelled by the request timeout ends in a
 * refusal after the 504 went out).
 */
export function answerTooMany(res: ServerResponse, retryAfterSeconds: number | null): void {
  if (res.headersSent || res.writableEnded || res.destroyed) return;
  res.statusCode = Codes.E_HTTP_RATE_LIMITED.status;
  if (retryAfterSeconds !== null) res.setHeader('Retry-After', String(Math.max(1, Math.ceil(retryAfterSeconds))));
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Content-Length', 0);
  res.end();
}

export type LimitsInForce =
  | { readonly policy: string; readonly enabled: false }
  | {
      readonly policy: string;
      readonly enabled: true;
      readonly maxConcurrentRequests: number;
      readonly concurrencyQueueLimit: number;
      readonly partitioning: 'per client' | 'one bucket for all callers';
      readonly tokenCapacity: number;
      readonly tokensPerReplenishmentPeriod: number;
      /** As the configuration writes it, `hh:mm:ss`. */
      readonly replenishmentPeriod: string;
      readonly requestQueueLimit: number;
    };

/**
 * The fields of the one startup line per enabled endpoint saying which
 * limits are in force (log it once, e.g. `log.info(fields, 'rate limits in force')`).
 * Disabled limits are described too; the startup warning for them is
 * `config/posture.ts`'s.
 */
export function describeLimits(settings: RateLimitingSettings, surface: Surface): LimitsInForce {
  const policy = POLICY[surface];
  if (!settings.Enabled) return { policy, enabled: false };
  return {
    policy,
    enabled: true,
    maxConcurrentRequests: settings.MaxConcurrentRequests,
    concurrencyQueueLimit: settings.ConcurrencyQueueLimit,
    partitioning: surface === 'mcp' ? 'per client' : 'one bucket for all callers',
    tokenCapacity: settings.TokenCapacity,
    tokensPerReplenishmentPeriod: settings.TokensPerReplenishmentPeriod,
    replenishmentPeriod: formatTimeSpan(settings.ReplenishmentPeriod),
    requestQueueLimit: settings.RequestQueueLimit,
  };
}
