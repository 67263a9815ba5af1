/**
 * How an actor is written: `defineActor({...})` is the default export of an
 * actor's module, loaded by a host thread (see runtime/host/). The behaviour
 * is plain functions over a context, so tests can drive it without a thread.
 *
 * Rules an actor follows:
 * - `init` builds the state from the actor's config slice (already parsed with
 *   `config`); messages arrive one at a time, parsed with `messages`.
 * - A handler that throws an `AppError` answers the ask with that error and the
 *   actor keeps running (validation errors are replies). Anything else thrown
 *   is a crash: the actor is discarded and its supervisor decides.
 * - `stop` closes sockets and connections; `ctx.defer` registers cleanups that
 *   also run when the actor crashes, so a shared thread does not leak them.
 *
 * Importable from anywhere.
 */
import type { TransferListItem } from 'node:worker_threads';
import type { Context } from '@opentelemetry/api';
import type { z } from 'zod';
import type { Logger } from './log.ts';
import type { Meta } from './protocol/envelope.ts';
import type { ActorId, AnyProtocol, Protocol } from './ref.ts';

export type AskOptions<T = unknown> = {
  /** Relative deadline; default 30 s between actors. */
  deadlineMs?: number;
  /** Buffers moved, not copied, to the receiver (raw MIME). */
  transfer?: TransferListItem[];
  /** Parse the reply with this schema before resolving. */
  reply?: z.ZodType<T>;
  meta?: Meta;
  /** The trace this ask is part of (its `ask <kind>` span's parent: telemetry/actor-spans.ts); absent: the active context. */
  parent?: Context;
};

export type TellOptions = { transfer?: TransferListItem[]; meta?: Meta; parent?: Context };

/**
 * What an actor may do besides handling its message. `tell` and `ask` are
 * checked against the protocol the target's id names (runtime/ref.ts);
 * `schedule` against the actor's own messages (`Self`).
 */
export type ActorContext<Self = unknown> = {
  readonly actorId: string;
  readonly log: Logger;
  /** Absolute deadline of the ask being handled (epoch ms), or null for a tell. */
  readonly deadline: number | null;
  readonly meta: Meta | undefined;
  /**
   * The trace the message being handled is part of (its `handle <kind>`
   * span's context), or undefined. `ask` and `tell` default their `parent`
   * to it; a span the handler opens after an await names it as its parent
   * (the active context does not follow awaits: telemetry/sync-context.ts).
   */
  readonly trace?: Context | undefined;
  tell<P extends Protocol = AnyProtocol, K extends keyof P & string = keyof P & string>(
    to: ActorId<P>,
    msg: P[K]['msg'] & { readonly type: K },
    options?: TellOptions,
  ): void;
  ask<P extends Protocol = AnyProtocol, K extends keyof P & string = keyof P & string, R extends P[K]['reply'] = P[K]['reply']>(
    to: ActorId<P>,
    msg: P[K]['msg'] & { readonly type: K },
    options?: AskOptions<R>,
  ): Promise<R>;
  /** Send a message to this actor itself later (timers are private messages). */
  schedule(msg: Self, delayMs: number): { cancel(): void };
  /** Register a cleanup run on stop and on crash, last registered first. */
  defer(cleanup: () => void | Promise<void>): void;
  /** End this actor on purpose; `reason` is `normal` or an error code. */
  stopSelf(reason?: string): void;
};

export const TRANSFER: unique symbol = Symbol('mailcairn.transfer');
export type WithTransfer<T> = { readonly [TRANSFER]: TransferListItem[]; readonly value: T };

/** Wrap a reply whose buffers should be moved rather than copied. */
export function transfer<T>(value: T, list: TransferListItem[]): WithTransfer<T> {
  return { [TRANSFER]: list, value };
}

export function isWithTransfer(value: unknown): value is WithTransfer<unknown> {
  return typeof value === 'object' && value !== null && TRANSFER in value;
}

export const LATER: unique symbol = Symbol('mailcairn.later');
export type Later<T> = { readonly [LATER]: Promise<T> };

/**
 * Answer an ask when `work` settles, while the actor goes on handling its
 * mailbox (a synchronization run spans many messages; a rewind must be able
 * to arrive in between). If the actor dies first, the asker is told at once
 * (E_ACTOR_DOWN). `work` rejecting with an AppError answers with it; with
 * anything else it crashes the actor, as a handler that throws would.
 */
export function later<T>(work: Promise<T>): Later<T> {
  return { [LATER]: work };
}

export function isLater(value: unknown): value is Later<unknown> {
  return typeof value === 'object' && value !== null && LATER in value;
}

export type ActorDefinition<Config, Msg, State> = {
  readonly name: string;
  readonly config: z.ZodType<Config>;
  readonly messages: z.ZodType<Msg>;
  init(config: Config, ctx: ActorContext<Msg>): State | Promise<State>;
  handle(state: State, msg: Msg, ctx: ActorContext<Msg>): unknown | Promise<unknown>;
  stop?(state: State, ctx: ActorContext<Msg>): void | Promise<void>;
};

// biome-ignore lint/suspicious/noExplicitAny: a definition of any actor; each is checked against its own types where it is written
export type AnyActorDefinition = ActorDefinition<any, any, any>;

export function defineActor<Config, Msg, State>(definition: ActorDefinition<Config, Msg, State>): ActorDefinition<Config, Msg, State> {
  return Object.freeze(definition);
}

export function isActorDefinition(value: unknown): value is AnyActorDefinition {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v.name === 'string' && typeof v.init === 'function' && typeof v.handle === 'function';
}
