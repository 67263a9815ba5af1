/**
 * The wire form of envelopes: compact tuples whose first element names the
 * kind. Structured clone serialises every property name of an object on
 * every message, which made an object envelope cost a large share of an
 * `ask` round trip (bench/scenarios/actor-ask.ts); a tuple carries only
 * values. Code works with the object envelopes of envelope.ts; only the
 * postMessage boundary sees tuples.
 *
 * Decoding validates the tuple with zod (chosen by its kind, so one schema
 * runs per message) and returns the object envelope, or null when the wire
 * value is malformed (E_PROTOCOL_INVALID for the caller to log).
 *
 * Both ends are the same build in one process, so the wire carries no
 * version number. Importable only from runtime/.
 */
import { z } from 'zod';
import { ErrorPayload } from '../errors.ts';
import { Measurement, Meta, type FromHost, type Reply, type ToHost } from './envelope.ts';

const Id = z.string().min(1);
const ActorId = z.string().min(1);
const Incarnation = z.number().int();
const OptionalMeta = Meta.nullable();
const Deadline = z.number().int();
/** A reply: `true, value` or `false, error`. */
const WireReply = z.union([z.tuple([z.literal(true), z.unknown()]), z.tuple([z.literal(false), ErrorPayload])]);

const toHost = {
  start: z.tuple([z.literal('start'), ActorId, Incarnation, z.string(), z.unknown()]),
  stop: z.tuple([z.literal('stop'), ActorId]),
  tell: z.tuple([z.literal('tell'), Id, ActorId, z.unknown(), OptionalMeta]),
  ask: z.tuple([z.literal('ask'), Id, ActorId, z.unknown(), OptionalMeta, Deadline]),
  reply: z.tuple([z.literal('reply'), Id, z.boolean(), z.unknown()]),
} as const;

const fromHost = {
  heartbeat: z.tuple([z.literal('heartbeat'), z.number()]),
  started: z.tuple([z.literal('started'), ActorId, Incarnation]),
  crashed: z.tuple([z.literal('crashed'), ActorId, Incarnation, ErrorPayload]),
  exited: z.tuple([z.literal('exited'), ActorId, Incarnation, z.string()]),
  stopped: z.tuple([z.literal('stopped'), ActorId, Incarnation]),
  processed: z.tuple([z.literal('processed'), ActorId, z.number().int().positive()]),
  reply: z.tuple([z.literal('reply'), Id, ActorId, z.boolean(), z.unknown()]),
  tell: z.tuple([z.literal('tell'), Id, ActorId, ActorId, z.unknown(), OptionalMeta]),
  ask: z.tuple([z.literal('ask'), Id, ActorId, ActorId, z.unknown(), OptionalMeta, Deadline]),
  measurements: z.tuple([z.literal('measurements'), z.array(Measurement).min(1)]),
} as const;

function kindOf<K extends string>(raw: unknown, table: Record<K, unknown>): K | null {
  if (!Array.isArray(raw) || typeof raw[0] !== 'string' || !Object.hasOwn(table, raw[0])) return null;
  return raw[0] as K;
}

function meta(value: Meta | null): { meta?: Meta } {
  return value ? { meta: value } : {};
}

function reply(ok: boolean, payload: unknown): Reply | null {
  const parsed = WireReply.safeParse([ok, payload]);
  if (!parsed.success) return null;
  return parsed.data[0] ? { ok: true, value: parsed.data[1] } : { ok: false, error: parsed.data[1] };
}

function payloadOf(r: Reply): [boolean, unknown] {
  return r.ok ? [true, r.value] : [false, r.error];
}

export function encodeToHost(e: ToHost): unknown[] {
  switch (e.kind) {
    case 'start':
      return ['start', e.actor, e.incarnation, e.entry, e.config];
    case 'stop':
      return ['stop', e.actor];
    case 'tell':
      return ['tell', e.id, e.to, e.msg, e.meta ?? null];
    case 'ask':
      return ['ask', e.id, e.to, e.msg, e.meta ?? null, e.deadline];
    case 'reply':
      return ['reply', e.id, ...payloadOf(e.reply)];
  }
}

