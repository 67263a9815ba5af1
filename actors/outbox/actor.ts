/**
 * The outbox actor (`outbox`, one per deployment): sole writer of the
 * outbox and drafts tables. It records sends and drafts (composing their
 * MIME once), delivers recorded sends over SMTP off the request, and asks
 * each account's sync actor to file sent copies and drafts through the
 * change journal (filing.ts).
 *
 * Delivery runs beside the mailbox: a tick claims the sends due (up to
 * `concurrency` at once), each attempt runs as its own promise and writes
 * its ending directly (synchronous statements, so nothing interleaves), and
 * asks and operator decisions keep being answered meanwhile. An account's
 * SMTP session that ended its message cleanly is kept for its next sends
 * (smtp-sessions.ts); stopping and crash cleanups close them. An attempt's
 * unexpected failure is reported back as a private message whose handler
 * crashes the actor: the supervisor restarts it, and `releaseClaims` at
 * start gives back sends whose body had not begun. A send whose body began
 * stays TransmissionBegun, and only an operator re-offers it. On its own
 * timer it erases the content of ended sends and deleted drafts past
 * `Outbox:Retention`, in bounded steps (retention.ts).
 *
 * A full disk under the store (docs/operations.md "A full disk") is waited
 * out: a send is then refused to its caller with E_STORE_FULL (nothing
 * recorded); no send is claimed; an attempt whose ending could not be
 * written keeps it in memory (`unwritten`) and writes it first once the
 * disk takes writes again, so a message the server accepted is recorded
 * Sent and never offered twice; one that found the disk full before its
 * body is given back without counting an attempt.
 */
import type { Context } from '@opentelemetry/api';
import { z } from 'zod';
import { defineActor, type ActorContext } from '../../runtime/actor.ts';
import { AppError } from '../../runtime/errors.ts';
import { isStorageFull, noteStorageFull, noteStorageWritable, STORAGE_FULL_RETRY_MS } from '../../runtime/storage-full.ts';
import { readSecret } from '../../runtime/secret-ref.ts';
import type { Database } from '../../runtime/store/open.ts';
import { openSlice } from '../../runtime/store/open-slice.ts';
import {
  type Outgoing,
  cancelSend,
  claimSend,
  dueSends,
  endAttempt,
  leaveBegun,
  markBodyBegan,
  nextDueAt,
  rawMimeOf,
  recipientsOf,
  releaseClaims,
  requeueSend,
  unclaimSend,
} from '../../runtime/store/outbox/outgoing.ts';
import { type AttemptResult, type Credentials, attemptDelivery } from './delivery.ts';
import { deleteDraftOf, fileOwed, recordDraftSend, saveDraftOf, type Filing } from './drafts.ts';
import { accessToken } from './filing.ts';
import { PRUNE_START_MS, PruneTick, type Pruning, pruneStep, schedulePrune } from './retention.ts';
import { outgoingView, recordNewSend } from './sends.ts';
import { OutboxConfig, OutboxMessage } from './protocol.ts';
import { inSmtpSendSpan } from './send-span.ts';
import { SmtpSessions } from './smtp-sessions.ts';

const Tick = z.strictObject({ type: z.literal('outbox.tick') });
/** An attempt failed in a way no rule covers: crash, so the supervisor restarts the outbox. */
const Fault = z.strictObject({ type: z.literal('outbox.fault'), where: z.string() });
const Msg = z.union([OutboxMessage, Tick, Fault, PruneTick]);

/** Longest wait between ticks even when nothing is due, so a send recorded behind the actor's back is found. */
const IDLE_TICK_MS = 60_000;

export type OutboxState = {
  db: Database;
  config: OutboxConfig;
  /** Sends an attempt holds now. */
  underWay: Set<number>;
  /** The attempts in flight, so stopping can let them hear their answers. */
  attempts: Set<Promise<void>>;
  stopping: boolean;
  timer: { cancel(): void } | null;
  /** When the scheduled tick fires (epoch ms), so a later wish never postpones an earlier one. */
  tickAt: number;
  closed: boolean;
  filing: Filing;
  /** Open SMTP sessions kept per account for the next sends (smtp-sessions.ts). */
  sessions: SmtpSessions;
  /** The retention prune's timer and the counts of the sweep under way (retention.ts). */
  pruning: Pruning;
  /** Attempts' endings a full disk kept from being written, by send; written before any new claim. */
  unwritten: Map<number, () => void>;
};

