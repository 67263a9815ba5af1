/**
 * What a pool thread answers a traced ask with: its reply and when it began
 * and ended handling the ask, from which the asking thread records the
 * `handle <pool>` span (pool.ts, telemetry/actor-spans.ts `recordHandled`).
 * Pool threads load nothing of OpenTelemetry: a tracer provider and OTLP
 * exporter of their own cost a traced search more than its spans did
 * (docs/performance.md "Telemetry"), and no pool task opens spans of its own.
 *
 * An ask that carries no trace is answered with the bare reply, as before.
 * Times are epoch milliseconds with their fraction (`performance.timeOrigin
 * + performance.now()`), which the SDK takes as a span's start and end.
 *
 * Importable from runtime/pool only.
 */
import { performance } from 'node:perf_hooks';

/** When the thread began and ended handling the ask, epoch milliseconds. */
export type Handled = readonly [startedMs: number, endedMs: number];

const TRACED = 'mailcairn.handled';

type TracedAnswer = { readonly [TRACED]: Handled; readonly reply: unknown };

/** Now, in epoch milliseconds with sub-millisecond precision. */
export function epochNow(): number {
  return performance.timeOrigin + performance.now();
}

/** The answer of a traced ask: the reply with the handling's times beside it. */
export function tracedAnswer(reply: unknown, handled: Handled): TracedAnswer {
  return { [TRACED]: handled, reply };
}

/** The reply an answer holds, and the handling's times when the ask was traced. */
export function splitAnswer(raw: unknown): { reply: unknown; handled: Handled | undefined } {
  if (typeof raw === 'object' && raw !== null && TRACED in raw) {
    const { [TRACED]: handled, reply } = raw as TracedAnswer;
    const valid = Array.isArray(handled) && handled.length === 2 && handled.every((t) => typeof t === 'number' && Number.isFinite(t));
    return { reply, handled: valid ? handled : undefined };
  }
  return { reply: raw, handled: undefined };
}
