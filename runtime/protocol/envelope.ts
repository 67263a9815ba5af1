/**
 * The envelopes that cross between the main thread and actor host threads,
 * as code sees them. On the wire they travel as compact tuples (wire.ts),
 * validated with zod on receipt at both ends; an envelope that fails is
 * E_PROTOCOL_INVALID, logged with its id and never thrown into an actor.
 *
 * Payloads (`msg`, reply `value`) stay `unknown` here: the receiving actor's
 * own message schema parses them, and the asker may parse a reply with its
 * own schema. Large payloads travel in transfer lists, so validation here
 * never walks them.
 *
 * Importable only from runtime/.
 */
import { z } from 'zod';
import { ErrorPayload } from '../errors.ts';

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

/**
 * One measurement an actor thread recorded, forwarded to the main thread's
 * SDK (runtime/telemetry/forwarding-meter.ts): the catalogue's metric name,
 * the value (a sum of the period for counters), and the labels, which the
 * catalogue's rule keeps to configured identifiers and codes.
 */
export const Measurement = z.tuple([z.string().min(1), z.number(), z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]))]);
export type Measurement = z.infer<typeof Measurement>;

export type Tell = { kind: 'tell'; id: string; to: string; msg: unknown; meta?: Meta };
/** `deadline`: absolute, epoch milliseconds. No ask goes out without one. */
export type Ask = { kind: 'ask'; id: string; to: string; msg: unknown; meta?: Meta; deadline: number };

/** Main thread → host thread. */
export type ToHost =
  | { kind: 'start'; actor: string; incarnation: number; entry: string; config: unknown }
  | { kind: 'stop'; actor: string }
  | Tell
  | Ask
  /** Answer to an ask one of this host's actors made of another actor. */
  | { kind: 'reply'; id: string; reply: Reply };

/** Host thread → main thread. */
export type FromHost =
  | { kind: 'heartbeat'; at: number }
  | { kind: 'started'; actor: string; incarnation: number }
  | { kind: 'crashed'; actor: string; incarnation: number; error: ErrorPayload }
  /** The actor ended itself on purpose (`ctx.stopSelf`); `reason` is a code or `normal`. */
  | { kind: 'exited'; actor: string; incarnation: number; reason: string }
  | { kind: 'stopped'; actor: string; incarnation: number }
  /** Tells handled since the last report: frees mailbox capacity on the main side. */
  | { kind: 'processed'; actor: string; count: number }
  | { kind: 'reply'; id: string; from: string; reply: Reply }
  /** Measurements recorded on the thread since the last batch (about every second, and before an actor's end is reported). */
  | { kind: 'measurements'; batch: Measurement[] }
  /** Actor-to-actor traffic, routed by the main thread. */
  | (Tell & { from: string })
  | (Ask & { from: string });
