/**
 * The jobs store on a scratch database: enqueue is idempotent per key while
 * a job is live (queued, running, dead); an attempt failure goes back to
 * queued with its count, code and sentence; a dead letter keeps its id and
 * key through retry (attempts given back) and drop (record kept, key free
 * again); each transition refuses the states it does not leave from; the
 * dead-letter listing is newest first with a total keyset order and honours
 * its account and type filters. Also the re-derivation run's hook and end.
 */
import t from 'tap';
import {
  JOB_RETRY_BASE_MS,
  MAX_JOB_ATTEMPTS,
  completeJob,
  deadLetterJob,
  deadLetters,
  dropJob,
  enqueueJob,
  giveAttemptsBack,
  jobById,
  jobIdOf,
  jobRetryDelayMs,
  jobRowOf,
  liveJobByKey,
  liveJobs,
  recordAttemptFailure,
  retryJob,
  startJob,
  type JobFailure,
} from '../../../runtime/store/jobs.ts';
import { endRederivation, rederivationRecordById, requestRederivation } from '../../../runtime/store/mailbox/rederivation-runs.ts';
import { one } from '../../../runtime/store/rows.ts';
import { freshStore } from './mailbox/helpers.ts';

const busy: JobFailure = { classification: 'database-busy', code: 'SQLITE_BUSY', reason: 'The database stayed locked.' };

t.test('policy: five attempts, 1 s doubling; job ids are j and the row id', async (t) => {
  t.equal(MAX_JOB_ATTEMPTS, 5);
  t.same([1, 2, 3, 4].map(jobRetryDelayMs), [JOB_RETRY_BASE_MS, 2_000, 4_000, 8_000]);
  t.equal(jobIdOf(42), 'j42');
  t.equal(jobRowOf('j42'), 42);
  for (const bad of ['42', 'j0', 'j-1', 'J42', 'j42 ', 'j1e3', 'j1234567890123456', '']) t.equal(jobRowOf(bad), null, `${JSON.stringify(bad)} names no job`);
});

t.test('lifecycle: enqueue, attempts, dead letter, retry, drop', async (t) => {
  const db = freshStore(t);
  const key = 'rederivation:alice:*:1';
  const first = enqueueJob(db, { type: 'rederivation', accountId: 'alice', idempotencyKey: key, payload: { run: 1 }, now: 100 });
  t.ok(first.created);
  t.match(first.job, { type: 'rederivation', accountId: 'alice', state: 'queued', attemptCount: 0, enqueuedAt: 100, dueAt: 100, payload: { run: 1 } });
  const id = first.job.id;
  const again = enqueueJob(db, { type: 'rederivation', accountId: 'alice', idempotencyKey: key, payload: { run: 1 }, now: 200 });
  t.same([again.created, again.job.id, again.job.enqueuedAt], [false, id, 100], 'one live job per key: asking again returns it');

  t.ok(startJob(db, id, 110));
  t.equal(jobById(db, id)!.state, 'running');
  t.ok(recordAttemptFailure(db, id, { attempts: 1, failure: busy, dueAt: 1_110 }));
  t.match(jobById(db, id), {
    state: 'queued',
    attemptCount: 1,
    dueAt: 1_110,
    failureClass: 'database-busy',
    failureCode: 'SQLITE_BUSY',
    failureReason: busy.reason,
  });
  t.ok(startJob(db, id, 1_200));
  t.ok(giveAttemptsBack(db, id), 'an attempt that succeeds gives the count back');
  t.equal(jobById(db, id)!.attemptCount, 0);
  t.notOk(giveAttemptsBack(db, id), 'nothing to give back');

  t.ok(deadLetterJob(db, id, { attempts: MAX_JOB_ATTEMPTS, failure: busy, now: 2_000 }));
  t.match(jobById(db, id), { state: 'dead', attemptCount: 5, deadLetteredAt: 2_000, failureCode: 'SQLITE_BUSY' });
  t.same(liveJobByKey(db, key)?.id, id, 'a dead letter is still the live job of its key');
  t.equal(
    enqueueJob(db, { type: 'rederivation', accountId: 'alice', idempotencyKey: key, payload: { run: 1 }, now: 2_100 }).created,
    false,
    'so a new enqueue does not start a second',
  );
  t.notOk(startJob(db, id, 2_100), 'a dead letter does not start by itself');
  t.notOk(completeJob(db, id, 2_100));
  t.notOk(recordAttemptFailure(db, id, { attempts: 6, failure: busy, dueAt: 3_000 }));
  t.same(
    liveJobs(db, 'alice', 'rederivation').map((j) => j.state),
    ['dead'],
    'listed among the live jobs, for the actor to leave alone',
  );

  t.ok(retryJob(db, id, 3_000));
  t.match(
    jobById(db, id),
    { id, idempotencyKey: key, state: 'queued', attemptCount: 0, dueAt: 3_000, deadLetteredAt: null, failureCode: 'SQLITE_BUSY' },
    'same row, same key, attempts given back; the last failure stays on record',
  );
  t.notOk(retryJob(db, id, 3_100), 'only a dead letter is retried');
  t.notOk(dropJob(db, id, 3_100), 'only a dead letter is dropped');

  t.ok(deadLetterJob(db, id, { attempts: 5, failure: busy, now: 4_000 }));
  t.ok(dropJob(db, id, 5_000));
  t.match(jobById(db, id), { state: 'dropped', droppedAt: 5_000, deadLetteredAt: 4_000 }, 'the record is kept');
  t.equal(one<{ ended_at: number }>(db.prepare('SELECT ended_at FROM jobs WHERE id = ?'), [id])!.ended_at, 5_000);
  t.notOk(dropJob(db, id, 5_100));
  t.notOk(retryJob(db, id, 5_100), 'a dropped job never runs');
  t.equal(liveJobByKey(db, key), null, 'a dropped job holds its key no longer');
  const next = enqueueJob(db, { type: 'rederivation', accountId: 'alice', idempotencyKey: key, payload: { run: 1 }, now: 6_000 });
  t.ok(next.created && next.job.id !== id, 'the key may be enqueued again, as a new job');
  t.ok(completeJob(db, next.job.id, 7_000));
  t.equal(jobById(db, next.job.id)!.state, 'done');
  t.same(liveJobs(db, 'alice', 'rederivation'), []);
  t.equal(jobById(db, 999), null);
});

