/**
 * Re-derivation runs carried by jobs, inside the account's sync actor (the
 * sole writer of the account's mail tables, its runs and its jobs). Each
 * run has one job row (runtime/store/jobs.ts: type `rederivation`, key over
 * the scope and the run); the actor carries the runs one segment per
 * private `imap-sync.rederive-step`, the oldest first.
 *
 * A segment that throws (the database locked past Storage:BusyTimeout, the
 * parse pool failing, a defect) is one failed attempt: the job goes back to
 * queued and the same segment is tried again after 1 s, 2 s, 4 s, 8 s. The
 * fifth failure in a row dead-letters the job and the run's carriage reads
 * `stopped`; the run stays outstanding at its position, and the next run in
 * line goes on. An operator then retries it (queued again, attempts given
 * back, the run goes on from its position) or drops it (the run ends, so a
 * new request of the scope starts a new run).
 *
 * The database refusing writes is the likeliest failure, and it refuses
 * the writes that would record it too. So the attempt count lives here and
 * each failure is recorded when the database takes it: an attempt's
 * failure rides on the next write that lands, and a dead letter's write is
 * retried on a timer (`imap-sync.job-record`) until it lands. After a
 * restart, queued and running jobs resume with their recorded count and
 * due time; a dead one stays dead.
 *
 * Every write here opens with BEGIN IMMEDIATE (`write`): libsql 0.5 leaves
 * a statement that failed with SQLITE_BUSY un-reset, and that statement
 * then holds the connection's implicit transaction open — and, after the
 * next write, the database's write lock — until the connection closes. A
 * BEGIN that fails leaves nothing behind, and inside the transaction no
 * statement waits for a lock.
 *
 * Every state change is one log line (job, type, account, code): never
 * content. Importable by the sync actor's modules only.
 */
import type { ActorContext } from '../../runtime/actor.ts';
import { AppError } from '../../runtime/errors.ts';
import type { Logger } from '../../runtime/log.ts';
import {
  MAX_JOB_ATTEMPTS,
  completeJob,
  deadLetterJob,
  dropJob,
  enqueueJob,
  giveAttemptsBack,
  jobById,
  jobIdOf,
  jobRetryDelayMs,
  liveJobs,
  recordAttemptFailure,
  retryJob,
  startJob,
  type Job,
} from '../../runtime/store/jobs.ts';
import {
  advanceRederivation,
  applyDerivations,
  rederivationRecordById,
  rederivationSegment,
  requestRederivation,
  setRederivationCarriage,
  type RederivationRecord,
} from '../../runtime/store/mailbox/maintenance.ts';
import { endRederivation, outstandingRederivations } from '../../runtime/store/mailbox/rederivation-runs.ts';
import { errorCode, type Database } from '../../runtime/store/open.ts';
import type { ParsedMessage, ParseReply } from '../mime-parse/protocol.ts';
import { classifyJobFailure } from './job-failure.ts';
import type { ImapSyncConfig, JobDecisionReply, RederiveReply } from './protocol.ts';
import { noteUnreadable, type UnreadableCounts } from './unreadable.ts';

export const REDERIVATION_SEGMENT = 200;
const TYPE = 'rederivation';
/** Retrying a dead letter's write: from 1 s, doubling, at most every 30 s. */
const RECORD_RETRY_MS = { base: 1_000, max: 30_000 };

type CarriedRun = { runId: number; jobId: number; failedAttempts: number; running: boolean; dueAt: number };

/** What the actor holds: the runs it carries (the first under way) and the writes still to land. */
export type Carriage = { queue: CarriedRun[]; unrecorded: Map<number, () => void>; recordDue: boolean; recordDelayMs: number };

export function newCarriage(): Carriage {
  return { queue: [], unrecorded: new Map(), recordDue: false, recordDelayMs: RECORD_RETRY_MS.base };
}

