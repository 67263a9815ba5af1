/**
 * The account's change journal as the sync actor carries it: recording a
 * change (one transaction, answered at once), applying recorded changes
 * one at a time in the order they were recorded over a writing session of
 * its own, and an operator's retry or drop of a dead-lettered change.
 *
 * The writing session is a second IMAP connection, opened on demand and
 * closed after WRITER_IDLE_MS without changes: the reading session stays
 * where runs and the watch left it (a run between two batches keeps its
 * folder selected), and a change never waits for a long mirror to end.
 *
 * An attempt that fails on the wire is retried after 1, 2, 4, 8 s (jobs.ts);
 * the fifth failure dead-letters the change (`failed`). A server refusal
 * dead-letters it at once (`refused`). A failure that is neither (a defect,
 * the database) is logged at error and counted the same way, so one
 * change cannot stop the account. Restarted after a crash, the actor
 * carries on from the journal: a change found `running` is attempted again,
 * and change-apply.ts ends it as recorded.
 *
 * The journal also carries the outbox's placements (placement-apply.ts,
 * runtime/store/mailbox/placements.ts): an append of a sent copy or a
 * draft, and the removal of what an append placed. They share the queue,
 * the order, the retries and the dead letters; they have no local message,
 * so no overlay.
 */
import type { ImapFlow } from 'imapflow';
import { z } from 'zod';
import type { ActorContext } from '../../runtime/actor.ts';
import { AppError, Codes, type Code } from '../../runtime/errors.ts';
import { isStorageFull, noteStorageFull, noteStorageWritable, STORAGE_FULL_RETRY_MS } from '../../runtime/storage-full.ts';
import {
  dropJob,
  jobById,
  jobIdOf,
  jobRetryDelayMs,
  MAX_JOB_ATTEMPTS,
  recordAttemptFailure,
  retryJob,
  type JobFailure,
  type JobFailureClass,
} from '../../runtime/store/jobs.ts';
import {
  CHANGE_JOB_TYPE,
  type Change,
  type ChangeAsk,
  type ChangeEnd,
  deadLetterChange,
  endChange,
  endChanges,
  flagBatch,
  headChange,
  type JournalEntry,
  recordChangeProgress,
  recordChanges,
  recordChangesMany,
  relayOverlay,
  type ChangePayload,
} from '../../runtime/store/mailbox/changes.ts';
import {
  appendJobOf,
  appendSource,
  deadLetterPlacement,
  endPlacement,
  isPlacementPayload,
  type Placement,
  type RecordPlacementResult,
  readPlacement,
  recordAppend,
  recordRemoval,
  removalEnded,
} from '../../runtime/store/mailbox/placements.ts';
import type { Database } from '../../runtime/store/open.ts';
import { errorCode } from '../../runtime/store/open.ts';
import { applyChange, REFUSALS, type RefusalReason } from './change-apply.ts';
import { applyFlagBatch } from './change-batch.ts';
import type { ChangeWatch } from './change-watch.ts';
import { classifyImapFailure, imapFailureFields } from './connection.ts';
import { applyPlacement } from './placement-apply.ts';
import type {
  ImapSyncConfig,
  JobDecisionReply,
  PlacementReply,
  RecordAppend,
  RecordChangesManyReply,
  RecordChangesReply,
  RecordPlacementReply,
  RecordRemoval,
} from './protocol.ts';

/** The actor's private messages of the journal. */
export const JournalStep = z.strictObject({ type: z.literal('imap-sync.change-step') });
export const WriterIdle = z.strictObject({ type: z.literal('imap-sync.change-writer-idle') });

/** Changes carried by one `UID STORE` at most (docs/sync.md "Changes in batches"): a command line of a few kilobytes. */
const BATCH_LIMIT = 500;

/**
 * How long changes recorded in bulk (a rule segment's) wait before the
 * journal starts on them, so that the segments arriving meanwhile go to the
 * server in batches too (docs/sync.md "Changes in batches"). An agent's
 * change is started at once.
 */
const GATHER_MS = 1_000;

/**
 * While a run of the account is under way (a first mirror: the rules judge
 * its mail as it is derived), changes recorded in bulk wait for the run's end
 * (then GATHER_MS more), at most this long after the first of them: one
 * batch per kind instead of one per second, each batch costing a FETCH, a
 * STORE, a transaction and the reading session's notices (docs/sync.md
 * "Changes in batches"). A change asked one at a time does not wait.
 */
