/**
 * The soak benchmark's verdicts rest on this arithmetic (docs/benchmarks.md "soak"): a slope that
 * recovers a known trend through noise, a standard error that is zero on a straight line and grows
 * with scatter, and a p99 drift that compares pooled minutes and refuses to compare one with itself.
 */
import t from 'tap';
import { leastSquares, p99Drift, percentile } from '../../bench/soak-figures.ts';

t.test('a straight line: its slope exactly, no error', async (t) => {
  const line = leastSquares([0, 1, 2, 3, 4, 5].map((x) => [x, 200 + 0.75 * x] as const));
  t.equal(line.slope, 0.75);
  t.equal(line.standardError, 0);
  t.equal(line.points, 6);
});

t.test('a flat process with a sawtooth: slope near zero, error says how near', async (t) => {
  // ±4 MiB alternating around 250 MiB over 25 minutes: no trend.
  const saw = leastSquares(Array.from({ length: 25 }, (_, i) => [i + 6, 250 + (i % 2 === 0 ? 4 : -4)] as const));
  t.ok(Math.abs(saw.slope) < 0.2, `slope ${saw.slope}`);
  t.ok(saw.standardError > 0 && saw.standardError < 0.2, `standard error ${saw.standardError}`);
  // The same sawtooth on a leak of 1 MiB/min is told apart.
  const leak = leastSquares(Array.from({ length: 25 }, (_, i) => [i + 6, 250 + (i + 6) + (i % 2 === 0 ? 4 : -4)] as const));
  t.ok(Math.abs(leak.slope - 1) < 0.2, `slope ${leak.slope}`);
});

t.test('too few points: no slope, or no error', async (t) => {
  t.ok(Number.isNaN(leastSquares([[1, 2]]).slope));
  const two = leastSquares([
    [1, 2],
    [2, 5],
  ]);
  t.equal(two.slope, 3);
  t.ok(Number.isNaN(two.standardError));
});

t.test('percentile: nearest rank', async (t) => {
  const hundred = Array.from({ length: 100 }, (_, i) => i + 1);
  t.equal(percentile(hundred, 99), 99);
  t.equal(percentile(hundred, 50), 50);
  t.ok(Number.isNaN(percentile([], 99)));
});

t.test('p99 drift: first third against last third, pooled', async (t) => {
  const minute = (ms: number) => Array.from({ length: 100 }, () => ms);
  const drift = p99Drift([minute(10), minute(10), minute(10), minute(12), minute(12), minute(20), minute(20), minute(20), minute(20)]);
  t.equal(drift.minutes, 3);
  t.equal(drift.first, 10);
  t.equal(drift.last, 20);
  t.equal(drift.ratio, 2);
  t.ok(Number.isNaN(p99Drift([minute(10)]).ratio), 'one minute is not compared with itself');
});