/** Where the outbox reports a full disk from. */
const PLACE = 'outbox';

/**
 * Write the endings a full disk held back. Returns false while the disk is
 * still full: no new send may be claimed then.
 */
function writeUnwritten(state: OutboxState, ctx: ActorContext): boolean {
  for (const [id, write] of state.unwritten) {
    try {
      write();
    } catch (err) {
      if (!isStorageFull(err)) throw err;
      noteStorageFull(ctx.log, PLACE, err);
      return false;
    }
    state.unwritten.delete(id);
  }
  return true;
}

/** Write `ending` now, or keep it for when the disk takes writes again. */
function writeOrKeep(state: OutboxState, ctx: ActorContext, id: number, ending: () => void): void {
  try {
    ending();
  } catch (err) {
    if (!isStorageFull(err)) throw err;
    noteStorageFull(ctx.log, PLACE, err);
    state.unwritten.set(id, ending);
  }
}

function scheduleTick(state: OutboxState, ctx: ActorContext, delayMs: number): void {
  const at = Date.now() + Math.max(0, delayMs);
  if (state.timer !== null && state.tickAt <= at) return;
  state.timer?.cancel();
  state.tickAt = at;
  state.timer = ctx.schedule({ type: 'outbox.tick' }, Math.max(0, delayMs));
}

/** While the journal has placements of ours to finish (a draft's new revision before its old copy goes), look again this soon. */
const FILING_POLL_MS = 1_000;

/** Wake the delivery loop now (a send was recorded, re-offered or an attempt ended). */
export function kick(state: OutboxState, ctx: ActorContext): void {
  scheduleTick(state, ctx, 0);
}

function retryDelayMs(config: OutboxConfig): (attempts: number) => number {
  return (attempts) => config.retryDelayMs * 2 ** Math.max(0, attempts - 1);
}

/** `parent`: the `smtp.send` span's context, the parent of the token's ask. */
async function credentialsOf(state: OutboxState, ctx: ActorContext, send: Outgoing, parent: Context): Promise<Credentials> {
  const accountId = send.accountId;
  const account = state.config.accounts.find((a) => a.id === accountId)!;
  const smtp = account.smtp!;
  // Asked only when a session is opened (a reused one is logged in already), so a rotated password needs no restart.
  if (smtp.passwordRef) return { password: readSecret(smtp.passwordRef, process.env, `Accounts:${accountId}:Smtp:Password`) };
  // A token the server refused last time is not offered again: the sync actor redeems a new one.
  if (smtp.oauth) return { accessToken: await accessToken(ctx, account.syncActorId, send.failureCode === 'login-refused', parent) };
  return null;
}

/** What the attempt's ending writes; returns the stage it left the send at. */
function recordEnding(state: OutboxState, send: Outgoing, result: AttemptResult, pending: ReadonlyArray<{ position: number }>): string {
  const end = { now: Date.now(), maxAttempts: state.config.maxAttempts, retryDelayMs: retryDelayMs(state.config) };
  if (result.kind === 'answered') return endAttempt(state.db, send.id, { ...end, replies: result.replies, failure: result.failure });
  if (result.kind === 'no-final-reply') {
    leaveBegun(state.db, send.id, result.code);
    return 'TransmissionBegun';
  }
  const replies = result.permanent ? pending.map((r) => ({ position: r.position, state: 'refused' as const, replyCode: result.replyCode })) : [];
  return endAttempt(state.db, send.id, { ...end, replies, failure: { code: result.code, replyCode: result.replyCode } });
}