const GATHER_DURING_RUN_MS = 10_000;

/** A writing session unused this long is closed. */
const WRITER_IDLE_MS = 30_000;

/**
 * `step`: the next step's timer and when it is due, while one is scheduled (a step sooner replaces it).
 * `gatherUntil`: changes recorded in bulk during a run wait for runs to end until then (GATHER_DURING_RUN_MS after the first).
 */
export type Journal = {
  writer: ImapFlow | null;
  step: { at: number; cancel(): void } | null;
  gatherUntil: number | null;
  lastUsedAt: number;
  idleCheckScheduled: boolean;
};

/** What the reading session's watch is told of the journal's own flag stores, so that their notices wake nothing (change-watch.ts). */
type OwnStores = Pick<ChangeWatch, 'expectOwn' | 'ownApplied' | 'ownAbandoned'>;
/** `active`: the run under way, if any (the actor's). */
type JournalState = { db: Database; config: ImapSyncConfig; journal: Journal; watch?: OwnStores; active?: object | null };
/** Opens a new IMAP session with the account's credentials (the actor's, shared with the reading session). */
export type Connect = () => Promise<ImapFlow>;

export function newJournal(): Journal {
  return { writer: null, step: null, gatherUntil: null, lastUsedAt: 0, idleCheckScheduled: false };
}

/** At start: carry on with whatever the journal holds. */
export function resumeJournal(state: JournalState, ctx: ActorContext): void {
  if (headChange(state.db, state.config.account) !== null) scheduleStep(state, ctx, 0);
}

export function recordAsked(
  state: JournalState,
  ctx: ActorContext,
  msg: { messageId: number; requester: string; requestId: string | null; changes: ChangeAsk[] },
): RecordChangesReply {
  const result = recordChanges(state.db, { accountId: state.config.account, ...msg, now: Date.now() });
  if (result.outcome !== 'recorded') return { outcome: result.outcome };
  if (!result.repeated) {
    ctx.log.info({ event: 'journal.recorded', changes: result.changes.map((c) => c.changeId) }, 'journal.recorded');
    // An agent's change goes now, and takes the gathered ones with it.
    state.journal.gatherUntil = null;
    scheduleStep(state, ctx, 0);
  }
  return { outcome: 'recorded', changes: result.changes };
}

type Ask = { messageId: number; requester: string; requestId: string | null; changes: ChangeAsk[] };

/**
 * Several messages' asks in one transaction (`imap-sync.record-changes-many`), each answered as `recordAsked` answers it.
 * `runUnderWay`: a run of the account is under way; the journal starts on them after it (GATHER_DURING_RUN_MS).
 */
export function recordManyAsked(state: JournalState, ctx: ActorContext, asks: readonly Ask[], runUnderWay: boolean): RecordChangesManyReply {
  const now = Date.now();
  const results = recordChangesMany(
    state.db,
    asks.map((ask) => ({ accountId: state.config.account, ...ask, now })),
  );
  const recorded = results.flatMap((r) => (r.outcome === 'recorded' && !r.repeated ? r.changes.map((c) => c.changeId) : []));
  if (recorded.length > 0) {
    ctx.log.info({ event: 'journal.recorded', changes: recorded }, 'journal.recorded');
    if (runUnderWay) state.journal.gatherUntil ??= now + GATHER_DURING_RUN_MS;
    else state.journal.gatherUntil = null;
    scheduleStep(state, ctx, runUnderWay ? GATHER_DURING_RUN_MS : GATHER_MS);
  }
  return { replies: results.map((r) => (r.outcome === 'recorded' ? { outcome: 'recorded', changes: r.changes } : { outcome: r.outcome })) };
}

/**
 * Records an append asked by the outbox (`imap-sync.record-append`), once per
 * (requester, requestId). Refusals are AppErrors: the identifier used for
 * something else (`E_TOOL_REQUEST_CONFLICT`), no row of this account by that
 * id holding that Message-ID (`E_NOT_FOUND`).
 */
export function recordAppendAsked(state: JournalState, ctx: ActorContext, msg: RecordAppend): RecordPlacementReply {
  const result = recordAppend(state.db, {
    accountId: state.config.account,
    requester: msg.requester,
    requestId: msg.requestId,
    target: msg.target,
    source: msg.source,
    flags: msg.flags,
    messageIdHeader: msg.messageIdHeader,
    now: Date.now(),
  });
  return placementRecorded(state, ctx, result, 'the stored message');
}

