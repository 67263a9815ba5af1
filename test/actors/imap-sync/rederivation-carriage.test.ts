/**
 * Re-derivation runs carried by jobs, driven through the sync actor's
 * carriage with a fake context (no thread) on a scratch database:
 * - a segment that throws is retried after 1, 2, 4 and 8 s; the fifth
 *   failure dead-letters the job, the run reads `stopped` and keeps its
 *   position; retry carries it on to the end with counts covering every
 *   message; a second retry is JobNotDeadLettered; unknown ids and other
 *   accounts' jobs are JobUnknown;
 * - drop ends the run (a new request starts a new one);
 * - another connection holding the write lock: every write the failure
 *   would make is refused too, so the count is kept in memory and the dead
 *   letter lands once the lock is released;
 * - after a restart a queued job resumes with its count and due time, a
 *   dead one stays dead;
 * - every state change is one log line naming job, type, account, code and
 *   no mail content.
 */
import Libsql from 'libsql';
import t from 'tap';
import type { ImapSyncConfig } from '../../../actors/imap-sync/protocol.ts';
import { carryStep, decideJob, newCarriage, recordDeferred, requestRun, resumeRuns, type Carriage } from '../../../actors/imap-sync/rederivation-carriage.ts';
import type { ParseReply } from '../../../actors/mime-parse/protocol.ts';
import type { ActorContext } from '../../../runtime/actor.ts';
import { AppError } from '../../../runtime/errors.ts';
import { jobById, jobIdOf } from '../../../runtime/store/jobs.ts';
import { rederivationRecordById } from '../../../runtime/store/mailbox/maintenance.ts';
import { storeBatch } from '../../../runtime/store/mailbox/store-batch.ts';
import { openStore, type Database } from '../../../runtime/store/open.ts';
import { captureLog } from '../../helpers/log-capture.ts';
import { aliceFolders, fetched, freshStore, parsedOf } from '../../runtime/store/mailbox/helpers.ts';

t.setTimeout(120_000);

const MESSAGES = 450; // three segments of 200, 200, 50
const SUBJECT = 'Quarterly figures for Zanzibar';

type Harness = {
  db: Database;
  state: { db: Database; config: ImapSyncConfig; carriage: Carriage };
  ctx: ActorContext;
  scheduled: Array<{ type: string; delayMs: number }>;
  logs: ReturnType<typeof captureLog>;
};

function harness(db: Database): Harness {
  const logs = captureLog();
  const scheduled: Array<{ type: string; delayMs: number }> = [];
  const ctx: ActorContext = {
    actorId: 'imap-sync:alice',
    log: logs.log,
    deadline: null,
    meta: undefined,
    tell() {},
    ask: () => Promise.reject(new Error('no asks here')),
    schedule(msg, delayMs) {
      scheduled.push({ type: (msg as { type: string }).type, delayMs });
      return { cancel() {} };
    },
    defer() {},
    stopSelf() {},
  };
  const config = { account: 'alice' } as ImapSyncConfig;
  return { db, state: { db, config, carriage: newCarriage() }, ctx, scheduled, logs };
}

function mailbox(t: Parameters<typeof freshStore>[0]): Database {
  const db = freshStore(t);
  const { inbox } = aliceFolders(db);
  const uids = Array.from({ length: MESSAGES }, (_, i) => i + 1);
  const result = storeBatch(db, {
    accountId: 'alice',
    bindingId: inbox.id,
    uidValidity: 7,
    expectedEpoch: null,
    messages: uids.map((uid) => fetched(uid, { subject: `${SUBJECT} ${uid}`, from: 'treasurer@zanzibar.example' })),
    advanceTo: { lastUid: MESSAGES, highestModseq: 9n },
    now: 2,
  });
  if (!result.ok) throw new Error('setup refused');
  return db;
}

function pathOf(db: Database): string {
  return (db.pragma('database_list') as Array<{ name: string; file: string }>).find((d) => d.name === 'main')!.file;
}

const parses = async (raws: Buffer[]): Promise<ParseReply[]> => raws.map((_, i) => ({ ok: true as const, message: parsedOf(i + 1, { subject: 'parsed' }) }));
const poolDown = async (): Promise<ParseReply[]> => {
  throw new AppError('E_ACTOR_TIMEOUT');
};

