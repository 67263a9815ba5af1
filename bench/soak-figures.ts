/**
 * The soak benchmark's arithmetic (scenarios/soak.ts): a least-squares
 * slope with its standard error, percentiles of a minute's samples, and the
 * drift of a percentile between the first and the last minutes after the
 * warm-up. Pure functions, so the figures can be checked by hand.
 */

export type Slope = {
  /** Units of y per unit of x (MiB per minute). */
  slope: number;
  /** The slope's standard error: how far noise alone moves it with these points (NaN under three points). */
  standardError: number;
  points: number;
};

/** Ordinary least squares of y on x. */
export function leastSquares(points: ReadonlyArray<readonly [number, number]>): Slope {
  const n = points.length;
  if (n < 2) return { slope: Number.NaN, standardError: Number.NaN, points: n };
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  const sxx = points.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  const sxy = points.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0);
  const slope = sxy / sxx;
  if (n < 3) return { slope, standardError: Number.NaN, points: n };
  const residuals = points.reduce((s, [x, y]) => s + (y - (my + slope * (x - mx))) ** 2, 0);
  return { slope, standardError: Math.sqrt(residuals / (n - 2) / sxx), points: n };
}

/** The nearest-rank percentile (NaN without samples). */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export type Drift = { first: number; last: number; ratio: number; minutes: number };

/**
 * p99 of the first `k` minutes after the warm-up (their samples pooled)
 * against p99 of the last `k`, where k is a third of those minutes, from 1
 * to 3: a trend, not one noisy minute. Under two minutes there is nothing
 * to compare: the ratio is NaN.
 */
export function p99Drift(minutes: ReadonlyArray<readonly number[]>): Drift {
  if (minutes.length < 2) return { first: Number.NaN, last: Number.NaN, ratio: Number.NaN, minutes: minutes.length };
  const k = Math.max(1, Math.min(3, Math.floor(minutes.length / 3)));
  const first = percentile(minutes.slice(0, k).flat(), 99);
  const last = percentile(minutes.slice(-k).flat(), 99);
  return { first, last, ratio: last / first, minutes: k };
}