/** Records the removal of what an append placed (`imap-sync.record-removal`), once per (requester, requestId). */
export function recordRemovalAsked(state: JournalState, ctx: ActorContext, msg: RecordRemoval): RecordPlacementReply {
  const result = recordRemoval(state.db, {
    accountId: state.config.account,
    requester: msg.requester,
    requestId: msg.requestId,
    appendJob: msg.appendJob,
    now: Date.now(),
  });
  return placementRecorded(state, ctx, result, 'the append job');
}

function placementRecorded(state: JournalState, ctx: ActorContext, result: RecordPlacementResult, what: string): RecordPlacementReply {
  if (result.outcome === 'request-conflict') throw new AppError('E_TOOL_REQUEST_CONFLICT', { details: { cause: 'request-id-reused' } });
  if (result.outcome === 'not-found') throw new AppError('E_NOT_FOUND', { details: { cause: `${what} is not held for this account` } });
  if (!result.repeated) {
    ctx.log.info({ event: 'journal.recorded', changes: [jobIdOf(result.job)] }, 'journal.recorded');
    scheduleStep(state, ctx, 0);
  }
  return { job: result.job, state: result.view.state };
}

/** The state of a placement job of this account (`imap-sync.placement`); `E_NOT_FOUND` for any other job. */
export function placementAsked(state: JournalState, jobId: number): PlacementReply {
  const view = readPlacement(state.db, jobId, state.config.account);
  if (view === null) throw new AppError('E_NOT_FOUND', { details: { cause: 'no placement job of this account by that id' } });
  return view;
}

/** The account's run ended: changes that waited for it start GATHER_MS from now, so the last segments judged join them. */
export function journalRunEnded(state: JournalState, ctx: ActorContext): void {
  if (state.journal.step !== null) scheduleStep(state, ctx, GATHER_MS);
}

/** Applies the oldest outstanding change, then schedules the next. */
export async function journalStep(state: JournalState, ctx: ActorContext, connect: Connect): Promise<void> {
  state.journal.step = null;
  const gatherUntil = state.journal.gatherUntil;
  // A first mirror is several runs back to back: gathered changes wait for the last one's end (journalRunEnded), within
  // their bound. Stored meanwhile, they would each be news to the next run's watch (change-watch.ts), and a run more.
  if (gatherUntil !== null && state.active != null && Date.now() < gatherUntil) return scheduleStep(state, ctx, gatherUntil - Date.now());
  state.journal.gatherUntil = null;
  const { db, config } = state;
  const change = headChange(db, config.account);
  if (change === null) return scheduleIdleCheck(state, ctx);
  const now = Date.now();
  if (change.job.state === 'queued' && change.job.dueAt > now) return scheduleStep(state, ctx, change.job.dueAt - now);
  try {
    const client = await writer(state, connect);
    if (isPlaced(change)) await applyPlacementStep(state, ctx, client, change);
    else await applyChangeStep(state, ctx, client, change);
    state.journal.lastUsedAt = Date.now();
  } catch (err) {
    // A full disk is waited out: no attempt is counted, and the step is tried again (docs/operations.md "A full disk").
    if (waitsOutFullDisk(state, ctx, err)) return;
    try {
      attemptFailed(state, ctx, change, err);
    } catch (again) {
      if (waitsOutFullDisk(state, ctx, again)) return;
      throw again;
    }
  }
  noteStorageWritable(ctx.log, journalPlace(state));
  scheduleStep(state, ctx, 0);
}

const journalPlace = (state: JournalState): string => `change-journal:${state.config.account}`;

/**
 * The disk under the store is full: the change may have reached the server
 * without its ending being recorded, as after a kill, and the step that
 * runs again finds it from the recorded progress.
 */
function waitsOutFullDisk(state: JournalState, ctx: ActorContext, err: unknown): boolean {
  if (!isStorageFull(err)) return false;
  noteStorageFull(ctx.log, journalPlace(state), err);
  scheduleStep(state, ctx, STORAGE_FULL_RETRY_MS);
  return true;
}

function isPlaced(entry: JournalEntry): entry is Placement {
  return isPlacementPayload(entry.payload);
}

