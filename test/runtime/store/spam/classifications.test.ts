/**
 * The spam store: one run per account (asking again returns the run under
 * way), a segment recorded twice counts once, verdicts are recorded with
 * their position, and the arrival cursor never moves back.
 */
import t from 'tap';
import { migrate } from '../../../../runtime/store/migrate.ts';
import { openStore } from '../../../../runtime/store/open.ts';
import { many } from '../../../../runtime/store/rows.ts';
import {
  arrivalCursor,
  type Classification,
  endSpamRun,
  latestSpamRun,
  outstandingSpamRuns,
  recordArrivalVerdict,
  recordRunSegment,
  requestSpamRun,
  setArrivalCursor,
} from '../../../../runtime/store/spam/classifications.ts';

function fresh(t: { teardown(fn: () => unknown): void }) {
  const db = openStore({ database: ':memory:', busyTimeoutMs: 1000, synchronous: 'Full' });
  t.teardown(() => db.close());
  migrate(db);
  return db;
}

const verdict = (messageId: number, spam: boolean): Classification => ({
  messageId,
  verdict: spam ? 'spam' : 'ham',
  score: spam ? 1 : 0.1,
  source: 'engine',
  applied: spam,
  changeJobs: spam ? [messageId * 10] : [],
  conclusion: null,
});

t.test('one run per account; a segment counts once; ending frees the account', (t) => {
  const db = fresh(t);
  const scope = () => ({ throughId: 9, totalCount: 3 });
  const first = requestSpamRun(db, 'alice', true, 1_000, scope);
  t.equal(first.started, true);
  const again = requestSpamRun(db, 'alice', false, 2_000, scope);
  t.equal(again.started, false, 'the run under way is returned');
  t.equal(again.run.runId, first.run.runId);
  t.equal(again.run.apply, true, 'as it was asked');
  t.equal(requestSpamRun(db, 'bob', false, 2_000, scope).started, true, 'another account has its own');

  t.equal(recordRunSegment(db, first.run.runId, 'alice', [verdict(3, true), verdict(5, false)], 5, 3_000), true);
  t.equal(recordRunSegment(db, first.run.runId, 'alice', [verdict(3, true), verdict(5, false)], 5, 3_000), false, 'recorded twice: no change');
  t.match(latestSpamRun(db, 'alice'), { lastMessageId: 5, judgedCount: 2, spamCount: 1, changesCount: 1 });
  t.equal(many(db.prepare("SELECT id FROM spam_classifications WHERE account_id = 'alice'")).length, 2, 'each verdict recorded once');
  t.same(
    outstandingSpamRuns(db).map((r) => r.account),
    ['alice', 'bob'],
  );
  t.equal(endSpamRun(db, first.run.runId, 4_000), true);
  t.equal(requestSpamRun(db, 'alice', false, 5_000, scope).started, true, 'a new run once the last ended');
  t.end();
});

t.test('the arrival cursor moves with each verdict and never back', (t) => {
  const db = fresh(t);
  t.equal(arrivalCursor(db, 'alice'), null);
  setArrivalCursor(db, 'alice', 7, 1);
  recordArrivalVerdict(db, 'alice', verdict(9, true), 2);
  t.equal(arrivalCursor(db, 'alice'), 9);
  setArrivalCursor(db, 'alice', 4, 3);
  t.equal(arrivalCursor(db, 'alice'), 9, 'never back');
  const rows = many<{ run_id: number | null; change_jobs: string }>(db.prepare('SELECT run_id, change_jobs FROM spam_classifications'));
  t.same(rows, [{ run_id: null, change_jobs: '[90]' }]);
  t.end();
});