type State = { db: Database; config: ImapSyncConfig; carriage: Carriage };
type ParseMany = (raws: Buffer[]) => Promise<ParseReply[]>;

/** Starts a run of the scope with its job, or returns the run outstanding. */
export function requestRun(state: State, ctx: ActorContext, folder: string | null): RederiveReply {
  const { db, config } = state;
  const now = Date.now();
  let jobId = 0;
  let record: ReturnType<typeof requestRederivation>;
  try {
    record = requestRederivation(db, config.account, folder, now, (r) => {
      jobId = enqueueJob(db, { type: TYPE, accountId: config.account, idempotencyKey: keyOf(r), payload: { run: r.runId }, now }).job.id;
    });
  } catch (err) {
    // An answer, not a crash: a sync run or the runs carried here go on.
    throw new AppError('E_STORE_UNAVAILABLE', { message: `the run could not be recorded (${errorCode(err)})` });
  }
  if (record.started) {
    note(ctx, 'info', 'job.enqueued', jobId, config.account);
    carry(state, ctx, { runId: record.runId, jobId, failedAttempts: 0, running: false, dueAt: now });
  }
  return { started: record.started, carriage: record.carriage, run: record.run };
}

/** After a restart: carry on every run whose job is not dead, from its recorded position and due time. */
export function resumeRuns(state: State, ctx: ActorContext): void {
  const { db, config } = state;
  const now = Date.now();
  const runs = outstandingRederivations(db, config.account);
  const jobs = liveJobs(db, config.account, TYPE);
  const outstanding = new Set(runs.map((r) => r.runId));
  const carried = write(db, () => {
    for (const job of jobs) {
      // Its run reached the end, and the process stopped before the job was marked.
      if (job.state !== 'dead' && !outstanding.has(runOf(job)) && completeJob(db, job.id, now)) note(ctx, 'info', 'job.completed', job.id, config.account);
    }
    return runs.map((run) => {
      let job = jobs.find((j) => runOf(j) === run.runId);
      if (job === undefined) {
        // A run recorded before runs had jobs.
        job = enqueueJob(db, { type: TYPE, accountId: config.account, idempotencyKey: keyOf(run), payload: { run: run.runId }, now }).job;
        setRederivationCarriage(db, run.runId, 'carried', now);
        note(ctx, 'info', 'job.enqueued', job.id, config.account);
      }
      return { run, job };
    });
  });
  for (const { run, job } of carried) {
    if (job.state === 'dead') continue; // stays dead until an operator decides
    state.carriage.queue.push({ runId: run.runId, jobId: job.id, failedAttempts: job.attemptCount, running: false, dueAt: job.dueAt });
  }
  next(state, ctx);
}

/** One attempt at the segment under way; a failure is counted, backed off and, at the last attempt, dead-lettered. */
export async function carryStep(state: State, ctx: ActorContext, parseMany: ParseMany): Promise<void> {
  const head = state.carriage.queue[0];
  if (head === undefined) return;
  const { db, config } = state;
  let ended: boolean;
  try {
    if (!head.running) {
      write(db, () => startJob(db, head.jobId, Date.now()));
      head.running = true;
      note(ctx, 'info', 'job.started', head.jobId, config.account, { attempt: head.failedAttempts + 1 });
    }
    ended = await rederiveSegment(db, config.account, head, parseMany, ctx.log);
  } catch (err) {
    attemptFailed(state, ctx, head, err);
    return;
  }
  head.failedAttempts = 0;
  if (ended) {
    state.carriage.queue.shift();
    note(ctx, 'info', 'job.completed', head.jobId, config.account);
  }
  next(state, ctx);
}