async function applyChangeStep(state: JournalState, ctx: ActorContext, client: ImapFlow, change: Change): Promise<void> {
  const { db } = state;
  if (client.enabled.has('CONDSTORE') && (await applyBatchStep(state, ctx, client, change))) return;
  const job = jobIdOf(change.job.id);
  const kind = change.payload.effect.kind;
  const result = await ownStores(state, change.payload.sourcePath, [change.payload.uid], async () => {
    const result = await applyChange({
      client,
      payload: change.payload,
      progress: change.job.progress,
      recordProgress: (progress) => recordChangeProgress(db, change.job.id, progress),
    });
    return { result, made: result.kind === 'ended' ? madeOf([{ uid: change.payload.uid, end: result.end }]) : new Map<number, bigint>() };
  });
  if (result.kind === 'refused') {
    deadLetterChange(db, change, { outcome: 'refused', attempts: change.job.attemptCount + 1, failure: refusal(result.reason), now: Date.now() });
    ctx.log.warn({ event: 'journal.change-refused', job, change: kind, reason: result.reason }, 'journal.change-refused');
  } else {
    endChange(db, change, { ...result.end, now: Date.now() });
    ctx.log.info({ event: 'journal.change-ended', job, change: kind, outcome: result.end.outcome }, 'journal.change-ended');
  }
}

/**
 * The head and the changes that can go with it (changes.ts `flagBatch`) as
 * one STORE (change-batch.ts); every ending in one transaction, each with
 * its own audit entry and log line. True when the head ended; otherwise it
 * goes alone, as any change (a refusal, a guard that kept refusing).
 */
async function applyBatchStep(state: JournalState, ctx: ActorContext, client: ImapFlow, head: Change): Promise<boolean> {
  const batch = flagBatch(state.db, head, Date.now(), BATCH_LIMIT);
  if (batch.length < 2) return false;
  const uids = batch.map((c) => c.payload.uid);
  const ended = await ownStores(state, head.payload.sourcePath, uids, async () => {
    const ended = await applyFlagBatch(client, batch);
    return { result: ended, made: madeOf(ended.map((e) => ({ uid: e.change.payload.uid, end: e.end }))) };
  });
  const now = Date.now();
  endChanges(
    state.db,
    ended.map((e) => ({ change: e.change, end: { ...e.end, now } })),
  );
  for (const e of ended) {
    const fields = { event: 'journal.change-ended', job: jobIdOf(e.change.job.id), change: e.change.payload.effect.kind, outcome: e.end.outcome };
    ctx.log.info({ ...fields, batch: batch.length }, 'journal.change-ended');
  }
  return ended.some((e) => e.change.job.id === head.job.id);
}

/** The MODSEQ each message came to, as its ending read it back (a change ended without the server's state says nothing). */
function madeOf(endings: ReadonlyArray<{ uid: number; end: Omit<ChangeEnd, 'now'> }>): Map<number, bigint> {
  const made = new Map<number, bigint>();
  for (const { uid, end } of endings) if (end.server?.modseq != null) made.set(uid, BigInt(end.server.modseq));
  return made;
}

/** Runs a store of `uids` in `path` with the watch told before and after (OwnStores); a failure leaves their notices to be judged as anyone's. */
async function ownStores<T>(
  state: JournalState,
  path: string,
  uids: readonly number[],
  store: () => Promise<{ result: T; made: Map<number, bigint> }>,
): Promise<T> {
  state.watch?.expectOwn(path, uids);
  let done: { result: T; made: Map<number, bigint> };
  try {
    done = await store();
  } catch (err) {
    state.watch?.ownAbandoned(path, uids);
    throw err;
  }
  state.watch?.ownApplied(path, uids, done.made);
  return done.result;
}

async function applyPlacementStep(state: JournalState, ctx: ActorContext, client: ImapFlow, placement: Placement): Promise<void> {
  const { db, config } = state;
  const job = jobIdOf(placement.job.id);
  const kind = placement.payload.effect.kind;
  const result = await applyPlacement({
    client,
    payload: placement.payload,
    progress: placement.job.progress,
    recordProgress: (progress) => recordChangeProgress(db, placement.job.id, progress),
    folders: config.folders,
    source: (source) => appendSource(db, config.account, source),
    appendJob: (id) => appendJobOf(db, config.account, id),
    removalEnded: () => removalEnded(db, config.account, placement.job.id),
  });
  if (result.kind === 'refused') {
    deadLetterPlacement(db, placement, { outcome: 'refused', attempts: placement.job.attemptCount + 1, failure: refusal(result.reason), now: Date.now() });
    ctx.log.warn({ event: 'journal.change-refused', job, change: kind, reason: result.reason }, 'journal.change-refused');
    return;
  }
  endPlacement(db, placement, { ...result.end, now: Date.now() });
  // No folder to place in, or nothing to place: the copy is not made, and nothing will retry it.
  const level = result.end.outcome === 'no-folder' || result.end.outcome === 'no-source' ? 'warn' : 'info';
  ctx.log[level]({ event: 'journal.change-ended', job, change: kind, outcome: result.end.outcome }, 'journal.change-ended');
}

