/**
 * The envelopes that cross between the main thread and actor host threads.
 * Both directions are parsed with zod on receipt (`ToHost` in the host,
 * `FromHost` on the main thread); an envelope that fails is E_PROTOCOL_INVALID,
 * logged with its id and never thrown into an actor.
 *
 * Payloads (`msg`, reply `value`) stay `unknown` here: the receiving actor's
 * own message schema parses them, and the asker may parse a reply with its
 * own schema. Large payloads travel in transfer lists, so validation here must
 * never walk them.
 *
 * Importable only from runtime/.
 */
import { z } from 'zod';
import { ErrorPayload } from '../errors.ts';

const V = z.literal(1);
const Id = z.string().min(1);
const ActorId = z.string().min(1);

export const Meta = z.strictObject({
  trace: z.string().optional(),
  /** The caller's identity, for audit only; authorization stays at the edge. */
  principal: z.string().optional(),
});
export type Meta = z.infer<typeof Meta>;

export const Reply = z.discriminatedUnion('ok', [
  z.strictObject({ ok: z.literal(true), value: z.unknown() }),
  z.strictObject({ ok: z.literal(false), error: ErrorPayload }),
]);
export type Reply = z.infer<typeof Reply>;

const Tell = z.strictObject({ kind: z.literal('tell'), v: V, id: Id, to: ActorId, msg: z.unknown(), meta: Meta.optional() });
const Ask = z.strictObject({
  kind: z.literal('ask'),
  v: V,
  id: Id,
  to: ActorId,
  msg: z.unknown(),
  meta: Meta.optional(),
  /** Absolute deadline, epoch milliseconds. No ask goes out without one. */
  deadline: z.number().int(),
});
export type Tell = z.infer<typeof Tell>;
export type Ask = z.infer<typeof Ask>;

/** Main thread → host thread. */
export const ToHost = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('start'), v: V, actor: ActorId, incarnation: z.number().int(), entry: z.string(), config: z.unknown() }),
  z.strictObject({ kind: z.literal('stop'), v: V, actor: ActorId }),
  Tell,
  Ask,
  /** Answer to an ask one of this host's actors made of another actor. */
  z.strictObject({ kind: z.literal('reply'), v: V, id: Id, reply: Reply }),
]);
export type ToHost = z.infer<typeof ToHost>;

/** Host thread → main thread. */
export const FromHost = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('heartbeat'), v: V, at: z.number() }),
  z.strictObject({ kind: z.literal('started'), v: V, actor: ActorId, incarnation: z.number().int() }),
  z.strictObject({ kind: z.literal('crashed'), v: V, actor: ActorId, incarnation: z.number().int(), error: ErrorPayload }),
  /** The actor ended itself on purpose (`ctx.stopSelf`); `reason` is a code or `normal`. */
  z.strictObject({ kind: z.literal('exited'), v: V, actor: ActorId, incarnation: z.number().int(), reason: z.string() }),
  z.strictObject({ kind: z.literal('stopped'), v: V, actor: ActorId, incarnation: z.number().int() }),
  /** Tells handled since the last report: frees mailbox capacity on the main side. */
  z.strictObject({ kind: z.literal('processed'), v: V, actor: ActorId, count: z.number().int().positive() }),
  z.strictObject({ kind: z.literal('reply'), v: V, id: Id, from: ActorId, reply: Reply }),
  /** Actor-to-actor traffic, routed by the main thread. */
  Tell.extend({ from: ActorId }),
  Ask.extend({ from: ActorId }),
]);
export type FromHost = z.infer<typeof FromHost>;
