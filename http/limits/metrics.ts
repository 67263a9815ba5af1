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
 * The API has no proxy meter: instruments made before the process installs
 * its MeterProvider record nothing, so they are made when a limiter is made
 * (after telemetry is set up), not when this module loads.
 *
 * Imported by http/limits/rate-limiter.ts only.
 */
import { metrics, type Attributes } from '@opentelemetry/api';

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
  const meter = metrics.getMeter('mailcairn');
  const policy: Attributes = { policy: POLICY[surface] };
  const requests = meter.createCounter('service.rate_limiting.requests', {
    description: 'Requests that reached the rate limiter, by result',
    unit: '{request}',
  });
  const active = meter.createUpDownCounter('service.rate_limiting.active_request_leases', {
    description: 'Requests holding a rate-limiter lease',
    unit: '{request}',
  });
  const queued = meter.createUpDownCounter('service.rate_limiting.queued_requests', {
    description: 'Requests waiting for a token or a concurrency permit',
    unit: '{request}',
  });
  const inQueue = meter.createHistogram('service.rate_limiting.request.time_in_queue', {
    description: 'Time a request waited in a rate-limiter queue',
    unit: 's',
  });
  const lease = meter.createHistogram('service.rate_limiting.request_lease.duration', {
    description: 'Time a request held its rate-limiter lease',
    unit: 's',
  });
  return {
    decided: (result) => requests.add(1, { ...policy, result }),
    queued: (delta) => queued.add(delta, policy),
    timeInQueue: (ms, result) => inQueue.record(ms / 1000, { ...policy, result }),
    leased: (delta) => active.add(delta, policy),
    leaseEnded: (ms) => lease.record(ms / 1000, policy),
  };
}
