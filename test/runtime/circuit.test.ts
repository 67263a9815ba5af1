/** The circuit over a fake clock: opening, one trial at a time when half-open, and outcomes that leave it alone. */
import t from 'tap';
import { Circuit } from '../../runtime/circuit.ts';
import { fakeClock } from '../../runtime/clock.ts';

t.test('opens after the failures in a row; a success in between starts the count again', async (t) => {
  const clock = fakeClock(100);
  const c = new Circuit({ failuresToOpen: 2, coolDownMs: 50 }, clock);
  t.same(c.health(), { state: 'healthy', since: null, lastFailure: null, consecutiveFailures: 0 });
  t.equal(c.failed('timeout'), null);
  t.equal(c.succeeded(), null);
  t.equal(c.failed('timeout'), null);
  clock.advance(5);
  t.equal(c.failed('reset'), 'opened');
  t.same(c.health(), { state: 'open', since: 105, lastFailure: 'reset', consecutiveFailures: 2 });
  t.notOk(c.admit());
});

t.test('half-open lets one trial out at a time; a trial with no verdict lets the next one try', async (t) => {
  const clock = fakeClock(0);
  const c = new Circuit({ failuresToOpen: 1, coolDownMs: 50 }, clock);
  c.failed('http-500');
  clock.advance(50);
  t.ok(c.admit(), 'the trial');
  t.notOk(c.admit(), 'no second call while the trial is out');
  t.equal(c.health().state, 'failing');
  c.released();
  t.ok(c.admit(), 'the next call is the trial');
  t.equal(c.succeeded(), 'closed');
  t.same(c.health(), { state: 'healthy', since: 50, lastFailure: null, consecutiveFailures: 0 });
  t.ok(c.admit());
});
