/**
 * The sync actor of one account (`imap-sync:<account>`): mirrors the mapped
 * folders into the database, one run at a time when the scheduler asks,
 * and between runs watches every mapped folder (change-watch.ts) so a
 * change made on the server wakes the scheduler within seconds. It is the sole writer of the account's mail
 * tables (see runtime/store/migrations/0001-initial.ts).
 *
 * A run is a sequence of private `step` messages, so a rewind, an erasure
 * pass or the stop at shutdown is handled between two batches. The run's
 * ask is answered when the run ends (`later`); if this actor dies first, the
 * scheduler learns it at once.
 *
 * A refused login stops the actor on purpose (`E_IMAP_AUTH`): retrying a
 * wrong password locks accounts; it stays down until an operator acts.
 */
import type { ImapFlow } from 'imapflow';
import { z } from 'zod';
import { readSecret } from '../../runtime/secret-ref.ts';
import { defineActor, later, type ActorContext } from '../../runtime/actor.ts';
import { AppError } from '../../runtime/errors.ts';
import { isStorageFull, namedStorageFull, noteStorageFull } from '../../runtime/storage-full.ts';
import type { Database } from '../../runtime/store/open.ts';
import { leaseSlice } from '../../runtime/store/shared-connection.ts';
import { withdrawUnconfigured } from '../../runtime/store/mailbox/bindings.ts';
import { recordRepairRequest } from '../../runtime/store/mailbox/repair-requests.ts';
import { closeInterruptedRuns } from '../../runtime/store/mailbox/runs.ts';
import { CatchUpReply } from '../derivation/protocol.ts';
import { MIME_PARSE_IN_PLACE, ParseBatchReply, type ParseInPlace, type ParseReply } from '../mime-parse/protocol.ts';
import {
  closeJournal,
  journalRunEnded,
  journalStep,
  JournalStep,
  newJournal,
  placementAsked,
  recordAppendAsked,
  recordAsked,
  recordManyAsked,
  recordRemovalAsked,
  resumeJournal,
  WriterIdle,
  writerIdle,
  type Journal,
} from './change-journal.ts';
import { openSession } from './connection.ts';
import { handleMaintenance, isMaintenance } from './maintenance.ts';
import { AccessTokens, storeRefreshToken } from './oauth-token.ts';
import { type AccessTokenReply, ImapSyncConfig, type RunSummary, SyncMessage } from './protocol.ts';
import { ChangeWatch } from './change-watch.ts';
import { carryStep, newCarriage, recordDeferred, resumeRuns, type Carriage } from './rederivation-carriage.ts';
import { SyncRun } from './sync-run.ts';

const Step = z.strictObject({ type: z.literal('imap-sync.step') });
// Re-derivation jobs: the next segment of the run under way; a dead letter's write retried until it lands.
const RederiveStep = z.strictObject({ type: z.literal('imap-sync.rederive-step') });
const JobRecord = z.strictObject({ type: z.literal('imap-sync.job-record') });
// The change watch's sweep, between runs.
const WatchSweep = z.strictObject({ type: z.literal('imap-sync.watch-sweep') });
const Msg = z.union([SyncMessage, Step, RederiveStep, JobRecord, WatchSweep, JournalStep, WriterIdle]);

type Active = { run: SyncRun; resolve(summary: RunSummary): void; reject(err: unknown): void };

type State = {
  db: Database;
  config: ImapSyncConfig;
  tokens: AccessTokens;
  client: ImapFlow | null;
  watch: ChangeWatch;
  active: Active | null;
  consecutiveFailures: number;
  carriage: Carriage;
  journal: Journal;
};

/** A new session with the account's credentials: the reading session's, and the change journal's writing one. */
async function connect(state: State): Promise<ImapFlow> {
  const { imap } = state.config;
  if (imap.passwordRef) {
    return openSession(state.config, { pass: readSecret(imap.passwordRef, process.env, `Accounts:${state.config.account}:Imap:Password`) });
  }
  const reused = state.tokens.wouldReuse();
  try {
    return await openSession(state.config, { accessToken: await state.tokens.current() });
  } catch (err) {
    // The server refused the access token we held (revoked or expired early): redeem afresh, once.
    if (!reused || !(err instanceof AppError && err.code === 'E_IMAP_AUTH')) throw err;
    state.tokens.forget();
    return openSession(state.config, { accessToken: await state.tokens.current() });
  }
}

async function session(state: State, fresh = false): Promise<ImapFlow> {
  if (state.client?.usable && !fresh) return state.client;
  state.client?.close();
  state.client = null;
  const client = await connect(state);
  client.on('close', () => {
    if (state.client === client) state.client = null;
  });
  state.client = client;
  return client;
}

/** Between runs (and after other work on the session): watch every mapped folder for changes on the server. */
async function watch(state: State): Promise<void> {
  if (state.client?.usable) await state.watch.start(state.client);
}

/**
 * How long a folder waits for the derivation writer at its end. A catch-up
 * covers what the run stored (at most BATCHES_PER_RUN batches) and what
 * earlier ones left; past this the rows stay underived, listed as not
 * indexed yet, and the next run's catch-up takes them.
 */
