/**
 * The rate-limiting metrics (docs/security.md "Rate limits": OpenTelemetry
 * instruments through `@opentelemetry/api`). They mirror ASP.NET Core's set,
 * under the service's own `service.` prefix:
 *
 * - `service.rate_limiting.requests` (counter): every admission decision,
 *   `result` = `acquired`, `bucket_exhausted`, `concurrency_exhausted` or
 *   `request_canceled` — the rejections are every result but `acquired`;
 * - `service.rate_limiting.active_request_leases` (up-down counter);
 * - `service.rate_limiting.queued_requests` (up-down counter, both queues);
 * - `service.rate_limiting.request.time_in_queue` (histogram, seconds);
 * - `service.rate_limiting.request_lease.duration` (histogram, seconds).
 *
 * Every point carries `policy` = `Service:Mcp:RateLimiting` or
 * `Service:Admin:RateLimiting`. Never a partition key: it names a credential.
 *
 * The API has no proxy meter: an instrument made before the process installs
 * its MeterProvider records nothing, so each is looked up at use through
 * runtime/telemetry/instruments.ts (names, units and descriptions are the
 * catalogue's), never held.
 *
 * Imported by http/limits/rate-limiter.ts only.
 */
import type { Attributes } from '@opentelemetry/api';
import { histogram, upDownCounter, counter } from '../../runtime/telemetry/instruments.ts';

export type Surface = 'mcp' | 'admin';

export const POLICY: Readonly<Record<Surface, string>> = {
  mcp: 'Service:Mcp:RateLimiting',
  admin: 'Service:Admin:RateLimiting',
};

export type AdmissionResult = 'acquired' | 'bucket_exhausted' | 'concurrency_exhausted' | 'request_canceled';

export type LimitMetrics = {
  decided(result: AdmissionResult): void;
  queued(delta: 1 | -1): void;
  timeInQueue(ms: number, result: AdmissionResult): void;
  leased(delta: 1 | -1): void;
  leaseEnded(ms: number): void;
};

export function limitMetrics(surface: Surface): LimitMetrics {
  const policy: Attributes = { policy: POLICY[surface] };
  return {
    decided: (result) => counter('rateLimitRequests').add(1, { ...policy, result }),
    queued: (delta) => upDownCounter('rateLimitQueued').add(delta, policy),
    timeInQueue: (ms, result) => histogram('rateLimitTimeInQueue').record(ms / 1000, { ...policy, result }),
    leased: (delta) => upDownCounter('rateLimitActiveLeases').add(delta, policy),
    leaseEnded: (ms) => histogram('rateLimitLeaseDuration').record(ms / 1000, policy),
  };
}
