/**
 * One actor inside a host thread: its mailbox (a FIFO handled one message at
 * a time), its state, and its lifecycle (starting → running → stopping →
 * gone). Capacity is enforced on the main thread, where senders are (see
 * runtime/ref.ts); this queue only ever holds what the main side admitted.
 *
 * Importable only from runtime/host/.
 */
import { AppError, toPayload, type ErrorPayload } from '../errors.ts';
import { LATER, TRANSFER, isLater, isWithTransfer, type ActorContext, type AnyActorDefinition } from '../actor.ts';
import type { Logger } from '../log.ts';
import { isStorageFull, noteStorageFull } from '../storage-full.ts';
import type { Context } from '@opentelemetry/api';
import type { Ask, Meta, Tell } from '../protocol/envelope.ts';
import { parseReply } from '../ref.ts';
import { handleSpan, type HandleSpan } from '../telemetry/actor-spans.ts';
import { DEFAULT_ACTOR_ASK_MS, type HostLink } from './host-link.ts';

type Inbound = Tell | Ask;
/** `counted`: admitted by the main side's mailbox accounting, so report it as processed. */
type Queued = { envelope: Inbound; counted: boolean };
type Phase = 'starting' | 'running' | 'stopping' | 'gone';

export class ActorCell {
  readonly actorId: string;
  readonly incarnation: number;
  private readonly def: AnyActorDefinition;
  private readonly link: HostLink;
  private readonly log: Logger;
  private readonly onGone: () => void;
  private readonly queue: Queued[] = [];
  private readonly cleanups: Array<() => void | Promise<void>> = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private phase: Phase = 'starting';
  private pumping = false;
  private state: unknown;
  private selfStop: string | null = null;

  constructor(args: { actorId: string; incarnation: number; def: AnyActorDefinition; link: HostLink; log: Logger; onGone: () => void }) {
    this.actorId = args.actorId;
    this.incarnation = args.incarnation;
    this.def = args.def;
    this.link = args.link;
    this.log = args.log;
    this.onGone = args.onGone;
  }

  async start(rawConfig: unknown): Promise<void> {
    const parsed = this.def.config.safeParse(rawConfig);
    if (!parsed.success) {
      this.log.error({ event: 'actor.config-invalid', issues: parsed.error.issues.map((i) => i.path.join(':')) }, 'actor config slice failed validation');
      return this.fail('E_ACTOR_START_FAILED');
    }
    try {
      this.state = await this.def.init(parsed.data, this.context(null, undefined, undefined));
    } catch (err) {
      // A full disk is an outside condition, reported as such: the supervisor waits it out (docs/operations.md "A full disk").
      if (isStorageFull(err)) {
        noteStorageFull(this.log, this.actorId, err);
        return this.fail('E_STORE_FULL');
      }
      this.log.error({ err, event: 'actor.init-failed' }, 'actor init threw');
      return this.fail('E_ACTOR_START_FAILED');
    }
    if (this.phase !== 'starting') return; // stopped while starting
    this.phase = 'running';
    this.link.post({ kind: 'started', actor: this.actorId, incarnation: this.incarnation });
    if (this.selfStop !== null) return this.finish('exited', this.selfStop);
    void this.pump();
  }

  deliver(envelope: Inbound, counted = true): void {
    if (this.phase === 'stopping' || this.phase === 'gone') {
      if (envelope.kind === 'ask') this.replyError(envelope.id, new AppError('E_ACTOR_STOPPING'));
      else if (counted) this.link.noteProcessed(this.actorId);
      return;
    }
    this.queue.push({ envelope, counted });
    if (this.phase === 'running') void this.pump();
  }

