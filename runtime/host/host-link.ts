/**
 * A host thread's side of the channel to the main thread: posting envelopes,
 * asks that this thread's actors make of other actors (routed by the main
 * thread), and the coalesced "processed" counts that free mailbox capacity
 * on the main side. Importable only from runtime/host/.
 */
import type { TransferListItem } from 'node:worker_threads';
import type { Context } from '@opentelemetry/api';
import type { MessagePort } from 'node:worker_threads';
import { AppError, fromPayload } from '../errors.ts';
import type { FromHost, Meta, Reply } from '../protocol/envelope.ts';
import { encodeFromHost } from '../protocol/wire.ts';
import { tracedAsk, tracedTell } from '../telemetry/actor-spans.ts';

type Pending = { resolve(value: unknown): void; reject(err: unknown): void; timer: NodeJS.Timeout };

export const DEFAULT_ACTOR_ASK_MS = 30_000;

export class HostLink {
  private readonly port: MessagePort;
  private readonly pending = new Map<string, Pending>();
  private readonly processed = new Map<string, number>();
  private flushScheduled = false;
  private seq = 0;
  private readonly prefix: string;
  /** Runs before an actor's end (`stopped`, `exited`, `crashed`) is posted: the thread may be ended right after (telemetry's last batch). */
  beforeEnd: (() => void) | null = null;

  constructor(port: MessagePort, threadId: number) {
    this.port = port;
    this.prefix = `h${threadId}-`;
  }

  post(envelope: FromHost, transferList?: TransferListItem[]): void {
    if (this.beforeEnd !== null && (envelope.kind === 'stopped' || envelope.kind === 'exited' || envelope.kind === 'crashed')) this.beforeEnd();
    this.port.postMessage(encodeFromHost(envelope), transferList);
  }

  /** An actor of this thread tells another (in a `tell <kind>` span when it is in a trace). */
  tell(from: string, to: string, msg: unknown, transferList?: TransferListItem[], meta?: Meta, parent?: Context): void {
    tracedTell(to, meta, (traced) => this.post({ kind: 'tell', id: this.nextId(), from, to, msg, ...(traced ? { meta: traced } : {}) }, transferList), parent);
  }

  /** An actor of this thread asks another (in an `ask <kind>` span when it is in a trace). */
  ask(from: string, to: string, msg: unknown, deadlineMs: number, transferList?: TransferListItem[], meta?: Meta, parent?: Context): Promise<unknown> {
    return tracedAsk(to, meta, (traced) => this.send(from, to, msg, deadlineMs, transferList, traced), parent);
  }

  private send(from: string, to: string, msg: unknown, deadlineMs: number, transferList?: TransferListItem[], meta?: Meta): Promise<unknown> {
    const id = this.nextId();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new AppError('E_ACTOR_TIMEOUT'));
      }, deadlineMs);
      timer.unref();
      this.pending.set(id, { resolve, reject, timer });
      this.post({ kind: 'ask', id, from, to, msg, deadline: Date.now() + deadlineMs, ...(meta ? { meta } : {}) }, transferList);
    });
  }

  /** An answer to one of this thread's asks arrived. */
  settle(id: string, reply: Reply): void {
    const entry = this.pending.get(id);
    if (!entry) return; // timed out already
    this.pending.delete(id);
    clearTimeout(entry.timer);
    if (reply.ok) entry.resolve(reply.value);
    else entry.reject(fromPayload(reply.error));
  }

  /** Count a handled tell; reported in one message per event-loop turn. */
  noteProcessed(actor: string): void {
    this.processed.set(actor, (this.processed.get(actor) ?? 0) + 1);
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      for (const [name, count] of this.processed) this.post({ kind: 'processed', actor: name, count });
      this.processed.clear();
    });
  }

  private nextId(): string {
    this.seq += 1;
    return this.prefix + this.seq.toString(36);
  }
}
