/**
 * Time spans as operators write them.
 */
import t from 'tap';
import { formatTimeSpan, parseTimeSpan } from '../../../config/schema/time-span.ts';
import { problemLines } from '../fixtures.ts';

t.test('hh:mm:ss, with optional days and milliseconds', (t) => {
  t.equal(parseTimeSpan('00:01:00'), 60_000);
  t.equal(parseTimeSpan('01:00:00'), 3_600_000);
  t.equal(parseTimeSpan('1.00:00:00'), 86_400_000);
  t.equal(parseTimeSpan('00:00:00.250'), 250);
  t.equal(parseTimeSpan('00:00:00.5'), 500);
  for (const bad of ['1:00', '24:00:00', '00:60:00', '00:00:60', '60', '00:01:00Z', '-00:01:00', '']) t.equal(parseTimeSpan(bad), null, bad);
  for (const ms of [0, 250, 60_000, 86_400_000 + 61_001]) t.equal(parseTimeSpan(formatTimeSpan(ms)), ms);
  t.equal(formatTimeSpan(90_061_001), '1.01:01:01.001');
  t.end();
});

t.test('a malformed span says how to write one', (t) => {
  t.same(problemLines({ MailSynchronization: { Interval: '5m' } }), [
    'MailSynchronization:Interval: must be a time span written hh:mm:ss, with an optional day count in front (e.g. 00:01:00 or 1.00:00:00)',
  ]);
  t.same(problemLines({ MailSynchronization: { Interval: 300 } }), [
    'MailSynchronization:Interval: must be a time span written hh:mm:ss, with an optional day count in front (e.g. 00:01:00 or 1.00:00:00)',
  ]);
  t.end();
});
