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

/** The median of the figures that are numbers (a side that could not be measured is NaN and left out); NaN when none is. */
export function median(values: readonly number[]): number {
  const sorted = values.filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
