/**
 * Placing a mailbox refresh token: sealed under the key ring by the
 * account's sync actor (the table's writer), replacing any earlier grant.
 * Nothing here logs; the token goes to that actor and nowhere else.
 */
import { StoreRefreshTokenReply, syncActorId } from '../../../actors/imap-sync/protocol.ts';
import { AppError } from '../../../runtime/errors.ts';
import type { Principal } from '../../auth/principal.ts';
import type { AdminDeps } from '../route.ts';
import { requireAccount, requirePrincipal } from './guard.ts';

export type RefreshTokenGrant = { account: string; refreshToken: string };

export async function storeRefreshToken(
  deps: Pick<AdminDeps, 'config' | 'actor'>,
  principal: Principal | null,
  grant: RefreshTokenGrant,
  deadlineMs: number,
): Promise<void> {
  requirePrincipal(principal, 'service.admin.credentials.write');
  requireAccount(
    deps.config.Accounts.map((a) => a.Id),
    grant.account,
  );
  // Nothing about the request was wrong: a generic failure (docs/admin-api.md "POST /api/admin/mailbox/refresh-token", 500).
  if (deps.config.DataEncryption.KeyRing === undefined) throw new AppError('E_KEYRING_MISSING');
  await deps
    .actor(syncActorId(grant.account))
    .ask({ type: 'imap-sync.store-refresh-token', refreshToken: grant.refreshToken }, { reply: StoreRefreshTokenReply, deadlineMs });
}
