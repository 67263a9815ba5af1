/**
 * The two shapes a tool call answers with (DECISIONS.md, "Errors of a
 * tool"): a result whose structured content is the tool's answer, or an
 * `isError` result whose text is `Mailcairn error NNNNN: <one sentence>` and
 * whose structured content carries the code. The text of a success is the
 * same JSON, compact: clients hand one or the other to the model, and agents
 * pay for every byte.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { type AppError, Codes, type Code } from '../../runtime/errors.ts';

export function toolSuccess(answer: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(answer) }], structuredContent: answer };
}

/** A refusal the caller can act on; the sentence is the table's or a more precise one of ours (never content). */
export function toolRefusal(err: AppError, traceId?: string): CallToolResult {
  const code = publicCodeOf(err.code);
  const sentence = traceId ? `${err.message} (trace ${traceId})` : err.message;
  return {
    isError: true,
    content: [{ type: 'text', text: `Mailcairn error ${code}: ${sentence}` }],
    structuredContent: {
      code,
      message: sentence,
      ...(traceId ? { traceId } : {}),
      // 14001 names the permission that would have sufficed, and nothing else.
      ...(typeof err.details?.permission === 'string' ? { permission: err.details.permission } : {}),
    },
  };
}

/** The five-digit code a tool shows for an internal one: its own, else 54001 (undiagnosed). */
export function publicCodeOf(code: Code): number {
  return Codes[code].public ?? 54001;
}