export function decodeToHost(raw: unknown): ToHost | null {
  const kind = kindOf(raw, toHost);
  if (kind === null) return null;
  switch (kind) {
    case 'start': {
      const p = toHost.start.safeParse(raw);
      return p.success ? { kind, actor: p.data[1], incarnation: p.data[2], entry: p.data[3], config: p.data[4] } : null;
    }
    case 'stop': {
      const p = toHost.stop.safeParse(raw);
      return p.success ? { kind, actor: p.data[1] } : null;
    }
    case 'tell': {
      const p = toHost.tell.safeParse(raw);
      return p.success ? { kind, id: p.data[1], to: p.data[2], msg: p.data[3], ...meta(p.data[4]) } : null;
    }
    case 'ask': {
      const p = toHost.ask.safeParse(raw);
      return p.success ? { kind, id: p.data[1], to: p.data[2], msg: p.data[3], ...meta(p.data[4]), deadline: p.data[5] } : null;
    }
    case 'reply': {
      const p = toHost.reply.safeParse(raw);
      const r = p.success ? reply(p.data[2], p.data[3]) : null;
      return p.success && r ? { kind, id: p.data[1], reply: r } : null;
    }
  }
}

export function encodeFromHost(e: FromHost): unknown[] {
  switch (e.kind) {
    case 'heartbeat':
      return ['heartbeat', e.at];
    case 'started':
    case 'stopped':
      return [e.kind, e.actor, e.incarnation];
    case 'crashed':
      return ['crashed', e.actor, e.incarnation, e.error];
    case 'exited':
      return ['exited', e.actor, e.incarnation, e.reason];
    case 'processed':
      return ['processed', e.actor, e.count];
    case 'reply':
      return ['reply', e.id, e.from, ...payloadOf(e.reply)];
    case 'tell':
      return ['tell', e.id, e.from, e.to, e.msg, e.meta ?? null];
    case 'ask':
      return ['ask', e.id, e.from, e.to, e.msg, e.meta ?? null, e.deadline];
    case 'measurements':
      return ['measurements', e.batch];
  }
}

export function decodeFromHost(raw: unknown): FromHost | null {
  const kind = kindOf(raw, fromHost);
  if (kind === null) return null;
  switch (kind) {
    case 'heartbeat': {
      const p = fromHost.heartbeat.safeParse(raw);
      return p.success ? { kind, at: p.data[1] } : null;
    }
    case 'started':
    case 'stopped': {
      const p = fromHost[kind].safeParse(raw);
      return p.success ? { kind, actor: p.data[1], incarnation: p.data[2] } : null;
    }
    case 'crashed': {
      const p = fromHost.crashed.safeParse(raw);
      return p.success ? { kind, actor: p.data[1], incarnation: p.data[2], error: p.data[3] } : null;
    }
    case 'exited': {
      const p = fromHost.exited.safeParse(raw);
      return p.success ? { kind, actor: p.data[1], incarnation: p.data[2], reason: p.data[3] } : null;
    }
    case 'processed': {
      const p = fromHost.processed.safeParse(raw);
      return p.success ? { kind, actor: p.data[1], count: p.data[2] } : null;
    }
    case 'reply': {
      const p = fromHost.reply.safeParse(raw);
      const r = p.success ? reply(p.data[3], p.data[4]) : null;
      return p.success && r ? { kind, id: p.data[1], from: p.data[2], reply: r } : null;
    }
    case 'tell': {
      const p = fromHost.tell.safeParse(raw);
      return p.success ? { kind, id: p.data[1], from: p.data[2], to: p.data[3], msg: p.data[4], ...meta(p.data[5]) } : null;
    }
    case 'ask': {
      const p = fromHost.ask.safeParse(raw);
      return p.success ? { kind, id: p.data[1], from: p.data[2], to: p.data[3], msg: p.data[4], ...meta(p.data[5]), deadline: p.data[6] } : null;
    }
    case 'measurements': {
      const p = fromHost.measurements.safeParse(raw);
      return p.success ? { kind, batch: p.data[1] } : null;
    }
  }
}
