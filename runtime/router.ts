/**
 * Delivery on the main thread: where each running actor lives, the asks
 * waiting for replies, and each actor's bounded mailbox.
 *
 * Backpressure lives here, beside the senders: an actor's mailbox holds at
 * most `capacity` messages admitted but not yet handled (counted from send
 * until the reply, or the host's "processed" report for tells). A full
 * mailbox refuses at once with E_ACTOR_MAILBOX_FULL, so memory stays bounded
 * even when the host thread is blocked.
 *
 * When an actor dies, every ask waiting on it is rejected at once with
 * E_ACTOR_DOWN (retryable) instead of waiting out its deadline.
 *
 * Importable only from runtime/.
 */
import type { TransferListItem } from 'node:worker_threads';
import type { Context } from '@opentelemetry/api';
import { AppError, fromPayload, toPayload } from './errors.ts';
import type { HostThread } from './host/host-thread.ts';
import type { FromHost, Meta, Reply } from './protocol/envelope.ts';
import { relayed, tracedAsk, tracedTell } from './telemetry/actor-spans.ts';

export const DEFAULT_ASK_MS = 30_000;

type Pending = { actor: string; resolve(value: unknown): void; reject(err: unknown): void; timer: NodeJS.Timeout };
type Route = { host: HostThread; capacity: number; inFlight: number };

/** `parent`: the trace the send is part of (telemetry/actor-spans.ts); absent: the active context. */
export type SendOptions = { transfer?: TransferListItem[]; meta?: Meta; parent?: Context };

/** A pool as the router relays to it: a message is data until the pool's task parses it. */
export type PoolDelivery = { readonly id: string; ask(msg: unknown, options: SendOptions & { deadlineMs?: number }): Promise<unknown> };

export class Router {
  private readonly routes = new Map<string, Route>();
  /** Stateless pools reachable by id, so actors on host threads can ask them too. */
  private readonly pools = new Map<string, PoolDelivery>();
  private readonly pending = new Map<string, Pending>();
  private seq = 0;

  /** The actor reported `started` on `host`. */
  attach(actor: string, host: HostThread, capacity: number): void {
    this.routes.set(actor, { host, capacity, inFlight: 0 });
  }

  /** The actor is gone (crash, exit, stop, thread death): refuse what waits on it. */
  detach(actor: string): void {
    this.routes.delete(actor);
    for (const [id, entry] of this.pending) {
      if (entry.actor !== actor) continue;
      this.pending.delete(id);
      clearTimeout(entry.timer);
      entry.reject(new AppError('E_ACTOR_DOWN', { details: { actor } }));
    }
  }

  registerPool(pool: PoolDelivery): void {
    if (this.pools.has(pool.id)) throw new Error(`duplicate pool id ${pool.id}`);
    this.pools.set(pool.id, pool);
  }

  isRunning(actor: string): boolean {
    return this.routes.has(actor);
  }

  /** A tell from the main thread (a `tell <kind>` span when the caller is in a trace: telemetry/actor-spans.ts). */
  tell(to: string, msg: unknown, options: SendOptions = {}): void {
    tracedTell(to, options.meta, (meta) => this.deliverTell(to, msg, options.transfer, meta), options.parent);
  }

  /** An ask from the main thread (an `ask <kind>` span when the caller is in a trace). */
  ask(to: string, msg: unknown, options: SendOptions & { deadlineMs?: number } = {}): Promise<unknown> {
    const pool = this.pools.get(to);
    if (pool) return pool.ask(msg, options);
    return tracedAsk(to, options.meta, (meta) => this.deliverAsk(to, msg, options.deadlineMs, options.transfer, meta), options.parent);
  }

  private deliverTell(to: string, msg: unknown, transfer: TransferListItem[] | undefined, meta: Meta | undefined): void {
    const route = this.admit(to);
    route.inFlight += 1;
    const id = this.nextId();
    route.host.post({ kind: 'tell', id, to, msg, ...(meta ? { meta } : {}) }, transfer);
  }

  private deliverAsk(
    to: string,
    msg: unknown,
    deadlineMsGiven: number | undefined,
    transfer: TransferListItem[] | undefined,
    meta: Meta | undefined,
  ): Promise<unknown> {
    let route: Route;
    try {
      route = this.admit(to);
    } catch (err) {
      return Promise.reject(err);
    }
    const deadlineMs = deadlineMsGiven ?? DEFAULT_ASK_MS;
    const id = this.nextId();
    route.inFlight += 1;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new AppError('E_ACTOR_TIMEOUT', { details: { actor: to } }));
      }, deadlineMs);
      timer.unref();
      this.pending.set(id, { actor: to, resolve, reject, timer });
      route.host.post({ kind: 'ask', id, to, msg, deadline: Date.now() + deadlineMs, ...(meta ? { meta } : {}) }, transfer);
    });
  }

  /** Envelopes from hosts that concern delivery rather than lifecycle. */
  onEnvelope(host: HostThread, envelope: Extract<FromHost, { kind: 'reply' | 'processed' | 'tell' | 'ask' }>): void {
    switch (envelope.kind) {
      case 'reply': {
        const route = this.routes.get(envelope.from);
        if (route && route.inFlight > 0) route.inFlight -= 1;
        const entry = this.pending.get(envelope.id);
        if (!entry) return; // timed out already
        this.pending.delete(envelope.id);
        clearTimeout(entry.timer);
        if (envelope.reply.ok) entry.resolve(envelope.reply.value);
        else entry.reject(fromPayload(envelope.reply.error));
        return;
      }
      case 'processed': {
        const route = this.routes.get(envelope.actor);
        if (route) route.inFlight = Math.max(0, route.inFlight - envelope.count);
        return;
      }
      // Relayed as sent: the sending actor's span (if any) is in `meta.trace`; the main thread adds none.
      case 'tell':
        try {
          relayed(() => this.tell(envelope.to, envelope.msg, envelope.meta ? { meta: envelope.meta } : {}));
        } catch {
          // A tell is a doorbell: an unreachable target is the sender's loss, not a crash.
        }
        return;
      case 'ask': {
        const deadlineMs = Math.max(0, envelope.deadline - Date.now());
        this.relayAsks.set(envelope.id, host);
        relayed(() => this.ask(envelope.to, envelope.msg, { deadlineMs, ...(envelope.meta ? { meta: envelope.meta } : {}) })).then(
          (value) => this.relayReply(envelope.id, { ok: true, value }),
          (err: unknown) => this.relayReply(envelope.id, { ok: false, error: toPayload(err) }),
        );
        return;
      }
    }
  }

  /** Asks from host threads that the main thread forwarded, by the asker's id. */
  private readonly relayAsks = new Map<string, HostThread>();

  private relayReply(id: string, reply: Reply): void {
    const host = this.relayAsks.get(id);
    if (!host) return;
    this.relayAsks.delete(id);
    host.post({ kind: 'reply', id, reply });
  }

  private admit(to: string): Route {
    const route = this.routes.get(to);
    if (!route) throw new AppError('E_ACTOR_DOWN', { details: { actor: to } });
    if (route.inFlight >= route.capacity) throw new AppError('E_ACTOR_MAILBOX_FULL', { details: { actor: to, capacity: route.capacity } });
    return route;
  }

  private nextId(): string {
    this.seq += 1;
    return `m${this.seq.toString(36)}`;
  }
}
