/**
 * The two shapes a tool call answers with (DECISIONS.md, "Errors of a
 * tool"): a result whose structured content is the tool's answer, or an
 * `isError` result whose text is `Mailcairn error NNNNN: <one sentence>` and
 * whose structured content carries the code. The text of a success is the
 * same JSON, compact: clients hand one or the other to the model, and agents
 * pay for every byte.
 *
 * Which code a failure shows is the error table's (runtime/errors.ts
 * `toldCode`); nothing here decides one.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { AppError, Codes, toldCode, UNDIAGNOSED } from '../../runtime/errors.ts';

export function toolSuccess(answer: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(answer) }], structuredContent: answer };
}

/** What a failed call answers, and what its log line records. */
export type ToolFailure =
  /** A refusal the caller can act on: the table's sentence or a more precise one of ours (never content). */
  | { readonly kind: 'refused'; readonly code: number; readonly result: CallToolResult }
  /** 54001 with the table's sentence and a trace id; the error itself goes to the log in full under that id. */
  | { readonly kind: 'undiagnosed'; readonly code: number; readonly traceId: string; readonly result: CallToolResult };

export function toolFailure(err: unknown, newTraceId: () => string): ToolFailure {
  const code = err instanceof AppError ? toldCode(err.code) : null;
  if (err instanceof AppError && code !== null) return { kind: 'refused', code, result: errorResult(code, err.message, err.details?.permission) };
  const traceId = newTraceId();
  return {
    kind: 'undiagnosed',
    code: UNDIAGNOSED,
    traceId,
    result: errorResult(UNDIAGNOSED, `${Codes.E_INTERNAL.msg} (trace ${traceId})`, undefined, traceId),
  };
}

function errorResult(code: number, sentence: string, permission: unknown, traceId?: string): CallToolResult {
  return {
    isError: true,
    content: [{ type: 'text', text: `Mailcairn error ${code}: ${sentence}` }],
    structuredContent: {
      code,
      message: sentence,
      ...(traceId ? { traceId } : {}),
      // 14001 names the permission that would have sufficed, and nothing else.
      ...(typeof permission === 'string' ? { permission } : {}),
    },
  };
}
