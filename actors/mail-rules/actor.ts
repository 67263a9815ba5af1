/**
 * The mail-rules actor (`mail-rules`): judges arriving mail (while
 * `MailRules:Enabled`) and carries rule runs, one message at a time, on
 * the system actors' thread. Its queue is the store: the derivation
 * writer's doorbell (`mail-rules.derived`) says an account has new derived
 * mail, and the stage reads what lies past its cursor. Work goes in small
 * segments, one step at a time, so asks (a run's status, the listing) are
 * answered between two.
 *
 * A segment's changes are recorded (the sync actor answers once durable,
 * all of the segment's asks in one transaction) before its conclusions and
 * the position past it are written (one transaction), so a crash repeats
 * at most the segment it was on, and the journal answers the repeat with
 * the same jobs (conclude.ts). A sync actor that is down or
 * slow is an outside failure: the step is tried again later, the cursor
 * unmoved. Anything else thrown is a defect and crashes the actor.
 *
 * Logs name accounts, message ids, counts and a rule's position, never its
 * name, a condition's value, a keyword, an address or a subject.
 */
import { z } from 'zod';
import { defineActor, type ActorContext, later } from '../../runtime/actor.ts';
import { AppError } from '../../runtime/errors.ts';
import type { Database } from '../../runtime/store/open.ts';
import { openSlice } from '../../runtime/store/open-slice.ts';
import { judgedSegment, lastStoredId, liveCountsByAlias } from '../../runtime/store/mail-rules/judged-mail.ts';
import {
  concludeMessage,
  endRuleRun,
  type HistoryRow,
  latestRuleRun,
  outstandingRuleRuns,
  requestRuleRun,
  ruleRunById,
  startArrivalCursor,
  arrivalCursor,
  forgetArrivalCursors,
} from '../../runtime/store/mail-rules/rule-records.ts';
import { RecentWork } from '../../runtime/work-progress.ts';
import { folderRoleOf } from '../derivation/protocol.ts';
import { type Planned, plan, record } from './conclude.ts';
import { judge, type MessageFacts } from './judge.ts';
import { listRules } from './listing.ts';
import { MailRulesConfig, MailRulesMessage, type RuleRun as RuleRunView } from './protocol.ts';
import { runView } from './run-view.ts';

/**
 * Messages judged per step: a step records its changes in one ask and one
 * transaction per RECORD_MANY_MAX messages that ask anything (about one in
 * ten in a first mirror with the bench's rules), and its conclusions and
 * position in one more, so a larger segment costs fewer asks and commits (docs/performance.md, "initial mirror CPU
 * with 20 rules"); a step of this many still takes milliseconds, so asks
 * wait little behind it.
 */
const SEGMENT = 512;
/** After a sync actor was down or slow, the next try. */
const RETRY_MS = 5_000;

const Step = z.strictObject({ type: z.literal('mail-rules.step') });
const Msg = z.discriminatedUnion('type', [...MailRulesMessage.options, Step]);
type Msg = z.infer<typeof Msg>;

type State = {
  db: Database;
  config: MailRulesConfig;
  /** Accounts whose arrivals may lie past the cursor. */
  arrivals: Set<string>;
  /** A step is scheduled or running: never two at once. */
  stepping: boolean;
  /** Rates of the runs under way, by run id. */
  recent: Map<number, RecentWork>;
  /** Whether a run's segment goes next when arrivals wait too. */
  runTurn: boolean;
};

type Judged = { rows: HistoryRow[]; changes: number; matched: number };

function senderOf(fromJson: string | null): string | null {
  if (fromJson === null) return null;
  const first = (JSON.parse(fromJson) as Array<{ address?: string }>)[0];
  return first?.address ?? null;
}

type Stored = { id: number; alias: string; fromJson: string | null; subject: string | null };