function refusal(reason: RefusalReason): JobFailure {
  return { classification: 'server-refused', code: 'E_CHANGE_REFUSED' satisfies Code, reason: REFUSALS[reason] };
}

function attemptFailed(state: JournalState, ctx: ActorContext, change: JournalEntry, err: unknown): void {
  let failure: JobFailure;
  try {
    failure = classifyChangeFailure(err);
  } catch (defect) {
    // A defect crashes the actor (the supervisor restarts it and logs it once), after the attempt is counted.
    // What the classifier threw is thrown on (a BAD as ImapCommandRejected, naming what it was).
    return defectCounted(state, change, defect);
  }
  if (failure.classification !== 'database-busy' && failure.classification !== 'database-failure') dropWriter(state);
  const attempts = change.job.attemptCount + 1;
  const job = jobIdOf(change.job.id);
  const cause = failure.code.startsWith('SQLITE_') ? { err } : { imap: imapFailureFields(err) };
  countAttempt(state, change, failure, attempts);
  const deadLettered = attempts >= MAX_JOB_ATTEMPTS;
  const event = deadLettered ? 'journal.change-dead-lettered' : 'journal.attempt-failed';
  ctx.log[deadLettered ? 'error' : 'warn']({ ...cause, event, job, code: failure.code, classification: failure.classification, attempts }, event);
  // A login the server refused stops the account as a run's does (docs/sync.md): retrying a wrong password locks accounts.
  // The change keeps its place and its count; the restarted actor carries on with it.
  if (failure.code === 'E_IMAP_AUTH') ctx.stopSelf('E_IMAP_AUTH');
}

/**
 * The attempt counted on the job: retried after the backoff, or dead-lettered
 * at the fifth failure. Also for a defect, before the actor crashes on it, so
 * the restarted actor tries the change exactly once more and a change whose
 * every attempt meets the same defect ends dead-lettered instead of crashing
 * the account for ever.
 */
function countAttempt(state: JournalState, change: JournalEntry, failure: JobFailure, attempts: number): void {
  const { db } = state;
  if (attempts >= MAX_JOB_ATTEMPTS) {
    if (isPlaced(change)) deadLetterPlacement(db, change, { outcome: 'failed', attempts, failure, now: Date.now() });
    else deadLetterChange(db, change, { outcome: 'failed', attempts, failure, now: Date.now() });
    return;
  }
  recordAttemptFailure(db, change.job.id, { attempts, failure, dueAt: Date.now() + jobRetryDelayMs(attempts) });
}

/** A defect: counted on the job, then thrown on so the actor crashes. */
function defectCounted(state: JournalState, change: JournalEntry, err: unknown): never {
  const failure: JobFailure = { classification: 'unexpected', code: err instanceof AppError ? err.code : 'E_INTERNAL', reason: UNEXPECTED };
  dropWriter(state);
  countAttempt(state, change, failure, change.job.attemptCount + 1);
  throw err;
}

const UNEXPECTED = 'The change failed unexpectedly; the cause is in the server log.';

const DATABASE = {
  'database-busy': 'The database stayed locked by another writer for longer than Storage:BusyTimeout.',
  'database-failure': 'The database refused a read or a write; the code is in the server log.',
} as const;

/**
 * The journal's class of each IMAP or token-endpoint code; the sentence is
 * the code's own in the error table (runtime/errors.ts), so a dead letter
 * says what the sync run's log says.
 */
const IMAP_CLASSES: Record<string, JobFailureClass> = {
  E_IMAP_UNRESPONSIVE: 'server-unresponsive',
  E_OAUTH_UNAVAILABLE: 'server-unresponsive',
  E_IMAP_PROTOCOL: 'server-protocol',
  E_IMAP_TLS: 'tls-refused',
  E_IMAP_AUTH: 'authentication-refused',
  E_OAUTH_REFRESH_MISSING: 'authentication-refused',
  E_OAUTH_REFRESH_REFUSED: 'authentication-refused',
  E_OAUTH_CLIENT_REFUSED: 'authentication-refused',
  E_OAUTH_MISCONFIGURED: 'authentication-refused',
};

