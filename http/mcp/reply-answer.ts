/**
 * From an actor's reply to a tool's answer. The outbox and the change
 * journal answer an outcome (`recorded`, `saved`, `deleted`, or a refusal
 * such as `not-found` or `policy`); a tool answers the success's members
 * without `outcome`, and turns any other outcome into its error.
 */
import type { AppError } from '../../runtime/errors.ts';

/** The members of the reply whose outcome is `success`, without `outcome`; any other reply is refused with `refusal`'s error. */
export function answerOf<R extends { readonly outcome: string }, S extends R['outcome']>(
  reply: R,
  success: S,
  refusal: (refused: R) => AppError,
): Omit<Extract<R, { readonly outcome: S }>, 'outcome'> {
  if (!hasOutcome(reply, success)) throw refusal(reply);
  const { outcome: _, ...answer } = reply;
  return answer;
}

function hasOutcome<R extends { readonly outcome: string }, S extends R['outcome']>(reply: R, outcome: S): reply is Extract<R, { readonly outcome: S }> {
  return reply.outcome === outcome;
}