function attemptFailed(state: State, ctx: ActorContext, head: CarriedRun, err: unknown): void {
  const { db, config, carriage } = state;
  const failure = classifyJobFailure(err);
  const now = Date.now();
  head.failedAttempts += 1;
  head.running = false;
  const attempts = head.failedAttempts;
  const last = attempts >= MAX_JOB_ATTEMPTS;
  const delay = jobRetryDelayMs(attempts);
  note(ctx, 'warn', 'job.attempt-failed', head.jobId, config.account, {
    code: failure.code,
    classification: failure.classification,
    attempt: attempts,
    ...(last ? {} : { retryInMs: delay }),
    // A defect's cause is wanted in the log; the database's and the pool's are their codes.
    ...(failure.classification === 'unexpected' ? { err } : {}),
  });
  if (last) {
    // The next run in line goes on; this one waits for an operator.
    carriage.queue.shift();
    recordDurably(state, ctx, head.jobId, () => {
      write(db, () => {
        deadLetterJob(db, head.jobId, { attempts, failure, now });
        setRederivationCarriage(db, head.runId, 'stopped', now);
      });
      note(ctx, 'warn', 'job.dead-lettered', head.jobId, config.account, { code: failure.code, attempt: attempts });
    });
  } else {
    head.dueAt = now + delay;
    try {
      write(db, () => recordAttemptFailure(db, head.jobId, { attempts, failure, dueAt: head.dueAt }));
    } catch (writeErr) {
      // Counted here; the next write that lands records it.
      note(ctx, 'warn', 'job.write-deferred', head.jobId, config.account, { code: errorCode(writeErr) });
    }
    ctx.schedule({ type: 'imap-sync.rederive-step' }, delay);
    return;
  }
  next(state, ctx);
}

/** A write that must land (a dead letter): now if the database takes it, else retried on a timer. */
function recordDurably(state: State, ctx: ActorContext, jobId: number, write: () => void): void {
  try {
    write();
  } catch (err) {
    note(ctx, 'warn', 'job.write-deferred', jobId, state.config.account, { code: errorCode(err) });
    state.carriage.unrecorded.set(jobId, write);
    scheduleRecord(state.carriage, ctx);
  }
}

/** `imap-sync.job-record`: try the writes still to land. */
export function recordDeferred(state: State, ctx: ActorContext): void {
  const carriage = state.carriage;
  carriage.recordDue = false;
  for (const [jobId, write] of carriage.unrecorded) {
    try {
      write();
      carriage.unrecorded.delete(jobId);
    } catch {
      // Still refused; the next tick tries again.
    }
  }
  if (carriage.unrecorded.size === 0) {
    carriage.recordDelayMs = RECORD_RETRY_MS.base;
    return;
  }
  carriage.recordDelayMs = Math.min(carriage.recordDelayMs * 2, RECORD_RETRY_MS.max);
  scheduleRecord(carriage, ctx);
}

function scheduleRecord(carriage: Carriage, ctx: ActorContext): void {
  if (carriage.recordDue) return;
  carriage.recordDue = true;
  ctx.schedule({ type: 'imap-sync.job-record' }, carriage.recordDelayMs);
}

/** An operator's decision on a dead letter of this account. */
export function decideJob(state: State, ctx: ActorContext, jobId: number, decision: 'retry' | 'drop'): JobDecisionReply {
  const { db, config } = state;
  const job = jobById(db, jobId);
  if (job === null || job.accountId !== config.account || job.type !== TYPE || runOf(job) === 0) return { outcome: 'JobUnknown' };
  if (job.state !== 'dead') return { outcome: 'JobNotDeadLettered' };
  const runId = runOf(job);
  const now = Date.now();
  try {
    write(db, () => {
      if (decision === 'retry') {
        retryJob(db, jobId, now);
        setRederivationCarriage(db, runId, 'carried', now);
      } else {
        dropJob(db, jobId, now);
        endRederivation(db, runId, now);
      }
    });
  } catch (err) {
    // An answer, not a crash: the job stays dead and the operator may ask again.
    throw new AppError('E_STORE_UNAVAILABLE', { message: `the decision could not be recorded (${errorCode(err)})` });
  }
  if (decision === 'retry') {
    note(ctx, 'info', 'job.retried', jobId, config.account);
    carry(state, ctx, { runId, jobId, failedAttempts: 0, running: false, dueAt: now });
  } else {
    note(ctx, 'info', 'job.dropped', jobId, config.account);
  }
  return { outcome: 'Accepted' };
}