/**
 * One place that maps what an attempt threw, through the IMAP classifier
 * (classifyImapFailure, the one the sync run uses); nothing of the error's
 * own text is kept. A defect — anything neither the wire, the server, the
 * token endpoint nor the database marked as theirs, a BAD answer included —
 * is thrown on, as the sync run does.
 */
export function classifyChangeFailure(err: unknown): JobFailure {
  const code = errorCode(err);
  if (/^SQLITE_(BUSY|LOCKED)(_|$)/.test(code)) return { classification: 'database-busy', code, reason: DATABASE['database-busy'] };
  if (code.startsWith('SQLITE_')) return { classification: 'database-failure', code, reason: DATABASE['database-failure'] };
  const imap = classifyImapFailure(err);
  const classification = Object.hasOwn(IMAP_CLASSES, imap.code) ? IMAP_CLASSES[imap.code]! : null;
  if (classification === null) throw err; // one of our own codes, not an outside failure
  return { classification, code: imap.code, reason: Codes[imap.code].msg };
}

/** An operator's decision on a dead-lettered change of this account. */
export function decideChange(state: JournalState, ctx: ActorContext, jobId: number, decision: 'retry' | 'drop'): JobDecisionReply | null {
  const job = jobById(state.db, jobId);
  if (job === null || job.type !== CHANGE_JOB_TYPE) return null;
  if (job.accountId !== state.config.account) return { outcome: 'JobUnknown' };
  if (job.state !== 'dead') return { outcome: 'JobNotDeadLettered' };
  const now = Date.now();
  // A placement has no local message, hence no overlay to lay again.
  const messageId = isPlacementPayload(job.payload) ? null : (job.payload as ChangePayload).messageId;
  state.db
    .transaction(() => {
      if (decision === 'retry') retryJob(state.db, jobId, now);
      else dropJob(state.db, jobId, now);
      if (messageId !== null) relayOverlay(state.db, state.config.account, messageId);
    })
    .immediate();
  ctx.log.info({ event: decision === 'retry' ? 'job.retried' : 'job.dropped', job: jobIdOf(jobId), account: state.config.account }, 'job.decided');
  if (decision === 'retry') scheduleStep(state, ctx, 0);
  return { outcome: 'Accepted' };
}

/** Closes the writing session when it went unused long enough. */
export function writerIdle(state: JournalState, ctx: ActorContext): void {
  state.journal.idleCheckScheduled = false;
  if (state.journal.writer === null) return;
  const idleFor = Date.now() - state.journal.lastUsedAt;
  if (idleFor >= WRITER_IDLE_MS && state.journal.step === null) dropWriter(state);
  else scheduleIdleCheck(state, ctx);
}

export function closeJournal(state: JournalState): void {
  dropWriter(state);
}

async function writer(state: JournalState, connect: Connect): Promise<ImapFlow> {
  const held = state.journal.writer;
  if (held?.usable) return held;
  dropWriter(state);
  const client = await connect();
  client.on('close', () => {
    if (state.journal.writer === client) state.journal.writer = null;
  });
  state.journal.writer = client;
  return client;
}

function dropWriter(state: JournalState): void {
  const client = state.journal.writer;
  state.journal.writer = null;
  client?.close();
}

/** The next step in `delayMs`, unless one is due by then already (a sooner one replaces a later one). */
function scheduleStep(state: JournalState, ctx: ActorContext, delayMs: number): void {
  const at = Date.now() + Math.max(0, delayMs);
  const held = state.journal.step;
  if (held !== null && held.at <= at) return;
  held?.cancel();
  const timer = ctx.schedule({ type: 'imap-sync.change-step' }, Math.max(0, delayMs));
  state.journal.step = { at, cancel: () => timer.cancel() };
}

function scheduleIdleCheck(state: JournalState, ctx: ActorContext): void {
  if (state.journal.writer === null || state.journal.idleCheckScheduled) return;
  state.journal.idleCheckScheduled = true;
  ctx.schedule({ type: 'imap-sync.change-writer-idle' }, WRITER_IDLE_MS);
}
