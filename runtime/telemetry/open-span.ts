/**
 * A span that outlives one call: work advanced one message at a time (a
 * folder of a synchronization run is many `step` messages) is one span,
 * made active around the synchronous start of each piece of it, and ended
 * once, when the work is. What a piece does after an await (an ask to the
 * derivation writer) names `context`, the span's, as its parent: the
 * active context does not follow awaits (sync-context.ts).
 *
 * Its parent is given explicitly: the context of the handler of the ask that
 * started the work (`ctx.trace`, so a traced ask makes the work part of its
 * trace), kept for spans opened later, from timer messages that carry none.
 *
 * Names and attributes follow the catalogue's rule (catalogue.ts). With
 * telemetry off the span is the API's non-recording one.
 *
 * Importable from every layer.
 */
import { type Context, context, type Span, trace } from '@opentelemetry/api';
import { markFailed, type SpanOptions, tracer } from './tracing.ts';

export type { Context };

export type OpenSpan = {
  readonly span: Span;
  /** The span's context: the parent of what its work starts after an await. */
  readonly context: Context;
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
    context: active,
    run: (work) => context.with(active, work),
    end: (err) => {
      if (ended) return;
      ended = true;
      if (err !== undefined) markFailed(span, err);
      span.end();
    },
  };
}
