/**
 * The progress figures every long work reports (runtime/work-progress.ts):
 * the rate over the last 30 s from spans of work done, a span reaching back
 * past the window counted for its part inside it, too little measured giving
 * no rate; the estimate from it; spans from batch instants.
 */
import t from 'tap';
import { RecentWork, ratePerSecond, spansBetween, workProgress } from '../../runtime/work-progress.ts';

t.test('the rate over the window', async (t) => {
  t.equal(ratePerSecond([], 10_000), null, 'nothing done: no rate');
  t.equal(ratePerSecond([{ from: 9_500, to: 10_000, count: 50 }], 10_000), null, 'half a second measured is too little');
  t.equal(ratePerSecond([{ from: 8_000, to: 10_000, count: 50 }], 10_000), 25);
  t.equal(ratePerSecond([{ from: 8_000, to: 10_000, count: 50 }], 12_000), 12.5, 'a pause since counts');
  // 100 over 60 s, half of it inside the 30 s window: 50 over 30 s.
  t.equal(ratePerSecond([{ from: 0, to: 60_000, count: 100 }], 60_000), 50 / 30, 'a span reaching back past the window counts for its part inside');
  t.equal(ratePerSecond([{ from: 0, to: 10_000, count: 100 }], 100_000), null, 'nothing in the window: no rate');
});

t.test('spans between batch instants, and the estimate', async (t) => {
  t.same(
    spansBetween([
      { at: 1_000, count: 20 },
      { at: 2_000, count: 30 },
      { at: 4_000, count: 40 },
    ]),
    [
      { from: 1_000, to: 2_000, count: 30 },
      { from: 2_000, to: 4_000, count: 40 },
    ],
    'the first batch only opens the first span: its start is not known',
  );
  t.same(workProgress(300, 1_000, 70), { completedEmailCount: 300, totalEmailCount: 1_000, emailsPerSecond: 70, secondsLeft: 10 });
  t.same(workProgress(300, 1_000, 1 / 3), { completedEmailCount: 300, totalEmailCount: 1_000, emailsPerSecond: 0.3, secondsLeft: 2_100 }, 'rounded up');
  t.same(workProgress(300, null, 70).secondsLeft, null, 'no total: no estimate');
  t.same(workProgress(300, 1_000, null).secondsLeft, null, 'no rate: no estimate');
  t.same(workProgress(300, 1_000, 0).secondsLeft, null, 'at a standstill: no estimate');
  t.same(workProgress(1_000, 1_000, null).secondsLeft, 0, 'nothing left');
});

t.test('recent work keeps only its window', async (t) => {
  const recent = new RecentWork(30_000);
  recent.add({ from: 0, to: 2_000, count: 10 });
  t.equal(recent.perSecond(2_000), 5);
  recent.add({ from: 100_000, to: 101_000, count: 0 });
  recent.add({ from: 100_000, to: 102_000, count: 4 });
  t.equal(recent.perSecond(102_000), 2, 'the old span is gone; an empty one was never kept');
});