/** One message's conclusions, with what each asks. Mail in folders rules do not judge (sent, drafts, junk, trash) concludes nothing. */
function planMessage(state: State, account: string, m: Stored, runId: number | null): Planned[] {
  if (folderRoleOf(m.alias) !== 'received') return [];
  const facts: MessageFacts = { account, folder: m.alias, sender: senderOf(m.fromJson), subject: m.subject };
  return judge(state.config.rules, facts).map((conclusion) => plan(state.db, { account, messageId: m.id, folder: m.alias, runId }, conclusion));
}

/** Judges a segment and records what its matching rules ask, all of it in one ask to the sync actor (a few at most for long segments). */
async function judgeSegment(state: State, ctx: ActorContext, account: string, segment: readonly Stored[], runId: number | null): Promise<Judged> {
  const planned = segment.flatMap((m) => planMessage(state, account, m, runId));
  const concluded = await record(ctx, account, planned);
  let changes = 0;
  for (const done of concluded) {
    changes += done.changeCount;
    ctx.log.debug(
      { event: 'mail-rules.concluded', account, messageId: done.row.messageId, rule: done.row.position, changes: done.changeCount, note: done.row.note },
      'mail-rules.concluded',
    );
  }
  return { rows: concluded.map((c) => c.row), changes, matched: new Set(concluded.map((c) => c.row.messageId)).size };
}

/**
 * One segment of an account's arrivals: its conclusions and the position
 * past it in one commit. The account leaves the set only when a read finds
 * nothing, in the same turn: a doorbell rung while a segment was being
 * judged is never lost.
 */
async function arrivalSegment(state: State, ctx: ActorContext, account: string): Promise<void> {
  const cursor = arrivalCursor(state.db, account) ?? 0;
  const segment = judgedSegment(state.db, account, cursor, Number.MAX_SAFE_INTEGER, SEGMENT);
  if (segment.length === 0) {
    state.arrivals.delete(account);
    return;
  }
  const judged = await judgeSegment(state, ctx, account, segment, null);
  concludeMessage(state.db, account, judged.rows, { kind: 'arrival', accountId: account, messageId: segment.at(-1)!.id }, Date.now());
}

/** One segment of a run; the run ends when its segment comes back short. */
async function runSegment(state: State, ctx: ActorContext, runId: number): Promise<void> {
  const run = ruleRunById(state.db, runId);
  if (run === null || run.endedAt !== null) return;
  const started = Date.now();
  const segment = judgedSegment(state.db, run.accountId, run.lastMessageId, run.throughId, SEGMENT);
  if (segment.length > 0) {
    const verdict = await judgeSegment(state, ctx, run.accountId, segment, run.id);
    // Only mail in folders rules judge counts toward the run's total.
    const judged = segment.filter((m) => folderRoleOf(m.alias) === 'received').length;
    concludeMessage(
      state.db,
      run.accountId,
      verdict.rows,
      { kind: 'run', runId: run.id, messageId: segment.at(-1)!.id, judged, matched: verdict.matched, changes: verdict.changes },
      Date.now(),
    );
  }
  const recent = state.recent.get(run.id) ?? new RecentWork();
  state.recent.set(run.id, recent);
  recent.add({ from: started, to: Date.now(), count: segment.length });
  if (segment.length < SEGMENT) {
    endRuleRun(state.db, run.id, Date.now());
    state.recent.delete(run.id);
    const ended = ruleRunById(state.db, run.id)!;
    ctx.log.info({ event: 'mail-rules.run-ended', account: run.accountId, run: run.id, judged: ended.judged, matched: ended.matched }, 'mail-rules.run-ended');
  }
}

/** One unit of work: an account's arrivals or a run's segment, taking turns so neither starves the other. True while anything remains. */
async function work(state: State, ctx: ActorContext): Promise<boolean> {
  const [account] = state.arrivals;
  const [run] = outstandingRuleRuns(state.db);
  const runTurn = run !== undefined && (account === undefined || state.runTurn);
  state.runTurn = !runTurn;
  if (runTurn) await runSegment(state, ctx, run.id);
  else if (account !== undefined) {
    // Accounts take turns too: the one served goes to the back.
    state.arrivals.delete(account);
    state.arrivals.add(account);
    await arrivalSegment(state, ctx, account);
  }
  return state.arrivals.size > 0 || outstandingRuleRuns(state.db).length > 0;
}

