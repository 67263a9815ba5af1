/**
 * A span that outlives one call: work advanced one message at a time (a
 * folder of a synchronization run is many `step` messages) is one span,
 * made active around each piece of it so that what the piece does (an ask
 * to the derivation writer) is its child, and ended once, when the work is.
 *
 * `activeContext()` is taken when the work begins (inside the handler of
 * the ask that started it, so a traced ask makes the work part of its
 * trace) and given as the parent of spans opened later, from timer messages
 * that carry no trace.
 *
 * Names and attributes follow the catalogue's rule (catalogue.ts). With
 * telemetry off the span is the API's non-recording one.
 *
 * Importable from every layer.
 */
import { type Context, context, type Span, trace } from '@opentelemetry/api';
import { markFailed, type SpanOptions, tracer } from './tracing.ts';

export type { Context };

/** The active context, as the parent of spans that begin later. */
export function activeContext(): Context {
  return context.active();
}

export type OpenSpan = {
  readonly span: Span;
  /** Runs `work` with this span active. */
  run<T>(work: () => T): T;
  /** Ends the span (failed with the error's code when one is given); later calls do nothing. */
  end(err?: unknown): void;
};

export function openSpan(name: string, options: SpanOptions): OpenSpan {
  const parent = options.parent ?? context.active();
  const span = tracer().startSpan(
    name,
    { ...(options.kind !== undefined ? { kind: options.kind } : {}), ...(options.attributes ? { attributes: options.attributes } : {}) },
    parent,
  );
  const active = trace.setSpan(parent, span);
  let ended = false;
  return {
    span,
    run: (work) => context.with(active, work),
    end: (err) => {
      if (ended) return;
      ended = true;
      if (err !== undefined) markFailed(span, err);
      span.end();
    },
  };
}