const DERIVE_DEADLINE_MS = 10 * 60_000;

/** Messages per ask to the parse pool: big enough that hand-overs are rare, small enough that both threads get work. */
const PARSE_CHUNK = 16;

/**
 * Re-derivation runs parse messages up to this size on this thread: the copy
 * into shared memory, the two hops through the main thread, the reply's
 * validation and the pool's own threads cost more than the parse (about 5 ms
 * per MB; docs/performance-history.md, "The initial mirror"). Larger ones go
 * to the pool, which bounds how long one message can hold this thread. New
 * mail is parsed by the derivation writer, not here.
 */
const IN_PLACE_MAX_BYTES = 8 * 1024 * 1024;

let inPlace: Promise<ParseInPlace> | null = null;

/** The parser, loaded on this thread at its first use (a thread that never re-derives never loads it). */
function parserInPlace(): Promise<ParseInPlace> {
  inPlace ??= import(MIME_PARSE_IN_PLACE.href).then((m: { parseMessage: ParseInPlace }) => m.parseMessage);
  return inPlace;
}

function parseWith(ctx: ActorContext, state: State) {
  const inPool = (raws: Buffer[]): Promise<ParseReply[]> => {
    const chunks: Buffer[][] = [];
    for (let i = 0; i < raws.length; i += PARSE_CHUNK) chunks.push(raws.slice(i, i + PARSE_CHUNK));
    return Promise.all(
      chunks.map((chunk) =>
        ctx.ask(
          state.config.parserId,
          { type: 'mime-parse.parse-batch', account: state.config.account, raws: sharedCopies(chunk) },
          { reply: ParseBatchReply, deadlineMs: 120_000 },
        ),
      ),
    ).then((answers) => answers.flat());
  };
  return async (raws: Buffer[]): Promise<ParseReply[]> => {
    const large = raws.flatMap((raw, i) => (raw.length > IN_PLACE_MAX_BYTES ? [i] : []));
    // The pool starts on the large ones while this thread parses the rest.
    const pooled = large.length > 0 ? inPool(large.map((i) => raws[i]!)) : Promise.resolve([]);
    const parse = large.length < raws.length ? await parserInPlace() : null;
    const replies = raws.map((raw) => (parse !== null && raw.length <= IN_PLACE_MAX_BYTES ? parse(raw, state.config.account) : null));
    const fromPool = await pooled;
    large.forEach((i, k) => {
      replies[i] = fromPool[k]!;
    });
    return replies as ParseReply[];
  };
}

/**
 * The chunk's messages copied once into one shared buffer: the parse pool
 * reads them in place, where a plain buffer would be copied twice on each
 * of the two hops (here → main thread → pool thread). This actor keeps
 * its own buffers for storing.
 */
function sharedCopies(raws: Buffer[]): Uint8Array[] {
  const shared = new SharedArrayBuffer(raws.reduce((n, r) => n + r.length, 0));
  let offset = 0;
  return raws.map((raw) => {
    const view = new Uint8Array(shared, offset, raw.length);
    view.set(raw);
    offset += raw.length;
    return view;
  });
}

async function runStep(state: State, ctx: ActorContext): Promise<void> {
  const active = state.active;
  if (!active) return;
  let summary: RunSummary | null;
  try {
    summary = await active.run.step(state.consecutiveFailures);
  } catch (err) {
    state.active = null;
    active.reject(err);
    throw err; // not an IMAP failure: a defect or the database; let the supervisor restart us
  }
  if (!summary) {
    ctx.schedule({ type: 'imap-sync.step' }, 0);
    return;
  }
  state.active = null;
  state.consecutiveFailures = summary.outcome === 'failed' ? state.consecutiveFailures + 1 : 0;
  state.watch.afterRun(active.run.watchFolders());
  journalRunEnded(state, ctx);
  active.resolve(summary);
  await watch(state);
}