t.test('retry with backoff, dead letter, operator retry, drop', async (t) => {
  const h = harness(mailbox(t));
  const { state, ctx, scheduled } = h;
  const first = requestRun(state, ctx, null);
  t.match(first, { started: true, carriage: 'carried', run: { isOutstanding: true } });
  t.same(scheduled.splice(0), [{ type: 'imap-sync.rederive-step', delayMs: 0 }]);
  const runId = state.carriage.queue[0]!.runId;
  const jobId = state.carriage.queue[0]!.jobId;
  t.equal(requestRun(state, ctx, null).started, false, 'asking again returns the run under way');
  t.same(scheduled, [], 'and schedules no second chain of steps');

  await carryStep(state, ctx, parses);
  t.equal(rederivationRecordById(h.db, runId)!.run.rederivedEmailCount, 200, 'one segment done');
  scheduled.splice(0);

  for (let attempt = 1; attempt <= 5; attempt++) {
    await carryStep(state, ctx, poolDown);
    const job = jobById(h.db, jobId)!;
    if (attempt < 5) {
      t.match(
        job,
        { state: 'queued', attemptCount: attempt, failureClass: 'parser-unavailable', failureCode: 'E_ACTOR_TIMEOUT' },
        `attempt ${attempt} recorded`,
      );
      t.same(scheduled.splice(0), [{ type: 'imap-sync.rederive-step', delayMs: 1_000 * 2 ** (attempt - 1) }], 'retried after the backoff');
    } else {
      t.match(job, { state: 'dead', attemptCount: 5, failureClass: 'parser-unavailable' }, 'the fifth failure dead-letters the job');
      t.same(scheduled.splice(0), [], 'nothing more is scheduled for it');
    }
  }
  t.match(
    rederivationRecordById(h.db, runId),
    { carriage: 'stopped', lastMessageId: 200, run: { isOutstanding: true, rederivedEmailCount: 200 } },
    'the run is stopped at its position',
  );
  t.equal(requestRun(state, ctx, null).carriage, 'stopped', 'asking again returns the stopped run');

  t.same(decideJob(state, ctx, 999, 'retry'), { outcome: 'JobUnknown' });
  t.same(decideJob(state, ctx, jobId, 'retry'), { outcome: 'Accepted' });
  t.match(jobById(h.db, jobId), { id: jobId, state: 'queued', attemptCount: 0 });
  t.equal(rederivationRecordById(h.db, runId)!.carriage, 'carried');
  t.same(decideJob(state, ctx, jobId, 'retry'), { outcome: 'JobNotDeadLettered' }, 'a queued job is not a dead letter');
  t.same(decideJob(state, ctx, jobId, 'drop'), { outcome: 'JobNotDeadLettered' });
  t.same(scheduled.splice(0), [{ type: 'imap-sync.rederive-step', delayMs: 0 }]);
  while (state.carriage.queue.length > 0) await carryStep(state, ctx, parses);
  t.match(
    rederivationRecordById(h.db, runId),
    { run: { isOutstanding: false, rederivedEmailCount: MESSAGES, unreadableEmailCount: 0, missingContentEmailCount: 0 } },
    'the run went on from its position to the end',
  );
  t.equal(jobById(h.db, jobId)!.state, 'done');

  // Drop: the run ends and the scope can start afresh.
  const second = requestRun(state, ctx, 'inbox');
  const { jobId: secondJob, runId: secondRun } = state.carriage.queue[0]!;
  for (let attempt = 1; attempt <= 5; attempt++) await carryStep(state, ctx, poolDown);
  t.equal(jobById(h.db, secondJob)!.state, 'dead');
  t.same(decideJob(state, ctx, secondJob, 'drop'), { outcome: 'Accepted' });
  t.match(jobById(h.db, secondJob), { state: 'dropped' });
  t.match(
    rederivationRecordById(h.db, secondRun),
    { carriage: 'stopped', lastMessageId: null, run: { isOutstanding: false, rederivedEmailCount: second.run.rederivedEmailCount } },
    'the dropped run ended',
  );
  t.same(state.carriage.queue, []);
  t.equal(requestRun(state, ctx, 'inbox').started, true, 'a new request of the scope starts a new run');
  t.same(decideJob(state, ctx, secondJob, 'retry'), { outcome: 'JobNotDeadLettered' }, 'a dropped job never runs');

  const lines = h.logs.lines.filter((l) => String(l.event).startsWith('job.'));
  t.same([...new Set(lines.map((l) => l.event))].sort(), [
    'job.attempt-failed',
    'job.completed',
    'job.dead-lettered',
    'job.dropped',
    'job.enqueued',
    'job.retried',
    'job.started',
  ]);
  for (const line of lines) t.match(line, { job: /^j\d+$/, type: 'rederivation', account: 'alice' });
  t.match(h.logs.events('job.dead-lettered')[0], { job: jobIdOf(jobId), code: 'E_ACTOR_TIMEOUT', attempt: 5 });
  t.notOk(/Zanzibar|treasurer/.test(h.logs.raw()), 'no subject or address in the log');
});

