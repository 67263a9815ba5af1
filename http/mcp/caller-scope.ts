/**
 * Where a caller may act, checked before a write tool asks anything of an
 * account's actors: a stored email it may read (the query pool locates it
 * within the caller's scope), and an account a new message may be sent from.
 * Anything outside the scope reads as not found (53001), like an id that
 * names nothing.
 */
import { LocateEmailReply } from '../../actors/mail-query/protocol/email-lookup.ts';
import { decodeStoredEmailId } from '../../actors/mail-query/protocol/stored-email-id.ts';
import { AppError } from '../../runtime/errors.ts';
import type { ToolContext } from './tool.ts';

/** The account and row of a stored email the caller may read; not found otherwise. */
export async function locateEmail(ctx: ToolContext, storedEmailId: string): Promise<{ accountId: string; messageId: number }> {
  const messageId = decodeStoredEmailId(storedEmailId);
  if (messageId === null) throw new AppError('E_NOT_FOUND');
  const { email } = await ctx.queryPool.ask(
    { type: 'mail-query.locate-email', scope: ctx.scope, messageId },
    { reply: LocateEmailReply, deadlineMs: ctx.deadlineMs },
  );
  if (email === null) throw new AppError('E_NOT_FOUND');
  return { accountId: email.accountId, messageId };
}

/** The caller's scope must configure the account a new message is sent from. */
export function requireAccount(ctx: ToolContext, account: string): void {
  if (!ctx.scope.accounts.some((a) => a.id === account)) throw new AppError('E_NOT_FOUND');
}
