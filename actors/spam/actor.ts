/**
 * The spam actor (`spam`): one per deployment, on the system actors' thread
 * (it mostly waits on the engine). Two kinds of work, each serialised per
 * account:
 *
 * - arrival (`Spam:Enabled` only): rung by the derivation writer
 *   (`spam.derived`), it judges the account's derived mail past its durable
 *   cursor, in id order, and asks the configured action of each spam
 *   verdict. When it first meets an account (at start) the cursor is set to
 *   the account's highest message id: mail stored before the stage was
 *   enabled is left to an admin run; on a new deployment that is none, so
 *   the first mirror is judged.
 * - runs (`spam.run`): every stored message of the account, a dry run
 *   unless asked to apply, one at a time per account, resumed from their
 *   position after a restart.
 *
 * The engine down, timing out or its circuit open leaves the message
 * unclassified: the work stops there (its position does not move) and is
 * tried again after `RetryDelay`, doubling up to `RetryDelayMaximum`; when
 * the engine answers again, it carries on. Never a verdict without the
 * engine or a trusted header.
 *
 * A defect (a store error, a sync actor that does not answer) crashes the
 * actor; its supervisor restarts it and init resumes everything from the
 * store. Logs carry ids, counts, scores and failure classes: never a
 * subject, an address or content.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { z } from 'zod';
import { type ActorContext, defineActor, later } from '../../runtime/actor.ts';
import { systemClock } from '../../runtime/clock.ts';
import type { Database } from '../../runtime/store/open.ts';
import { openSlice } from '../../runtime/store/open-slice.ts';
import {
  arrivalCursor,
  type Classification,
  endSpamRun,
  latestSpamRun,
  markRunWaiting,
  outstandingSpamRuns,
  recordArrivalVerdict,
  recordRunSegment,
  requestSpamRun,
  type SpamRun,
  setArrivalCursor,
  forgetArrivalCursors,
  spamRunById,
} from '../../runtime/store/spam/classifications.ts';
import { highestMessageId, judgedCount, judgedSegment } from '../../runtime/store/spam/judged-mail.ts';
import { RecentWork, workProgress } from '../../runtime/work-progress.ts';
import { act, type Judge, judgeAhead } from './judgement.ts';
import { SPAM_CALLS_IN_FLIGHT, SpamConfig, SpamMessage, type SpamRunReply, type SpamRunView } from './protocol.ts';
import { RspamdClient } from './rspamd-client.ts';

/** Messages read per segment (a run records its verdicts one transaction per segment). */
const SEGMENT = 16;

// Private: timers of the retries after the engine was unavailable.
const ArrivalRetry = z.strictObject({ type: z.literal('spam.arrival-retry'), account: z.string() });
const RunStep = z.strictObject({ type: z.literal('spam.run-step'), account: z.string() });
const Msg = z.discriminatedUnion('type', [...SpamMessage.options, ArrivalRetry, RunStep]);
type Msg = z.infer<typeof Msg>;

/** One account's work of one kind: whether a pass runs, whether another was asked meanwhile, and the backoff. */
type Lane = { running: boolean; again: boolean; failures: number; timer: { cancel(): void } | null };

type State = {
  config: SpamConfig;
  db: Database;
  judge: Judge;
  abort: AbortController;
  stopping: boolean;
  arrival: Map<string, Lane>;
  runs: Map<string, Lane>;
  /** Recent segments of each run under way, for its rate. */
  recent: Map<number, RecentWork>;
};

function lane(map: Map<string, Lane>, account: string): Lane {
  let l = map.get(account);
  if (l === undefined) {
    l = { running: false, again: false, failures: 0, timer: null };
    map.set(account, l);
  }
  return l;
}

function moveAlias(config: SpamConfig): string | null {
  return config.action === 'Move' ? config.folder : null;
}

/** Waits before the next try after `failures` unavailable tries in a row. */
function retryDelay(config: SpamConfig, failures: number): number {
  return Math.min(config.engine.retryDelayMaxMs, config.engine.retryDelayMs * 2 ** Math.max(0, failures - 1));
}

/** The engine was unavailable: the lane waits, and a timer brings it back. */
function waitForEngine(state: State, ctx: ActorContext<Msg>, l: Lane, account: string, kind: 'arrival' | 'run', failure: string, retry: Msg): void {
  l.failures += 1;
  const delayMs = retryDelay(state.config, l.failures);
  ctx.log.warn({ event: 'spam.engine-unavailable', account, work: kind, failure, retryInMs: delayMs, tries: l.failures }, 'spam.engine-unavailable');
  l.timer?.cancel();
  l.timer = ctx.schedule(retry, delayMs);
}

