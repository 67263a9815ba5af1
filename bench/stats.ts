/** Percentiles and rates from recorded samples (milliseconds), via node:perf_hooks histograms. */
import { createHistogram } from 'node:perf_hooks';

export type Summary = { count: number; p50Us: number; p99Us: number; perSecond: number };

export function summarize(samplesMs: readonly number[], wallMs: number): Summary {
  const histogram = createHistogram();
  for (const ms of samplesMs) histogram.record(Math.max(1, Math.round(ms * 1_000_000))); // nanoseconds
  return {
    count: samplesMs.length,
    p50Us: round(histogram.percentile(50) / 1_000),
    p99Us: round(histogram.percentile(99) / 1_000),
    perSecond: Math.round((samplesMs.length / wallMs) * 1_000),
  };
}

export function round(n: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

export function formatBytes(n: number): string {
  if (n >= 1024 * 1024) return `${round(n / 1024 / 1024)} MiB`;
  if (n >= 1024) return `${round(n / 1024)} KiB`;
  return `${n} B`;
}
