/**
 * Folder erasure (docs/admin-api.md "Folder erasure"): one bounded pass of the
 * stored mail of a folder the account no longer mirrors, by the account's
 * sync actor (the writer of the mail tables). The client repeats until
 * `emailsRemain` is false; an interrupted erasure resumes by asking again.
 *
 * A folder the account still mirrors is refused, naming the alias and what
 * makes it erasable; the client matches the words "is still mirrored". An
 * alias named by no mapping at all is accepted (it erases what is stored
 * under it, nothing when nothing is).
 */
import { ErasePassReply, syncActorId } from '../../../actors/imap-sync/protocol.ts';
import { AppError } from '../../../runtime/errors.ts';
import type { Principal } from '../../auth/principal.ts';
import type { AdminDeps } from '../route.ts';
import { invalidRequest, requirePrincipal } from './guard.ts';
import { configuredAccount, requiredFolder } from './scope.ts';

/**
 * Messages one pass removes at most. Each pass is one write transaction of
 * the account's sync actor, which its synchronization waits behind: 250
 * rows with their raw MIME, search documents and passages stay well under a
 * second on a slow disk, and a request well under any sane request timeout.
 */
export const ERASURE_PASS_MESSAGES = 250;

export type ErasureRequest = { account: string; folder: string };
export type ErasureAnswer = { account: string; folder: string; erasedEmailCount: number; emailsRemain: boolean; remainingEmailCount: number };

export async function eraseFolderPass(
  deps: Pick<AdminDeps, 'config' | 'actor'>,
  principal: Principal | null,
  request: ErasureRequest,
  deadlineMs: number,
): Promise<ErasureAnswer> {
  requirePrincipal(principal, 'service.admin.erase');
  const account = configuredAccount(deps.config, request.account);
  const folder = requiredFolder(request.folder);
  const index = deps.config.Accounts.findIndex((a) => a.Id === account);
  const stillMirrored = (): AppError =>
    invalidRequest(`The folder ${folder} of account ${account} is still mirrored; remove it from Accounts:${index}:Folders and restart, then erase it.`);
  // The configuration read at startup is what the account mirrors, even before its first run made a binding.
  if (deps.config.Accounts[index]!.Folders.some((f) => f.Alias === folder)) throw stillMirrored();
  try {
    const pass = await deps
      .actor(syncActorId(account))
      .ask({ type: 'imap-sync.erase-pass', folder, limit: ERASURE_PASS_MESSAGES }, { reply: ErasePassReply, deadlineMs });
    return { account, folder, ...pass };
  } catch (err) {
    if (err instanceof AppError && err.code === 'E_SYNC_FOLDER_MIRRORED') throw stillMirrored();
    throw err;
  }
}
