/** Pure timing maths of the supervisor, with a fake clock and seeded randomness. */
import t from 'tap';
import { fakeClock, seededRandom } from '../../../runtime/clock.ts';
import { BackoffPolicy, attemptAfterExit, backoffDelay } from '../../../runtime/supervisor/backoff.ts';
import { IntensityPolicy, exceedsIntensity, recordRestart, type RestartHistory } from '../../../runtime/supervisor/intensity.ts';
import { WatchdogPolicy, isHung } from '../../../runtime/supervisor/watchdog.ts';

t.test('backoff grows exponentially, is capped, and jitters within its fraction', async (t) => {
  const policy = BackoffPolicy.parse({ baseMs: 1_000, factor: 2, maxMs: 30_000, jitter: 0 });
  t.same(
    [1, 2, 3, 4, 5, 6, 7].map((n) => backoffDelay(policy, n, seededRandom(1))),
    [1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000],
  );
  const jittered = BackoffPolicy.parse({ baseMs: 1_000, jitter: 0.2 });
  const random = seededRandom(42);
  const samples = Array.from({ length: 500 }, () => backoffDelay(jittered, 3, random));
  t.ok(
    samples.every((d) => d >= 3_200 && d <= 4_800),
    'within ±20% of 4 s',
  );
  t.ok(new Set(samples).size > 100, 'spread out, so restarts of many children do not align');
});

t.test('backoff resets only after proven uptime', async (t) => {
  const policy = BackoffPolicy.parse({ stableAfterMs: 60_000 });
  t.equal(attemptAfterExit(policy, 4, 59_999), 5, 'a child that connected and died quickly keeps growing');
  t.equal(attemptAfterExit(policy, 4, 60_000), 1, 'a minute up starts again from the base');
});

t.test('intensity: more than maxRestarts within the window gives up; old restarts age out', async (t) => {
  const policy = IntensityPolicy.parse({ maxRestarts: 3, windowMs: 10_000 });
  const clock = fakeClock(0);
  let history: RestartHistory = [];
  for (let i = 0; i < 3; i++) {
    history = recordRestart(policy, history, clock.now());
    t.equal(exceedsIntensity(policy, history, clock.now()), false);
    clock.advance(1_000);
  }
  history = recordRestart(policy, history, clock.now());
  t.equal(exceedsIntensity(policy, history, clock.now()), true, 'the fourth restart within 10 s');
  clock.advance(20_000);
  history = recordRestart(policy, history, clock.now());
  t.equal(exceedsIntensity(policy, history, clock.now()), false, 'after the window only the new restart counts');
  t.equal(history.length, 1);
});

t.test('watchdog: three missed heartbeats make a hang', async (t) => {
  const policy = WatchdogPolicy.parse({ heartbeatMs: 5_000, missedBeats: 3 });
  t.equal(isHung(policy, 0, 15_000), false);
  t.equal(isHung(policy, 0, 15_001), true);
});