  /** Graceful stop: finish what is queued, then `stop` and cleanups, then report. */
  stop(): void {
    if (this.phase === 'gone' || this.phase === 'stopping') return;
    const wasStarting = this.phase === 'starting';
    this.phase = 'stopping';
    if (wasStarting || (!this.pumping && this.queue.length === 0)) void this.finish('stopped');
  }

  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    while (this.queue.length > 0 && (this.phase === 'running' || this.phase === 'stopping')) {
      const next = this.queue.shift()!;
      const ok = await this.handleOne(next.envelope, next.counted);
      if (!ok) return; // crashed: the cell is gone
      if (this.selfStop !== null) {
        const reason = this.selfStop;
        this.phase = 'stopping';
        this.queue.length = 0;
        this.pumping = false;
        return this.finish('exited', reason);
      }
    }
    this.pumping = false;
    if (this.phase === 'stopping') await this.finish('stopped');
  }

  /**
   * Returns false when the actor crashed. An envelope that carries a trace
   * is handled inside its `handle <kind>` span (telemetry/actor-spans.ts),
   * ended when the ask is answered (a `later` one included) or the tell done.
   */
  private handleOne(envelope: Inbound, counted: boolean): Promise<boolean> {
    const span = handleSpan(this.actorId, envelope.kind, envelope.meta);
    if (span === null) return this.handleIn(envelope, counted, null);
    return span.run(() => this.handleIn(envelope, counted, span));
  }

  private async handleIn(envelope: Inbound, counted: boolean, span: HandleSpan | null): Promise<boolean> {
    const processed = (): void => {
      span?.end();
      if (counted) this.link.noteProcessed(this.actorId);
    };
    const isAsk = envelope.kind === 'ask';
    if (isAsk && envelope.deadline <= Date.now()) {
      // The asker has given up already; do not start work nobody waits for.
      this.replyError(envelope.id, new AppError('E_ACTOR_TIMEOUT'), span);
      return true;
    }
    const parsed = this.def.messages.safeParse(envelope.msg);
    if (!parsed.success) {
      this.log.warn({ event: 'protocol.invalid', envelope: envelope.id }, 'message failed the actor protocol');
      if (isAsk) this.replyError(envelope.id, new AppError('E_PROTOCOL_INVALID'), span);
      else processed();
      return true;
    }
    const ctx = this.context(isAsk ? envelope.deadline : null, envelope.meta, span?.context);
    try {
      const result = await this.def.handle(this.state, parsed.data, ctx);
      if (isAsk && isLater(result)) {
        this.answerLater(envelope.id, result[LATER], span);
        return true;
      }
      if (isAsk) {
        span?.end();
        const moved = isWithTransfer(result);
        this.link.post(
          { kind: 'reply', id: envelope.id, from: this.actorId, reply: { ok: true, value: moved ? result.value : result } },
          moved ? result[TRANSFER] : undefined,
        );
      } else {
        processed();
      }
      return true;
    } catch (err) {
      span?.end(err);
      if (err instanceof AppError) {
        // A tell's failure has no asker to hear it: a full disk is still said (once per episode).
        if (!isAsk && err.code === 'E_STORE_FULL') noteStorageFull(this.log, this.actorId, err);
        if (isAsk) this.replyError(envelope.id, err);
        else processed();
        return true;
      }
      if (isStorageFull(err)) {
        noteStorageFull(this.log, this.actorId, err);
        await this.fail('E_STORE_FULL');
        return false;
      }
      this.log.error({ err, event: 'actor.handler-threw', envelope: envelope.id }, 'actor handler threw');
      await this.fail('E_ACTOR_CRASHED');
      return false;
    }
  }

  private answerLater(id: string, work: Promise<unknown>, span: HandleSpan | null): void {
    work.then(
      (value) => {
        span?.end();
        if (this.phase === 'gone') return;
        const moved = isWithTransfer(value);
        this.link.post({ kind: 'reply', id, from: this.actorId, reply: { ok: true, value: moved ? value.value : value } }, moved ? value[TRANSFER] : undefined);
      },
      (err: unknown) => {
        span?.end(err);
        if (this.phase === 'gone') return;
        if (err instanceof AppError) return this.replyError(id, err);
        if (isStorageFull(err)) {
          noteStorageFull(this.log, this.actorId, err);
          return void this.fail('E_STORE_FULL');
        }
        this.log.error({ err, event: 'actor.handler-threw', envelope: id }, 'actor deferred work threw');
        void this.fail('E_ACTOR_CRASHED');
      },
    );
  }

  private replyError(id: string, err: AppError, span: HandleSpan | null = null): void {
    span?.end(err);
    this.link.post({ kind: 'reply', id, from: this.actorId, reply: { ok: false, error: toPayload(err) } });
  }

  private async fail(code: 'E_ACTOR_CRASHED' | 'E_ACTOR_START_FAILED' | 'E_STORE_FULL'): Promise<void> {
    this.phase = 'gone';
    this.queue.length = 0;
    await this.runCleanups();
    const error: ErrorPayload = toPayload(new AppError(code));
    this.link.post({ kind: 'crashed', actor: this.actorId, incarnation: this.incarnation, error });
    this.onGone();
  }

  private async finish(kind: 'stopped' | 'exited', reason = 'normal'): Promise<void> {
    if (this.phase === 'gone') return;
    this.phase = 'gone';
    try {
      if (this.def.stop && this.state !== undefined) await this.def.stop(this.state, this.context(null, undefined, undefined));
    } catch (err) {
      this.log.warn({ err, event: 'actor.stop-threw' }, 'actor stop threw');
    }
    await this.runCleanups();
    if (kind === 'stopped') this.link.post({ kind: 'stopped', actor: this.actorId, incarnation: this.incarnation });
    else this.link.post({ kind: 'exited', actor: this.actorId, incarnation: this.incarnation, reason });
    this.onGone();
  }

  private async runCleanups(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    while (this.cleanups.length > 0) {
      const cleanup = this.cleanups.pop()!;
      try {
        await cleanup();
      } catch (err) {
        this.log.warn({ err, event: 'actor.cleanup-threw' }, 'actor cleanup threw');
      }
    }
  }

  /** `trace`: the `handle <kind>` span's context, the parent of the handler's sends unless one names its own. */
  private context(deadline: number | null, meta: Meta | undefined, trace: Context | undefined): ActorContext {
    return {
      actorId: this.actorId,
      log: this.log,
      deadline,
      meta,
      trace,
      tell: (to, msg, options) => this.link.tell(this.actorId, to, msg, options?.transfer, options?.meta, options?.parent ?? trace),
      ask: async (to, msg, options) => {
        const value = await this.link.ask(
          this.actorId,
          to,
          msg,
          options?.deadlineMs ?? DEFAULT_ACTOR_ASK_MS,
          options?.transfer,
          options?.meta,
          options?.parent ?? trace,
        );
        return parseReply(value, options?.reply);
      },
      schedule: (msg, delayMs) => {
        const timer = setTimeout(() => {
          this.timers.delete(timer);
          this.deliver({ kind: 'tell', id: `timer-${this.actorId}`, to: this.actorId, msg }, false);
        }, delayMs);
        this.timers.add(timer);
        return {
          cancel: () => {
            clearTimeout(timer);
            this.timers.delete(timer);
          },
        };
      },
      defer: (cleanup) => {
        this.cleanups.push(cleanup);
      },
      stopSelf: (reason = 'normal') => {
        this.selfStop = reason;
        // Called outside a handler (a timer, init): end now rather than at the next message.
        queueMicrotask(() => {
          if (!this.pumping && this.phase === 'running') void this.finish('exited', reason);
        });
      },
    };
  }
}