export default defineActor({
  name: 'imap-sync',
  config: ImapSyncConfig,
  messages: Msg,
  init(config, ctx) {
    const lease = leaseSlice(config.store, { checkpoints: 'background' });
    ctx.defer(() => lease.release());
    const db = lease.db;
    closeInterruptedRuns(db, config.account, Date.now());
    withdrawUnconfigured(
      db,
      config.account,
      config.folders.map((f) => f.alias),
    );
    const state: State = {
      db,
      config,
      tokens: new AccessTokens(db, config),
      client: null,
      watch: new ChangeWatch({
        periodMs: config.changeCheckMs,
        wake: () => ctx.tell(config.schedulerId, { type: 'sync-scheduler.wake', account: config.account }),
        schedule: (delayMs) => ctx.schedule({ type: 'imap-sync.watch-sweep' }, delayMs),
        log: ctx.log,
      }),
      active: null,
      consecutiveFailures: 0,
      carriage: newCarriage(),
      journal: newJournal(),
    };
    ctx.defer(() => {
      state.watch.stop();
      state.client?.close();
      closeJournal(state);
    });
    resumeRuns(state, ctx);
    resumeJournal(state, ctx);
    return state;
  },
  async handle(state, msg, ctx) {
    switch (msg.type) {
      case 'imap-sync.run': {
        if (state.active) return later(new Promise<RunSummary>((resolve, reject) => chain(state.active!, resolve, reject)));
        state.watch.stop();
        const run = startRun(
          {
            db: state.db,
            config: state.config,
            log: ctx.log,
            session: (fresh?: boolean) => session(state, fresh),
            derive: (parent) =>
              ctx.ask(
                state.config.derivationId,
                { type: 'derivation.catch-up', account: state.config.account, throughId: null },
                { reply: CatchUpReply, deadlineMs: DERIVE_DEADLINE_MS, ...(parent !== undefined ? { parent } : {}) },
              ),
            now: Date.now,
            trace: ctx.trace,
          },
          state.config.account,
        );
        const done = new Promise<RunSummary>((resolve, reject) => {
          state.active = { run, resolve, reject };
        });
        ctx.schedule({ type: 'imap-sync.step' }, 0);
        return later(
          done.then((summary) => {
            if (summary.outcome === 'failed' && authRefused(run)) ctx.stopSelf(run.failureCode ?? 'E_IMAP_AUTH');
            return summary;
          }),
        );
      }
      case 'imap-sync.step':
        return runStep(state, ctx);
      case 'imap-sync.record-repairs': {
        const now = Date.now();
        const recorded = msg.repairs.filter((r) =>
          recordRepairRequest(state.db, { messageId: r.messageId, accountId: state.config.account, reason: r.reason, now }),
        ).length;
        return { recorded };
      }
      case 'imap-sync.store-refresh-token': {
        // Without a key ring this throws E_KEYRING_MISSING, answered to the asker; nothing is stored.
        storeRefreshToken(state.db, state.config, msg.refreshToken, Date.now());
        // The access token held was redeemed from the grant just replaced; a parking for the old grant ends with it.
        state.tokens.grantReplaced();
        return { stored: true as const };
      }
      case 'imap-sync.rederive-step':
        return carryStep(state, ctx, parseWith(ctx, state));
      case 'imap-sync.job-record':
        return recordDeferred(state, ctx);
      case 'imap-sync.record-changes':
        return recordAsked(state, ctx, msg);
      case 'imap-sync.record-changes-many':
        return recordManyAsked(state, ctx, msg.asks, state.active !== null);
      case 'imap-sync.record-append':
        return recordAppendAsked(state, ctx, msg);
      case 'imap-sync.record-removal':
        return recordRemovalAsked(state, ctx, msg);
      case 'imap-sync.placement':
        return placementAsked(state, msg.job);
      case 'imap-sync.access-token':
        return accessToken(state, msg.fresh === true);
      case 'imap-sync.change-step':
        return journalStep(state, ctx, () => connect(state));
      case 'imap-sync.change-writer-idle':
        return writerIdle(state, ctx);
      case 'imap-sync.watch-sweep':
        return state.watch.sweep();
      default:
        if (isMaintenance(msg)) return handleMaintenance(state, ctx, msg);
        throw new AppError('E_PROTOCOL_INVALID');
    }
  },
  stop(state) {
    state.watch.stop();
    if (state.active) {
      const active = state.active;
      state.active = null;
      active.resolve(active.run.interrupt(state.consecutiveFailures));
    }
  },
});

/**
 * For the outbox's SMTP login (XOAUTH2): the access token the IMAP sessions
 * use, redeemed from the sealed refresh token when none valid is held.
 * Nothing here logs it.
 */
async function accessToken(state: State, fresh: boolean): Promise<AccessTokenReply> {
  const { imap } = state.config;
  if (!imap.oauth) throw new AppError('E_IMAP_AUTH', { details: { cause: 'no-oauth-configured' } });
  if (fresh) state.tokens.forget();
  return { accessToken: await state.tokens.current(), username: imap.username };
}

/** A new run; one the disk has no room to record is answered E_STORE_FULL, and the scheduler backs off. */
function startRun(deps: ConstructorParameters<typeof SyncRun>[0], account: string): SyncRun {
  try {
    return new SyncRun(deps);
  } catch (err) {
    if (isStorageFull(err)) noteStorageFull(deps.log, `imap-sync:${account}`, err);
    throw namedStorageFull(err);
  }
}

function chain(active: Active, resolve: (s: RunSummary) => void, reject: (e: unknown) => void): void {
  const { resolve: r0, reject: j0 } = active;
  active.resolve = (s) => {
    r0(s);
    resolve(s);
  };
  active.reject = (e) => {
    j0(e);
    reject(e);
  };
}

/**
 * Only the mail server refusing a login stops the actor: retrying a wrong
 * password locks accounts. A missing or refused refresh token tried no login
 * at all, and the cure is an operator placing a new one through the admin
 * route — which this actor must be up to store — so those runs fail and back
 * off instead.
 */
function authRefused(run: SyncRun): boolean {
  return run.failureCode === 'E_IMAP_AUTH';
}