function carry(state: State, ctx: ActorContext, run: CarriedRun): void {
  if (state.carriage.queue.some((r) => r.runId === run.runId)) return;
  state.carriage.queue.push(run);
  // One step is ever pending while runs are carried: only an empty queue needs a new one.
  if (state.carriage.queue.length === 1) next(state, ctx);
}

function next(state: State, ctx: ActorContext): void {
  const head = state.carriage.queue[0];
  if (head !== undefined) ctx.schedule({ type: 'imap-sync.rederive-step' }, Math.max(0, head.dueAt - Date.now()));
}

/**
 * One segment of the run: re-read raw MIME, parse, rewrite the derived
 * columns, then record progress with the job's own state (completed, or
 * attempts given back). True once the run has ended.
 */
async function rederiveSegment(db: Database, account: string, head: CarriedRun, parseMany: ParseMany, log: Logger): Promise<boolean> {
  const runId = head.runId;
  const record = rederivationRecordById(db, runId);
  if (!record?.run.isOutstanding) {
    write(db, () => completeJob(db, head.jobId, Date.now()));
    return true;
  }
  const after = record.lastMessageId ?? 0;
  const segment = rederivationSegment(db, account, record.run.folder, after, REDERIVATION_SEGMENT);
  const readable = segment.filter((row) => row.raw && row.sha256ok);
  const parsed = readable.length > 0 ? await parseMany(readable.map((row) => Buffer.from(row.raw!))) : [];
  const byId = new Map(readable.map((row, i) => [row.id, parsed[i]]));
  let { rederivedEmailCount: rederived, unreadableEmailCount: unreadable, missingContentEmailCount: missing } = record.run;
  const results: Array<{ id: number; parsed: ParsedMessage | null }> = [];
  const counts: UnreadableCounts = {};
  for (const row of segment) {
    if (!row.raw || !row.sha256ok) {
      missing += 1;
      continue;
    }
    const reply = byId.get(row.id);
    if (reply?.ok) rederived += 1;
    else {
      unreadable += 1;
      noteUnreadable(log, counts, reply, { rederivation: runId, message: row.id });
    }
    results.push({ id: row.id, parsed: reply?.ok ? reply.message : null });
  }
  const now = Date.now();
  applyDerivations(db, results, now);
  const done = segment.length < REDERIVATION_SEGMENT;
  write(db, () => {
    advanceRederivation(db, runId, { lastMessageId: segment.at(-1)?.id ?? after, rederived, unreadable, missing, done, now });
    if (done) completeJob(db, head.jobId, now);
    else if (head.failedAttempts > 0) giveAttemptsBack(db, head.jobId);
  });
  return done;
}

/** A write transaction that takes the write lock first (see the header: why never a bare statement). */
function write<T>(db: Database, fn: () => T): T {
  return db.transaction(fn).immediate();
}

/** The idempotency key carries the scope and the run (docs/admin-api.md "Re-derivation"). */
function keyOf(record: RederivationRecord): string {
  return `rederivation:${record.run.account}:${record.run.folder ?? '*'}:${record.runId}`;
}

/** The run a job carries (its payload); 0 when the payload names none. */
function runOf(job: Job): number {
  const run = (job.payload as { run?: unknown } | null)?.run;
  return typeof run === 'number' && Number.isSafeInteger(run) ? run : 0;
}

function note(ctx: ActorContext, level: 'info' | 'warn', event: string, jobId: number, account: string, fields: Record<string, unknown> = {}): void {
  ctx.log[level]({ event, job: jobIdOf(jobId), type: TYPE, account, ...fields }, event);
}
