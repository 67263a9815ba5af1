/**
 * The question allowance of `ask_mail` (migration 0010): taken one at a
 * time up to the bound, per epoch-aligned period, and durable: a connection
 * opened afresh on the same file (a restarted service) sees what was taken.
 */
import { join } from 'node:path';
import t from 'tap';
import { allowancePeriodStart, questionsTaken, takeQuestion } from '../../../../runtime/store/answering/allowance.ts';
import { migrate } from '../../../../runtime/store/migrate.ts';
import { openStore } from '../../../../runtime/store/open.ts';
import { scratchDir } from '../fixtures/scratch.ts';

const HOUR = 3_600_000;

t.test('questions are taken up to the bound, per period, and survive a reopening', async (t) => {
  const database = join(scratchDir(t, 'mailcairn-allowance-'), 'mail.db');
  const open = () => openStore({ database, busyTimeoutMs: 1000, synchronous: 'Full' });
  const first = open();
  migrate(first);
  const period = allowancePeriodStart(Date.parse('2026-11-26T10:17:00Z'), HOUR);
  t.equal(period, Date.parse('2026-11-26T10:00:00Z'), 'periods are aligned to the epoch');
  t.equal(questionsTaken(first, period), 0);
  t.ok(takeQuestion(first, period, 3));
  t.ok(takeQuestion(first, period, 3));
  first.close();

  const second = open();
  t.teardown(() => second.close());
  t.equal(questionsTaken(second, period), 2, 'what was taken is still taken after a reopening');
  t.ok(takeQuestion(second, period, 3), 'the third of three');
  t.notOk(takeQuestion(second, period, 3), 'none left: refused');
  t.equal(questionsTaken(second, period), 3, 'a refusal takes nothing');
  t.ok(takeQuestion(second, period + HOUR, 3), 'the next period has its own allowance');
  t.ok(takeQuestion(second, period, 4), 'a raised bound lets one more through');
});
