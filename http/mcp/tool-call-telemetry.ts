/**
 * What one MCP tool call records beside its log line (mcp-server.ts): an
 * INTERNAL span `tools/call <tool>`, a child of the request's SERVER span
 * (named as `parent`: the active context does not follow the SDK's awaits,
 * runtime/telemetry/sync-context.ts), whose context `work` is given for the
 * asks it makes, and one `mcp.server.operation.duration` point, both labelled
 * `mcp.method.name` = `tools/call`, `gen_ai.tool.name`, and when the call did
 * not succeed `error.type` = the code it was answered with:
 *
 * - `mailcairn.outcome` = `ok`: a result;
 * - `refused`: an error result with a code the caller can act on (14001,
 *   51001, 53001, …), or -32602 for a tool that is unknown or withheld;
 * - `failed`: the undiagnosed 54001 (the reason is in the log, under the
 *   span's trace id).
 *
 * The tool's name is named only when it is one of this deployment's tools:
 * a call of an unknown tool carries no `gen_ai.tool.name` (the caller wrote
 * it). Never an argument or a result.
 *
 * Imported by http/mcp/mcp-server.ts.
 */
import { performance } from 'node:perf_hooks';
import { type Context, context, SpanStatusCode, trace } from '@opentelemetry/api';
import { histogram } from '../../runtime/telemetry/instruments.ts';
import { LabelSets } from '../../runtime/telemetry/label-sets.ts';
import { markFailed, SpanKind, traceIdOf, tracer } from '../../runtime/telemetry/tracing.ts';

export type ToolOutcome = 'ok' | 'refused' | 'failed';

export type ObservedToolCall = {
  /** The call was answered with an error result, or refused with a JSON-RPC error: its outcome and code. */
  ended(outcome: Exclude<ToolOutcome, 'ok'>, code: number): void;
  /** The call's span's context: the parent of the asks its tool makes. */
  readonly trace: Context;
  /** The trace id of the call's span when it is recorded (an undiagnosed failure's log line and answer carry it). */
  traceId(): string | undefined;
};

const METHOD = 'tools/call';

/** The span's attributes at its start, by tool (undefined: not one of this deployment's). */
const CALL_LABELS = new LabelSets<readonly [string | undefined]>(([tool]) => ({
  'mcp.method.name': METHOD,
  ...(tool !== undefined ? { 'gen_ai.tool.name': tool } : {}),
}));

/** The duration's labels: the call's, its outcome, and the code it was answered with when it did not succeed. */
const DURATION_LABELS = new LabelSets<readonly [string | undefined, ToolOutcome, number | undefined]>(([tool, outcome, code]) => ({
  ...CALL_LABELS.of([tool]),
  'mailcairn.outcome': outcome,
  ...(code !== undefined ? { 'error.type': String(code) } : {}),
}));

/** Runs `work` inside the call's span (a child of `parent`) and records the call when it settles (`ok` unless `ended` said otherwise). */
export function observeToolCall<T>(tool: string | undefined, parent: Context, work: (call: ObservedToolCall) => Promise<T>): Promise<T> {
  const labels = CALL_LABELS.of([tool]);
  const span = tracer().startSpan(tool === undefined ? METHOD : `${METHOD} ${tool}`, { kind: SpanKind.INTERNAL, attributes: labels }, parent);
  const traced = trace.setSpan(parent, span);
  return context.with(traced, async () => {
    const started = performance.now();
    let outcome: ToolOutcome = 'ok';
    let code: number | undefined;
    const call: ObservedToolCall = {
      ended(ending, answered) {
        outcome = ending;
        code = answered;
      },
      trace: traced,
      traceId: () => traceIdOf(traced),
    };
    try {
      return await work(call);
    } catch (err) {
      // A throw nobody answered for (never a tool's: mcp-server.ts answers those) is a failure of the call.
      if (code === undefined) {
        outcome = 'failed';
        markFailed(span, err);
      }
      throw err;
    } finally {
      histogram('mcpOperationDuration').record((performance.now() - started) / 1000, DURATION_LABELS.of([tool, outcome, code]));
      if (outcome !== 'ok') {
        span.setAttributes({ 'mailcairn.outcome': outcome, ...(code !== undefined ? { 'error.type': String(code) } : {}) });
        span.setStatus({ code: SpanStatusCode.ERROR });
      } else {
        span.setAttribute('mailcairn.outcome', outcome);
      }
      span.end();
    }
  });
}
