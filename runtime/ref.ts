/**
 * The handles callers hold. `ask` always carries a deadline (30 s unless the
 * caller derives one, e.g. from its HTTP request timeout) and rejects at once
 * with E_ACTOR_DOWN when the target dies; `tell` is a doorbell that refuses
 * synchronously (E_ACTOR_MAILBOX_FULL, E_ACTOR_DOWN) rather than queueing
 * without bound. Pools (runtime/pool/) expose the same `ask`.
 *
 * Refs are typed by the target's protocol (each actor's `protocol.ts` names
 * it beside its id), so a message the target does not accept, or a reply
 * member it does not answer, is a compile error rather than an
 * E_PROTOCOL_INVALID from the receiving thread. The receiver still parses
 * every message: types end at the thread boundary.
 *
 * Importable from anywhere.
 */
import type { AskOptions, TellOptions } from './actor.ts';
import { z } from 'zod';
import { AppError } from './errors.ts';
import type { Router } from './router.ts';

export type { AskOptions, TellOptions };

/** What a target accepts and answers, by message type: the message as its sender writes it, and the reply. */
export type Protocol = { readonly [type: string]: { readonly msg: { readonly type: string }; readonly reply: unknown } };

/** A target whose protocol is not named (test fixtures): any message with a `type`; replies are unknown unless parsed. */
export type AnyProtocol = { readonly [type: string]: { readonly msg: { readonly type: string; readonly [member: string]: unknown }; readonly reply: unknown } };

/**
 * A protocol from the message union a target parses (the schema's input
 * type: what a sender writes) and the reply to each message type (a tell's
 * is `undefined`).
 */
export type ProtocolOf<Msg extends { readonly type: string }, Replies extends { readonly [T in Msg['type']]: unknown }> = {
  readonly [T in Msg['type']]: { readonly msg: Extract<Msg, { readonly type: T }>; readonly reply: Replies[T] };
};

declare const PROTOCOL: unique symbol;

/**
 * The id of an actor or pool, carrying the protocol it speaks (a type only:
 * at run time it is the plain string). A string converts where ids come from
 * configuration; the declaration is then where the protocol is stated.
 */
export type ActorId<P extends Protocol = AnyProtocol> = string & { readonly [PROTOCOL]?: P };

/** A configuration slice's member naming the actor or pool it asks, with the protocol that one speaks. */
export function actorIdSchema<P extends Protocol>(): z.ZodType<ActorId<P>> {
  return z.custom<ActorId<P>>((id) => typeof id === 'string' && id.length > 0, { error: 'an actor or pool id' });
}

// `out`: a ref to a target that accepts more is a ref to one that accepts less
// (a consumer's contract names only the messages it sends). `ask` is spelled
// as a method in both types: as a property of a shared function type it would
// make P invariant, and tsc refuses the annotation.
export type Askable<out P extends Protocol = AnyProtocol> = {
  readonly id: string;
  ask<K extends keyof P & string, R extends P[K]['reply'] = P[K]['reply']>(msg: P[K]['msg'] & { readonly type: K }, options?: AskOptions<R>): Promise<R>;
};

export type ActorRef<out P extends Protocol = AnyProtocol> = {
  readonly id: string;
  ask<K extends keyof P & string, R extends P[K]['reply'] = P[K]['reply']>(msg: P[K]['msg'] & { readonly type: K }, options?: AskOptions<R>): Promise<R>;
  tell<K extends keyof P & string>(msg: P[K]['msg'] & { readonly type: K }, options?: TellOptions): void;
};

export function actorRef<P extends Protocol = AnyProtocol>(router: Router, id: ActorId<P>): ActorRef<P> {
  return {
    id,
    tell: (msg, options) => router.tell(id, msg, options ?? {}),
    ask: async (msg, options = {}) => {
      const value = await router.ask(id, msg, {
        ...(options.deadlineMs !== undefined ? { deadlineMs: options.deadlineMs } : {}),
        ...(options.transfer ? { transfer: options.transfer } : {}),
        ...(options.meta ? { meta: options.meta } : {}),
        ...(options.parent ? { parent: options.parent } : {}),
      });
      return parseReply(value, options.reply);
    },
  };
}

/** Check a reply against the asker's schema; a mismatch is a protocol fault, not a crash. */
export function parseReply<T>(value: unknown, schema: z.ZodType<T> | undefined): T {
  if (!schema) return value as T;
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new AppError('E_PROTOCOL_INVALID');
  return parsed.data;
}
