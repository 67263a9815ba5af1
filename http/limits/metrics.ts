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
 * The first three are tallies kept here as plain integers, per surface and
 * for the whole process, and read at each collection by observable
 * instruments (runtime/telemetry/instruments.ts `observeAtCollection`): they
 * export the same series as a counter and up-down counters would, without
 * three SDK records (each hashing its labels) on every request
 * (docs/performance.md "Telemetry"). The histograms are recorded, looked up
 * at use (the API has no proxy meter: an instrument made before the process
 * installs its MeterProvider records nothing); names, units and descriptions
 * are the catalogue's. Label sets are made once and frozen.
 *
 * Imported by http/limits/rate-limiter.ts only.
 */
import type { Attributes, ObservableResult } from '@opentelemetry/api';
import { histogram, observeAtCollection } from '../../runtime/telemetry/instruments.ts';

export type Surface = 'mcp' | 'admin';

export const POLICY: Readonly<Record<Surface, string>> = {
  mcp: 'Service:Mcp:RateLimiting',
  admin: 'Service:Admin:RateLimiting',
};

const RESULTS = ['acquired', 'bucket_exhausted', 'concurrency_exhausted', 'request_canceled'] as const;
export type AdmissionResult = (typeof RESULTS)[number];

export type LimitMetrics = {
  decided(result: AdmissionResult): void;
  queued(delta: 1 | -1): void;
  timeInQueue(ms: number, result: AdmissionResult): void;
  leased(delta: 1 | -1): void;
  leaseEnded(ms: number): void;
};

/** What a surface's limiters hold and decided, since the process started. */
type Tally = { active: number; queued: number; readonly decided: Record<AdmissionResult, number> };

type Labels = { readonly policy: Attributes; readonly result: Readonly<Record<AdmissionResult, Attributes>> };

function labelsOf(surface: Surface): Labels {
  const policy = POLICY[surface];
  const result = {} as Record<AdmissionResult, Attributes>;
  for (const r of RESULTS) result[r] = Object.freeze({ policy, result: r });
  return Object.freeze({ policy: Object.freeze({ policy }), result: Object.freeze(result) });
}

const LABELS: Readonly<Record<Surface, Labels>> = { mcp: labelsOf('mcp'), admin: labelsOf('admin') };

/** The surfaces a limiter was made for in this process: only theirs are observed. */
const tallies = new Map<Surface, Tally>();

function observeTallies(): void {
  const each = (observe: (result: ObservableResult, surface: Surface, tally: Tally) => void) => (result: ObservableResult) => {
    for (const [surface, tally] of tallies) observe(result, surface, tally);
  };
  observeAtCollection(
    'rateLimitRequests',
    each((result, surface, tally) => {
      // A result never decided has no series, as a counter never added to.
      for (const r of RESULTS) if (tally.decided[r] > 0) result.observe(tally.decided[r], LABELS[surface].result[r]);
    }),
  );
  observeAtCollection(
    'rateLimitActiveLeases',
    each((result, surface, tally) => result.observe(tally.active, LABELS[surface].policy)),
  );
  observeAtCollection(
    'rateLimitQueued',
    each((result, surface, tally) => result.observe(tally.queued, LABELS[surface].policy)),
  );
}

function tallyOf(surface: Surface): Tally {
  if (tallies.size === 0) observeTallies();
  let tally = tallies.get(surface);
  if (tally === undefined) {
    tally = { active: 0, queued: 0, decided: { acquired: 0, bucket_exhausted: 0, concurrency_exhausted: 0, request_canceled: 0 } };
    tallies.set(surface, tally);
  }
  return tally;
}

export function limitMetrics(surface: Surface): LimitMetrics {
  const tally = tallyOf(surface);
  const labels = LABELS[surface];
  return {
    decided: (result) => {
      tally.decided[result] += 1;
    },
    queued: (delta) => {
      tally.queued += delta;
    },
    timeInQueue: (ms, result) => histogram('rateLimitTimeInQueue').record(ms / 1000, labels.result[result]),
    leased: (delta) => {
      tally.active += delta;
    },
    leaseEnded: (ms) => histogram('rateLimitLeaseDuration').record(ms / 1000, labels.policy),
  };
}