async function attempt(state: OutboxState, ctx: ActorContext, send: Outgoing): Promise<void> {
  const account = state.config.accounts.find((a) => a.id === send.accountId);
  const pending = recipientsOf(state.db, send.id).filter((r) => r.state === 'pending');
  const raw = rawMimeOf(state.db, send.id);
  if (!account?.smtp || raw === null) {
    // The account lost its SMTP server since the send was recorded: it waits (Recorded) for the configuration to return.
    // Given back due at once, it would be claimed again at once, in a loop: it is looked at again after an idle tick's wait.
    unclaimSend(state.db, send.id, Date.now() + IDLE_TICK_MS);
    ctx.log.warn({ event: 'outbox.no-smtp', outgoing: send.id, account: send.accountId }, 'outbox.no-smtp: the account has no SMTP server configured');
    return;
  }
  // The body-began write found the disk full: no byte of the body left, and the send is given back.
  let fullBeforeBody = false;
  const bodyMayBegin = (): boolean => {
    if (state.closed) return false;
    try {
      return markBodyBegan(state.db, send.id, Date.now());
    } catch (err) {
      if (isStorageFull(err)) fullBeforeBody = true;
      throw err;
    }
  };
  const smtp = account.smtp;
  // A child of the handler that started it, when that one is traced (`ctx.trace`).
  const result: AttemptResult = await inSmtpSendSpan(send.accountId, smtp, ctx.trace, async (traced) => {
    try {
      return await attemptDelivery(
        { accountId: send.accountId, envelopeFrom: send.envelopeFrom, raw, recipients: pending },
        smtp,
        () => credentialsOf(state, ctx, send, traced),
        state.config.sendTimeoutMs,
        bodyMayBegin,
        state.sessions,
      );
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      return {
        kind: 'not-begun',
        permanent: false,
        code: err.code === 'E_CONFIG_SECRET_UNREADABLE' ? 'credential-unreadable' : 'login-unavailable',
        replyCode: null,
      };
    }
  });
  if (state.closed) return;
  if (fullBeforeBody) {
    noteStorageFull(ctx.log, PLACE);
    writeOrKeep(state, ctx, send.id, () => unclaimSend(state.db, send.id, Date.now()));
    ctx.log.info(
      { event: 'outbox.attempt', outgoing: send.id, account: send.accountId, ending: 'store-full', code: 'E_STORE_FULL', stage: 'Recorded' },
      'outbox.attempt',
    );
    return;
  }
  let stage = 'unwritten';
  writeOrKeep(state, ctx, send.id, () => {
    stage = recordEnding(state, send, result, pending);
  });
  ctx.log.info(
    { event: 'outbox.attempt', outgoing: send.id, account: send.accountId, ending: result.kind, code: 'code' in result ? result.code : null, stage },
    'outbox.attempt',
  );
}

/** Claim and start the sends due; false when a full disk stopped it (the tick comes back after STORAGE_FULL_RETRY_MS). */
function deliverDue(state: OutboxState, ctx: ActorContext): boolean {
  if (!writeUnwritten(state, ctx)) return false;
  const free = state.config.concurrency - state.underWay.size;
  if (!state.config.enabled || state.stopping || free <= 0) return true;
  for (const send of dueSends(state.db, Date.now(), free)) {
    if (state.unwritten.has(send.id)) continue;
    let claimed: boolean;
    try {
      claimed = claimSend(state.db, send.id, Date.now());
    } catch (err) {
      if (!isStorageFull(err)) throw err;
      noteStorageFull(ctx.log, PLACE, err);
      return false;
    }
    if (!claimed) continue;
    noteStorageWritable(ctx.log, PLACE);
    state.underWay.add(send.id);
    const running = attempt(state, ctx, send).then(
      () => {
        state.underWay.delete(send.id);
        if (!state.closed && !state.stopping) kick(state, ctx);
      },
      (err: unknown) => {
        state.underWay.delete(send.id);
        if (state.closed) return;
        ctx.log.error({ err, event: 'outbox.attempt-threw', outgoing: send.id }, 'outbox.attempt-threw');
        ctx.schedule({ type: 'outbox.fault', where: 'attempt' }, 0);
      },
    );
    state.attempts.add(running);
    void running.finally(() => state.attempts.delete(running));
  }
  return true;
}

/** An idle SMTP session is closed after this long (or sooner, below SendTimeout, which is also its socket's idle limit). */
const SESSION_IDLE_MS = 5_000;
/** A session is closed after this many messages. */
const SESSION_MAX_MESSAGES = 100;

/** How long stopping waits for attempts in flight to hear their answers (inside the child's shutdown deadline). */
const DRAIN_MS = 8_000;

