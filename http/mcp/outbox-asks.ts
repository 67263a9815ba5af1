/**
 * What the sending and draft tools share when they ask the outbox: the
 * caller as the outbox records it (it checks the grant again), and the
 * outbox's refusals as the tools' errors (docs/errors.md).
 */
import { AppError } from '../../runtime/errors.ts';
import type { McpPermission, ToolContext } from './tool.ts';

/** Who asks: the name recorded with the send or draft, and the grant the outbox checks. */
export const callerOf = (ctx: ToolContext) => ({ requester: ctx.caller.identity, permissions: [...ctx.caller.permissions] });

/** The tool's error for an outbox refusal; `permission` is the one a `not-permitted` names. */
export function outboxRefusal(reply: { readonly outcome: string; readonly sentence?: string }, permission: McpPermission): AppError {
  switch (reply.outcome) {
    case 'invalid':
      return new AppError('E_TOOL_INVALID_INPUT', { message: reply.sentence });
    case 'key-conflict':
      return new AppError('E_SEND_KEY_CONFLICT');
    case 'policy':
      return new AppError('E_SEND_POLICY_REFUSED', { message: reply.sentence });
    case 'ceiling':
      return new AppError('E_BUDGET_SPENT', { message: reply.sentence });
    case 'no-smtp':
      return new AppError('E_SEND_UNAVAILABLE');
    case 'not-permitted':
      return new AppError('E_APP_REFUSED', { details: { permission } });
    case 'state-passed':
      return new AppError('E_STATE_PASSED', { message: reply.sentence });
    default:
      return new AppError('E_NOT_FOUND');
  }
}