function engineBack(ctx: ActorContext<Msg>, l: Lane, account: string, kind: 'arrival' | 'run'): void {
  if (l.failures > 0) ctx.log.info({ event: 'spam.engine-back', account, work: kind, tries: l.failures }, 'spam.engine-back');
  l.failures = 0;
}

// ---------------------------------------------------------------- arrival

async function arrivalPass(state: State, ctx: ActorContext<Msg>, account: string): Promise<void> {
  const l = lane(state.arrival, account);
  if (l.running) {
    l.again = true;
    return;
  }
  l.running = true;
  try {
    do {
      l.again = false;
      if (!(await arrivalSegments(state, ctx, l, account))) return;
    } while (l.again && !state.stopping);
  } finally {
    l.running = false;
  }
}

/** Judges what waits past the cursor; false when it stopped to wait for the engine. */
async function arrivalSegments(state: State, ctx: ActorContext<Msg>, l: Lane, account: string): Promise<boolean> {
  let cursor = arrivalCursor(state.db, account) ?? 0;
  let judged = 0;
  let spam = 0;
  while (!state.stopping) {
    const segment = judgedSegment(state.db, account, cursor, Number.MAX_SAFE_INTEGER, SEGMENT, moveAlias(state.config));
    if (segment.length === 0) break;
    const ahead = judgeAhead(
      state.judge,
      segment.map((m) => m.raw),
      SPAM_CALLS_IN_FLIGHT,
    );
    for (const [i, m] of segment.entries()) {
      if (state.stopping) return true;
      if (m.raw === null) {
        // Derived without raw MIME cannot happen (derivation reads it); skipped rather than blocking the account.
        setArrivalCursor(state.db, account, m.id, Date.now());
        cursor = m.id;
        continue;
      }
      const judgement = (await ahead[i])!;
      if (judgement.kind === 'unclassified') {
        waitForEngine(state, ctx, l, account, 'arrival', judgement.failure, { type: 'spam.arrival-retry', account });
        logArrival(ctx, account, judged, spam);
        return false;
      }
      engineBack(ctx, l, account, 'arrival');
      const classification = await act(ctx, state.db, state.config, account, m.id, judgement, true);
      recordArrivalVerdict(state.db, account, classification, Date.now());
      cursor = m.id;
      judged += 1;
      if (classification.verdict === 'spam') spam += 1;
    }
    await nextTurn();
  }
  logArrival(ctx, account, judged, spam);
  return true;
}

function logArrival(ctx: ActorContext<Msg>, account: string, judged: number, spam: number): void {
  if (judged > 0) ctx.log.info({ event: 'spam.arrivals-classified', account, judged, spam }, 'spam.arrivals-classified');
}

// ---------------------------------------------------------------- runs

function runView(state: State, run: SpamRun): SpamRunView {
  const perSecond = state.recent.get(run.runId)?.perSecond(Date.now()) ?? null;
  return {
    account: run.account,
    apply: run.apply,
    requestedAt: new Date(run.requestedAt).toISOString(),
    isOutstanding: run.endedAt === null,
    judgedEmailCount: run.judgedCount,
    spamEmailCount: run.spamCount,
    changeCount: run.changesCount,
    waitingForEngineSince: run.waitingSince === null ? null : new Date(run.waitingSince).toISOString(),
    progress: workProgress(Math.min(run.judgedCount, run.totalCount), Math.max(run.totalCount, run.judgedCount), run.endedAt === null ? perSecond : null),
    endedAt: run.endedAt === null ? null : new Date(run.endedAt).toISOString(),
    outcome: run.endedAt === null ? null : 'completed',
  };
}

function startRun(state: State, ctx: ActorContext<Msg>, account: string, apply: boolean): SpamRunReply {
  const alias = moveAlias(state.config);
  const { started, run } = requestSpamRun(state.db, account, apply, Date.now(), () => {
    const throughId = highestMessageId(state.db, account);
    return { throughId, totalCount: judgedCount(state.db, account, 0, throughId, alias) };
  });
  if (started) {
    ctx.log.info({ event: 'spam.run-started', account, runId: run.runId, apply, total: run.totalCount }, 'spam.run-started');
    ctx.schedule({ type: 'spam.run-step', account }, 0);
  }
  return { started, run: runView(state, run) };
}

async function runPass(state: State, ctx: ActorContext<Msg>, account: string): Promise<void> {
  const l = lane(state.runs, account);
  if (l.running) return;
  l.running = true;
  try {
    await runSegments(state, ctx, l, account);
  } finally {
    l.running = false;
  }
}