t.test('the database locked by another connection: counted in memory, the dead letter lands once released', async (t) => {
  const db = mailbox(t);
  const h = harness(db);
  const { state, ctx, scheduled } = h;
  requestRun(state, ctx, null);
  const { jobId, runId } = state.carriage.queue[0]!;
  const holder = new Libsql(pathOf(db), { timeout: 5_000 });
  t.teardown(() => holder.close());
  holder.exec('BEGIN IMMEDIATE');
  for (let attempt = 1; attempt <= 5; attempt++) await carryStep(state, ctx, parses);
  t.match(
    h.logs.events('job.attempt-failed').map((l) => [l.attempt, l.classification, l.code]),
    [1, 2, 3, 4, 5].map((a) => [a, 'database-busy', /^SQLITE_BUSY/]),
  );
  t.equal(jobById(db, jobId)!.state, 'queued', 'nothing could be recorded while the lock is held');
  t.same(state.carriage.queue, [], 'but the job is no longer carried');
  t.same(scheduled.at(-1), { type: 'imap-sync.job-record', delayMs: 1_000 });
  recordDeferred(state, ctx);
  t.equal(jobById(db, jobId)!.state, 'queued', 'still locked');
  t.same(scheduled.at(-1), { type: 'imap-sync.job-record', delayMs: 2_000 }, 'tried again later, backing off');
  holder.exec('ROLLBACK');
  recordDeferred(state, ctx);
  t.match(jobById(db, jobId), { state: 'dead', attemptCount: 5, failureClass: 'database-busy' }, 'the dead letter landed');
  t.match(rederivationRecordById(db, runId), { carriage: 'stopped', lastMessageId: 0, run: { rederivedEmailCount: 0 } });
  t.equal(h.logs.events('job.dead-lettered').length, 1);
});

t.test('after a restart: a queued job resumes with its count and due time; a dead one stays dead', async (t) => {
  const db = mailbox(t);
  const before = harness(db);
  requestRun(before.state, before.ctx, null);
  const dead = before.state.carriage.queue[0]!.jobId;
  for (let attempt = 1; attempt <= 5; attempt++) await carryStep(before.state, before.ctx, poolDown);
  requestRun(before.state, before.ctx, 'inbox');
  const queued = before.state.carriage.queue[0]!.jobId;
  await carryStep(before.state, before.ctx, poolDown);
  const due = jobById(db, queued)!.dueAt;

  const reopened = openStore({ database: pathOf(db), busyTimeoutMs: 1_000, synchronous: 'Full' });
  t.teardown(() => reopened.close());
  const after = harness(reopened);
  resumeRuns(after.state, after.ctx);
  t.match(after.state.carriage.queue, [{ jobId: queued, failedAttempts: 1, dueAt: due }]);
  t.equal(after.scheduled.length, 1);
  t.ok(after.scheduled[0]!.delayMs <= 1_000, 'the step waits out what is left of the backoff');
  t.equal(jobById(reopened, dead)!.state, 'dead');
  while (after.state.carriage.queue.length > 0) await carryStep(after.state, after.ctx, parses);
  t.equal(jobById(reopened, queued)!.state, 'done');
  t.equal(jobById(reopened, dead)!.state, 'dead', 'the dead letter waits for an operator');
});

t.test('a decision names only jobs of this account', async (t) => {
  const db = freshStore(t);
  const alice = harness(db);
  requestRun(alice.state, alice.ctx, null);
  const job = alice.state.carriage.queue[0]!.jobId;
  const bob = harness(db);
  bob.state.config = { account: 'bob' } as ImapSyncConfig;
  t.same(decideJob(bob.state, bob.ctx, job, 'drop'), { outcome: 'JobUnknown' }, "another account's job is unknown to this actor");
});