function kick(state: State, ctx: ActorContext<Msg>, delayMs = 0): void {
  if (state.stepping) return;
  state.stepping = true;
  ctx.schedule({ type: 'mail-rules.step' }, delayMs);
}

async function step(state: State, ctx: ActorContext<Msg>): Promise<void> {
  let more: boolean;
  try {
    more = await work(state, ctx);
  } catch (err) {
    state.stepping = false;
    // The account's sync actor down or slow is an outside failure: nothing moved, try again later.
    if (err instanceof AppError && (err.code === 'E_ACTOR_DOWN' || err.code === 'E_ACTOR_TIMEOUT')) {
      ctx.log.warn({ event: 'mail-rules.sync-unavailable', code: err.code, retryInMs: RETRY_MS }, 'mail-rules.sync-unavailable');
      kick(state, ctx, RETRY_MS);
      return;
    }
    throw err;
  }
  state.stepping = false;
  if (more) kick(state, ctx);
}

function view(state: State, run: NonNullable<ReturnType<typeof latestRuleRun>>): RuleRunView {
  return runView(run, state.recent.get(run.id)?.perSecond(Date.now()) ?? null);
}

function configured(state: State, account: string): void {
  if (!state.config.accounts.includes(account)) throw new AppError('E_NOT_FOUND', { message: 'No configured account by that identifier.' });
}

export default defineActor({
  name: 'mail-rules',
  config: MailRulesConfig,
  messages: Msg,
  init(config, ctx) {
    const db = openSlice(config.store, { checkpoints: 'background' });
    ctx.defer(() => {
      db.close();
    });
    const state: State = { db, config, arrivals: new Set(), stepping: false, recent: new Map(), runTurn: false };
    if (config.enabled) {
      for (const account of config.accounts) {
        // Mail stored before the stage first met the account enabled is left to an admin run.
        startArrivalCursor(db, account, lastStoredId(db, account), Date.now());
        state.arrivals.add(account);
      }
    } else {
      // Off: switched on again later, the stage starts from the mail stored then, not from where it stopped.
      forgetArrivalCursors(db);
    }
    // The posture already says what runs; an operator hears of the start only when it resumed runs.
    const resumedRuns = outstandingRuleRuns(db).length;
    ctx.log[resumedRuns > 0 ? 'info' : 'debug'](
      { event: 'mail-rules.started', enabled: config.enabled, rules: config.rules.length, resumedRuns },
      'mail-rules.started',
    );
    kick(state, ctx);
    return state;
  },
  handle(state, msg: Msg, ctx) {
    switch (msg.type) {
      case 'mail-rules.step':
        return later(step(state, ctx));
      case 'mail-rules.derived':
        // An account no rule names still moves its cursor: a rule added later judges only mail arriving after it.
        if (!state.config.enabled || !state.config.accounts.includes(msg.account)) return;
        state.arrivals.add(msg.account);
        kick(state, ctx);
        return;
      case 'mail-rules.start-run': {
        configured(state, msg.account);
        const account = msg.account;
        const asked = requestRuleRun(state.db, account, Date.now(), () => {
          const throughId = lastStoredId(state.db, account);
          let total = 0;
          for (const [alias, n] of liveCountsByAlias(state.db, account, throughId)) if (folderRoleOf(alias) === 'received') total += n;
          return { throughId, total };
        });
        if (asked.started) ctx.log.info({ event: 'mail-rules.run-started', account, run: asked.run.id, total: asked.run.total }, 'mail-rules.run-started');
        kick(state, ctx);
        return { started: asked.started, run: view(state, asked.run) };
      }
      case 'mail-rules.run-status': {
        configured(state, msg.account);
        const run = latestRuleRun(state.db, msg.account);
        return { run: run === null ? null : view(state, run) };
      }
      case 'mail-rules.list':
        return later(listRules(state.config));
    }
  },
});