async function runSegments(state: State, ctx: ActorContext<Msg>, l: Lane, account: string): Promise<void> {
  let run = latestSpamRun(state.db, account);
  if (run === null || run.endedAt !== null) return;
  const recent = state.recent.get(run.runId) ?? new RecentWork();
  state.recent.set(run.runId, recent);
  while (!state.stopping) {
    const segment = judgedSegment(state.db, account, run.lastMessageId, run.throughId, SEGMENT, moveAlias(state.config));
    if (segment.length === 0) {
      endSpamRun(state.db, run.runId, Date.now());
      state.recent.delete(run.runId);
      ctx.log.info(
        { event: 'spam.run-ended', account, runId: run.runId, judged: run.judgedCount, spam: run.spamCount, changes: run.changesCount },
        'spam.run-ended',
      );
      return;
    }
    const started = Date.now();
    const verdicts: Classification[] = [];
    let position = run.lastMessageId;
    let unavailable: string | null = null;
    const ahead = judgeAhead(
      state.judge,
      segment.map((m) => m.raw),
      SPAM_CALLS_IN_FLIGHT,
    );
    for (const [i, m] of segment.entries()) {
      if (state.stopping) break;
      if (m.raw !== null) {
        const judgement = (await ahead[i])!;
        if (judgement.kind === 'unclassified') {
          unavailable = judgement.failure;
          break;
        }
        engineBack(ctx, l, account, 'run');
        verdicts.push(await act(ctx, state.db, state.config, account, m.id, judgement, run.apply));
      }
      position = m.id;
    }
    if (position > run.lastMessageId) {
      recordRunSegment(state.db, run.runId, account, verdicts, position, Date.now());
      recent.add({ from: started, to: Date.now(), count: verdicts.length });
    }
    if (unavailable !== null) {
      markRunWaiting(state.db, run.runId, Date.now());
      waitForEngine(state, ctx, l, account, 'run', unavailable, { type: 'spam.run-step', account });
      return;
    }
    run = spamRunById(state.db, run.runId)!;
    await nextTurn();
  }
}

// ---------------------------------------------------------------- the actor

export default defineActor({
  name: 'spam',
  config: SpamConfig,
  messages: Msg,
  init(config, ctx) {
    const db = openSlice(config.store, { checkpoints: 'background' });
    const abort = new AbortController();
    const engine = new RspamdClient({
      address: config.engine.address,
      timeoutMs: config.engine.timeoutMs,
      failuresToOpen: config.engine.failuresToOpen,
      coolDownMs: config.engine.coolDownMs,
      clock: systemClock,
    });
    const state: State = {
      config,
      db,
      judge: { config, engine, trustedHosts: new Set(config.trusted.hosts.map((h) => h.toLowerCase())), signal: abort.signal },
      abort,
      stopping: false,
      arrival: new Map(),
      runs: new Map(),
      recent: new Map(),
    };
    ctx.defer(async () => {
      state.stopping = true;
      abort.abort();
      for (const l of [...state.arrival.values(), ...state.runs.values()]) l.timer?.cancel();
      await engine.close();
      db.close();
    });
    if (config.enabled) {
      for (const account of config.accounts) {
        // First meeting: mail stored before is left to an admin run (none on a new deployment).
        if (arrivalCursor(db, account) === null) setArrivalCursor(db, account, highestMessageId(db, account), Date.now());
        // Mail derived while the actor was down waits past the cursor.
        ctx.schedule({ type: 'spam.arrival-retry', account }, 0);
      }
    } else {
      // Off: switched on again later, the stage starts from the mail stored then, not from where it stopped.
      forgetArrivalCursors(db);
    }
    for (const run of outstandingSpamRuns(db)) {
      if (config.accounts.includes(run.account)) ctx.schedule({ type: 'spam.run-step', account: run.account }, 0);
    }
    return state;
  },
  handle(state, msg: Msg, ctx) {
    switch (msg.type) {
      case 'spam.derived':
      case 'spam.arrival-retry':
        if (!state.config.enabled || !state.config.accounts.includes(msg.account)) return undefined;
        if (msg.type === 'spam.derived' && lane(state.arrival, msg.account).timer !== null && lane(state.arrival, msg.account).failures > 0) {
          // Waiting for the engine: the retry timer carries on; a doorbell does not hammer it.
          return undefined;
        }
        lane(state.arrival, msg.account).timer = null;
        return later(arrivalPass(state, ctx, msg.account));
      case 'spam.run':
        return startRun(state, ctx, msg.account, msg.apply);
      case 'spam.run-status': {
        const run = latestSpamRun(state.db, msg.account);
        return { started: false, run: run === null ? null : runView(state, run) } satisfies SpamRunReply;
      }
      case 'spam.run-step':
        lane(state.runs, msg.account).timer = null;
        return later(runPass(state, ctx, msg.account));
    }
  },
  stop(state) {
    state.stopping = true;
    state.abort.abort();
  },
});
