/** `Retry-After` read as seconds or an HTTP date; anything else is absent, so our own backoff applies. */
import t from 'tap';
import { retryAfterMs } from '../../../runtime/http-retry/retry-after.ts';

const NOW = Date.parse('2025-03-01T12:00:00Z');

t.test('seconds and dates', async (t) => {
  t.equal(retryAfterMs('0', NOW), 0);
  t.equal(retryAfterMs(' 7 ', NOW), 7_000);
  t.equal(retryAfterMs('Sat, 01 Mar 2025 12:00:30 GMT', NOW), 30_000);
  t.equal(retryAfterMs('Sat, 01 Mar 2025 11:00:00 GMT', NOW), 0, 'a date already past: at once');
  t.equal(retryAfterMs(['3', '9'], NOW), 3_000, 'the first of repeated headers');
});

t.test('absent or unusable', async (t) => {
  for (const value of [undefined, '', '-1', '1.5', '1e3', 'soon', '12 Mar', 'Sat, 99 Foo 2025 nonsense']) {
    t.equal(retryAfterMs(value, NOW), null, JSON.stringify(value));
  }
});
