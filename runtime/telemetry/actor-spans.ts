/**
 * Spans of the envelopes that cross threads: the sender's `ask <kind>`
 * (CLIENT) or `tell <kind>` (PRODUCER) span, whose context travels in the
 * envelope's `meta.trace`, and the receiver's `handle <kind>` span (SERVER
 * for an ask, CONSUMER for a tell) that is its child, active while the
 * handler runs so that what the handler does (further asks, IMAP, SMTP,
 * provider calls) is a child too.
 *
 * Names hold the target's kind (`imap-sync`, never `imap-sync:<account>`):
 * what identifies the instance is left out, as the catalogue's rule asks.
 *
 * A send's parent is the one its caller names (`parent`: the tool call's
 * context, an actor's `ctx.trace`), else the active context, which lasts
 * only for a synchronous stretch (sync-context.ts).
 *
 * Cost: a send opens a span only inside a trace (a recording parent span,
 * e.g. an HTTP request's) and only when the caller did not carry one already
 * (a relayed envelope keeps the span of its first sender). With telemetry
 * off no span records, so a send looks up one context slot and a receive
 * without `meta.trace` costs nothing: background chatter between actors
 * (timers, the scheduler) starts no trace.
 *
 * Importable only from runtime/.
 */
import { type Context, context, ROOT_CONTEXT, type Span, SpanKind, trace } from '@opentelemetry/api';
import type { Meta } from '../protocol/envelope.ts';
import { type OpenSpan, openSpan } from './open-span.ts';
import { contextFromCarrier, isRecorded, markFailed, traceCarrier, tracer } from './tracing.ts';

/** The kind of an actor or pool id: what precedes the first `:` (`imap-sync:<account>` is an `imap-sync`). */
export function actorKind(id: string): string {
  const colon = id.indexOf(':');
  return colon < 0 ? id : id.slice(0, colon);
}

/** The span a send opens, and the meta it carries; null when the sender is in no trace (or carries its own). */
function sendSpan(op: 'ask' | 'tell', to: string, meta: Meta | undefined, given: Context | undefined): { span: Span; meta: Meta } | null {
  if (meta?.trace !== undefined) return null;
  const parent = given ?? context.active();
  if (!isRecorded(parent)) return null;
  const kind = actorKind(to);
  const span = tracer().startSpan(
    `${op} ${kind}`,
    { kind: op === 'ask' ? SpanKind.CLIENT : SpanKind.PRODUCER, attributes: { 'mailcairn.actor': kind } },
    parent,
  );
  const carrier = traceCarrier(trace.setSpan(parent, span));
  return { span, meta: carrier === undefined ? (meta ?? {}) : { ...meta, trace: carrier } };
}

/**
 * Sends an ask inside an `ask <kind>` span when the caller is in a trace; the
 * span ends with the answer. Not `async` itself: outside a trace it returns
 * the send's own promise (no extra promise per ask).
 */
export function tracedAsk<T>(to: string, meta: Meta | undefined, send: (meta: Meta | undefined) => Promise<T>, parent?: Context): Promise<T> {
  const opened = sendSpan('ask', to, meta, parent);
  return opened === null ? send(meta) : askInSpan(opened.span, opened.meta, send);
}

async function askInSpan<T>(span: Span, meta: Meta, send: (meta: Meta) => Promise<T>): Promise<T> {
  try {
    return await send(meta);
  } catch (err) {
    markFailed(span, err);
    throw err;
  } finally {
    span.end();
  }
}

/** Sends a tell inside a `tell <kind>` span when the caller is in a trace; the span ends once it is posted (or refused). */
export function tracedTell(to: string, meta: Meta | undefined, send: (meta: Meta | undefined) => void, parent?: Context): void {
  const opened = sendSpan('tell', to, meta, parent);
  if (opened === null) return send(meta);
  try {
    send(opened.meta);
  } catch (err) {
    markFailed(opened.span, err);
    throw err;
  } finally {
    opened.span.end();
  }
}

/**
 * Runs a relay (the main thread forwarding an actor's envelope) outside any
 * trace context, so it never opens a span of its own: whatever context the
 * host thread's message listener inherited is not the sender's.
 */
export function relayed<T>(work: () => T): T {
  return context.with(ROOT_CONTEXT, work);
}

/**
 * A receiver's `handle <kind>` span: `run` makes it active around the
 * handler's synchronous start, `context` is the parent the handler gives
 * what it starts later (`ActorContext.trace`), `end` closes it (failed when
 * given an error).
 */
export type HandleSpan = Pick<OpenSpan, 'run' | 'end' | 'context'>;

/**
 * The `handle <kind>` span of an envelope that carries a trace, a child of
 * the sender's span; null when it carries none (nothing is allocated).
 */
export function handleSpan(to: string, envelopeKind: 'ask' | 'tell', meta: Meta | undefined): HandleSpan | null {
  const carrier = meta?.trace;
  if (carrier === undefined) return null;
  const kind = actorKind(to);
  return openSpan(`handle ${kind}`, {
    kind: envelopeKind === 'ask' ? SpanKind.SERVER : SpanKind.CONSUMER,
    attributes: { 'mailcairn.actor': kind },
    parent: contextFromCarrier(carrier),
  });
}

/**
 * A pool thread's `handle <kind>` span (SERVER, a child of the ask span whose
 * `traceparent` the ask carried), recorded by the asking thread from the
 * times the pool thread reports (runtime/pool/handled.ts): pool threads run
 * no tracer of their own. `failure`: the error the thread answered with.
 */
export function recordHandled(to: string, traceparent: string, [startedMs, endedMs]: readonly [number, number], failure?: unknown): void {
  const kind = actorKind(to);
  const span = tracer().startSpan(
    `handle ${kind}`,
    { kind: SpanKind.SERVER, attributes: { 'mailcairn.actor': kind }, startTime: startedMs },
    contextFromCarrier(traceparent),
  );
  if (failure !== undefined) markFailed(span, failure);
  span.end(endedMs);
}