t.test('dead letters: newest first, total order, filters, keyset', async (t) => {
  const db = freshStore(t);
  const dead = (account: string, type: string, at: number): number => {
    const { job } = enqueueJob(db, {
      type: type as 'rederivation',
      accountId: account,
      idempotencyKey: `${type}:${account}:${at}:${Math.random()}`,
      payload: {},
      now: 1,
    });
    deadLetterJob(db, job.id, { attempts: 5, failure: busy, now: at });
    return job.id;
  };
  const a1 = dead('alice', 'rederivation', 10);
  const a2 = dead('alice', 'rederivation', 20);
  const a3 = dead('alice', 'rederivation', 20); // same instant: id breaks the tie
  const b1 = dead('bob', 'rederivation', 15);
  const other = dead('alice', 'a-later-type', 30);
  enqueueJob(db, { type: 'rederivation', accountId: 'alice', idempotencyKey: 'live', payload: {}, now: 1 });
  const dropped = dead('alice', 'rederivation', 40);
  dropJob(db, dropped, 41);

  const all = { accounts: ['alice', 'bob'], types: ['rederivation'], account: null, after: null, limit: 50 };
  t.same(
    deadLetters(db, all).map((j) => j.id),
    [a3, a2, b1, a1],
    'newest first, then by id; not a live, a dropped or an unknown-type job',
  );
  t.same(
    deadLetters(db, { ...all, accounts: ['alice'] }).map((j) => j.id),
    [a3, a2, a1],
    'only configured accounts',
  );
  t.same(
    deadLetters(db, { ...all, account: 'bob' }).map((j) => j.id),
    [b1],
  );
  t.same(
    deadLetters(db, { ...all, types: ['a-later-type'] }).map((j) => j.id),
    [other],
  );

  const walked: number[] = [];
  let after: { deadLetteredAt: number; id: number } | null = null;
  for (let i = 0; i < 10; i++) {
    const page = deadLetters(db, { ...all, after, limit: 1 });
    if (page.length === 0) break;
    walked.push(page[0]!.id);
    after = { deadLetteredAt: page[0]!.deadLetteredAt!, id: page[0]!.id };
  }
  t.same(walked, [a3, a2, b1, a1], 'a walk of one per page visits each once, across the tie');
});

t.test('a re-derivation run enqueues its job in its own transaction, and a dropped run ends where it stood', async (t) => {
  const db = freshStore(t);
  let jobId = 0;
  const record = requestRederivation(db, 'alice', null, 1_000, (r) => {
    jobId = enqueueJob(db, { type: 'rederivation', accountId: 'alice', idempotencyKey: `k${r.runId}`, payload: { run: r.runId }, now: 1_000 }).job.id;
  });
  t.ok(record.started && jobId > 0);
  t.throws(
    () =>
      requestRederivation(db, 'bob', null, 1_000, () => {
        throw new Error('enqueue failed');
      }),
    /enqueue failed/,
  );
  t.equal(one<{ n: number }>(db.prepare("SELECT count(*) AS n FROM rederivation_runs WHERE account_id = 'bob'"))!.n, 0, 'no run without its job');
  let called = false;
  t.equal(requestRederivation(db, 'alice', null, 2_000, () => (called = true)).started, false);
  t.notOk(called, 'the hook runs only for a new run');

  t.ok(endRederivation(db, record.runId, 3_000));
  t.match(rederivationRecordById(db, record.runId), {
    carriage: 'stopped',
    lastMessageId: null,
    run: { isOutstanding: false, endedAt: new Date(3_000).toISOString() },
  });
  t.notOk(endRederivation(db, record.runId, 4_000), 'an ended run stays as it ended');
  t.equal(requestRederivation(db, 'alice', null, 5_000).started, true, 'the scope starts a new run');
});
