/**
 * The handles callers hold. `ask` always carries a deadline (30 s unless the
 * caller derives one, e.g. from its HTTP request timeout) and rejects at once
 * with E_ACTOR_DOWN when the target dies; `tell` is a doorbell that refuses
 * synchronously (E_ACTOR_MAILBOX_FULL, E_ACTOR_DOWN) rather than queueing
 * without bound. Pools (runtime/pool/) expose the same `ask`.
 *
 * Importable from anywhere.
 */
import type { AskOptions, TellOptions } from './actor.ts';
import type { z } from 'zod';
import { AppError } from './errors.ts';
import type { Router } from './router.ts';

export type { AskOptions, TellOptions };

export type Askable = {
  readonly id: string;
  ask<T = unknown>(msg: unknown, options?: AskOptions<T>): Promise<T>;
};

export type ActorRef = Askable & {
  tell(msg: unknown, options?: TellOptions): void;
};

export function actorRef(router: Router, id: string): ActorRef {
  return {
    id,
    tell: (msg, options) => router.tell(id, msg, options ?? {}),
    ask: async <T>(msg: unknown, options: AskOptions<T> = {}): Promise<T> => {
      const value = await router.ask(id, msg, {
        ...(options.deadlineMs !== undefined ? { deadlineMs: options.deadlineMs } : {}),
        ...(options.transfer ? { transfer: options.transfer } : {}),
        ...(options.meta ? { meta: options.meta } : {}),
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
