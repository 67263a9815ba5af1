/**
 * The query pool's dead-letter page and job lookup: the answer's shape and
 * its next position, and what a lookup finds. A job of an account the
 * deployment no longer configures, or of a type this build does not have,
 * is neither listed nor found (the routes answer JobUnknown for it).
 */
import t from 'tap';
import { deadLetterPage, lookUpJob } from '../../../actors/mail-query/dead-letters.ts';
import { DeadLettersReply } from '../../../actors/mail-query/protocol/dead-letters.ts';
import { deadLetterJob, enqueueJob } from '../../../runtime/store/jobs.ts';
import { freshStore } from '../../runtime/store/mailbox/helpers.ts';

const failure = { classification: 'database-busy' as const, code: 'SQLITE_BUSY', reason: 'The database stayed locked.' };

t.test('page, next position and lookup', async (t) => {
  const db = freshStore(t);
  const dead = (account: string, type: string, at: number): number => {
    const { job } = enqueueJob(db, { type: type as 'rederivation', accountId: account, idempotencyKey: `${account}:${type}:${at}`, payload: {}, now: 5 });
    deadLetterJob(db, job.id, { attempts: 5, failure, now: at });
    return job.id;
  };
  const a = dead('alice', 'rederivation', 1_000);
  const b = dead('bob', 'rederivation', 2_000);
  const later = dead('alice', 'a-later-type', 3_000);

  const base = { type: 'mail-query.dead-letters' as const, accounts: ['alice', 'bob'], pageSize: 1 };
  const first = DeadLettersReply.parse(deadLetterPage(db, base));
  t.same(first, {
    jobs: [
      {
        job: `j${b}`,
        type: 'rederivation',
        account: 'bob',
        attemptCount: 5,
        failureClassification: 'database-busy',
        failureReason: failure.reason,
        enqueuedAt: new Date(5).toISOString(),
        deadLetteredAt: new Date(2_000).toISOString(),
      },
    ],
    next: [2_000, b],
  });
  const second = deadLetterPage(db, { ...base, after: first.next! });
  t.same([second.jobs.map((j) => j.job), second.next], [[`j${a}`], null], 'the last page says nothing follows');
  t.same(
    deadLetterPage(db, { ...base, accounts: ['alice'], pageSize: 10 }).jobs.map((j) => j.job),
    [`j${a}`],
    'an unconfigured account is not listed',
  );
  t.same(
    deadLetterPage(db, { ...base, account: 'alice', pageSize: 10 }).jobs.map((j) => j.job),
    [`j${a}`],
  );

  const lookup = { type: 'mail-query.job' as const, accounts: ['alice', 'bob'] };
  t.same(lookUpJob(db, { ...lookup, job: a }), { account: 'alice' });
  t.same(lookUpJob(db, { ...lookup, job: b, accounts: ['alice'] }), { account: null }, 'an unconfigured account: unknown');
  t.same(lookUpJob(db, { ...lookup, job: later }), { account: null }, 'a type this build does not have: unknown');
  t.same(lookUpJob(db, { ...lookup, job: 99_999 }), { account: null });
});