export default defineActor({
  name: 'outbox',
  config: OutboxConfig,
  messages: Msg,
  init(config, ctx) {
    const db = openSlice(config.store, { checkpoints: 'background' });
    const state: OutboxState = {
      db,
      config,
      underWay: new Set(),
      attempts: new Set(),
      stopping: false,
      timer: null,
      tickAt: 0,
      closed: false,
      filing: { busy: false, again: false },
      sessions: new SmtpSessions({
        maxIdle: config.concurrency,
        idleMs: Math.min(SESSION_IDLE_MS, Math.floor(config.sendTimeoutMs / 2)),
        maxMessages: SESSION_MAX_MESSAGES,
      }),
      pruning: { timer: null, sends: 0, drafts: 0 },
      unwritten: new Map(),
    };
    ctx.defer(() => {
      state.closed = true;
      state.timer?.cancel();
      state.pruning.timer?.cancel();
      state.sessions.closeAll();
      db.close();
    });
    const released = releaseClaims(db);
    if (released > 0)
      ctx.log.info({ event: 'outbox.claims-released', count: released }, 'outbox.claims-released: attempts the last process began before any body');
    kick(state, ctx);
    schedulePrune(state, ctx, PRUNE_START_MS);
    return state;
  },
  async handle(state, msg, ctx) {
    switch (msg.type) {
      case 'outbox.tick': {
        state.timer = null;
        if (!deliverDue(state, ctx)) {
          // A full disk: nothing is claimed or filed until a write lands again.
          scheduleTick(state, ctx, STORAGE_FULL_RETRY_MS);
          return undefined;
        }
        fileOwed(state, ctx).then(
          (waiting) => {
            if (waiting && !state.closed && !state.stopping) scheduleTick(state, ctx, FILING_POLL_MS);
          },
          (err: unknown) => {
            if (state.closed) return;
            ctx.log.error({ err, event: 'outbox.filing-threw' }, 'outbox.filing-threw');
            ctx.schedule({ type: 'outbox.fault', where: 'filing pass' }, 0);
          },
        );
        // A send already due that no slot can take (every slot busy, or delivery disabled) must not
        // bring the next tick forward: its due time is past, so the tick would run again at once, and
        // again, a hot loop for as long as the queue is longer than Concurrency (measured: ~1,400
        // ticks per send in a burst, most of the actor thread's time). The attempt that frees a slot
        // kicks the loop itself.
        const due = state.config.enabled && !state.stopping && state.underWay.size < state.config.concurrency ? nextDueAt(state.db) : null;
        scheduleTick(state, ctx, Math.min(IDLE_TICK_MS, due === null ? IDLE_TICK_MS : due - Date.now()));
        return undefined;
      }
      case 'outbox.prune':
        pruneStep(state, ctx);
        return undefined;
      case 'outbox.fault':
        throw new Error(`outbox: an ${msg.where} failed unexpectedly`);
      case 'outbox.record-send': {
        const reply = await recordNewSend(state, msg);
        if (reply.outcome === 'recorded') kick(state, ctx);
        return reply;
      }
      case 'outbox.send-draft': {
        const reply = recordDraftSend(state, msg);
        if (reply.outcome === 'recorded') kick(state, ctx);
        return reply;
      }
      case 'outbox.outgoing':
        return { outgoing: outgoingView(state.db, msg.outgoing, msg.requester) };
      case 'outbox.cancel':
        return { outcome: cancelSend(state.db, msg.outgoing, msg.by, msg.requester, Date.now()) };
      case 'outbox.requeue': {
        const outcome = requeueSend(state.db, msg.outgoing, msg.refusalRestated, state.underWay, Date.now());
        if (outcome === 'Accepted') {
          ctx.log.info({ event: 'outbox.requeued', outgoing: msg.outgoing }, 'outbox.requeued');
          kick(state, ctx);
        }
        return { outcome };
      }
      case 'outbox.save-draft': {
        const reply = await saveDraftOf(state, msg);
        if (reply.outcome === 'saved') kick(state, ctx);
        return reply;
      }
      case 'outbox.delete-draft': {
        const reply = deleteDraftOf(state, msg);
        if (reply.outcome === 'deleted') kick(state, ctx);
        return reply;
      }
    }
  },
  async stop(state, ctx) {
    // No new attempt; those in flight may still hear their final replies, or stay as they are (a body begun stays TransmissionBegun).
    state.stopping = true;
    state.timer?.cancel();
    state.pruning.timer?.cancel();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...state.attempts]), new Promise((resolve) => (timer = setTimeout(resolve, DRAIN_MS)))]);
    clearTimeout(timer);
    state.closed = true;
    state.sessions.closeAll();
    // Their sends stay as the disk last took them: claimed before the body (given back at the next start) or begun (an operator's).
    if (state.unwritten.size > 0)
      ctx.log.warn({ event: 'outbox.endings-unwritten', count: state.unwritten.size }, 'outbox.endings-unwritten: the disk was still full at stop');
  },
});
