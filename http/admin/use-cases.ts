/**
 * The use cases behind the administrative routes. Each is told the
 * principal (never which credential admitted it) and asks again for the
 * permission the route filter already checked (admin-surface
 * "Authentication" 6): a refusal here is an application failure, E_APP_REFUSED
 * (14001) carrying the permission, which the listener answers in the same
 * 403 shape as the filter's. A use case reached under no principal is refused.
 *
 * A request the use case cannot act on throws `InvalidRequest` with the
 * sentence of the 400 (what to change). Nothing here logs; the refresh token
 * goes to the account's sync actor (the table's writer) and nowhere else.
 */
import { StoreRefreshTokenReply, syncActorId } from '../../actors/imap-sync/protocol.ts';
import { SCHEDULER_ID } from '../../actors/sync-scheduler/protocol.ts';
import { AdminPermissions } from '../../config/permissions.ts';
import type { Config } from '../../config/schema.ts';
import { AppError } from '../../runtime/errors.ts';
import type { Askable } from '../../runtime/ref.ts';
import { SynchronizationStatus } from '../../runtime/store/mailbox/status.ts';
import { holds, type Principal } from '../auth/principal.ts';

/** A request the use case refuses as invalid; `message` is the sentence of the 400. */
export class InvalidRequest extends Error {
  override readonly name = 'InvalidRequest';
}

export type SessionReport = { service: 'mailcairn'; version: string; credential: string; permissions: string[] };

export type AdminUseCases = {
  session(principal: Principal | null): SessionReport;
  synchronization(principal: Principal | null, deadlineMs: number): Promise<SynchronizationStatus>;
  /** Seals and stores one account's mailbox refresh token, replacing any earlier one. */
  storeRefreshToken(principal: Principal | null, grant: { account: string; refreshToken: string }, deadlineMs: number): Promise<void>;
};

export type AdminUseCaseDeps = {
  config: Config;
  version: string;
  /** An actor by id: the scheduler, and the account's sync actor. */
  actor(id: string): Askable;
};

/** The principal, or E_APP_REFUSED: no principal at all, or (when one is named) the permission not held. */
function require(principal: Principal | null, permission?: (typeof AdminPermissions)[number]): Principal {
  if (principal === null) throw new AppError('E_APP_REFUSED');
  if (permission !== undefined && !holds(principal, permission)) throw new AppError('E_APP_REFUSED', { details: { permission } });
  return principal;
}

export function adminUseCases(deps: AdminUseCaseDeps): AdminUseCases {
  const accounts = new Set(deps.config.Accounts.map((a) => a.Id));
  return {
    session(principal) {
      const caller = require(principal);
      return {
        service: 'mailcairn',
        version: deps.version,
        credential: caller.identity,
        // In the surface's order, so two reads of one grant compare equal.
        permissions: AdminPermissions.filter((p) => holds(caller, p)),
      };
    },

    async synchronization(principal, deadlineMs) {
      require(principal, 'service.admin.read');
      return deps.actor(SCHEDULER_ID).ask({ type: 'sync-scheduler.status' }, { reply: SynchronizationStatus, deadlineMs });
    },

    async storeRefreshToken(principal, grant, deadlineMs) {
      require(principal, 'service.admin.credentials.write');
      if (!accounts.has(grant.account)) {
        // The name is echoed only when it reads like an identifier: a body's arbitrary text is not repeated.
        const named = /^[A-Za-z0-9._@-]{1,64}$/.test(grant.account) ? ` '${grant.account}'` : ' by that name';
        throw new InvalidRequest(`The deployment configures no mail account named${named}; name one of the configured Accounts:Id values.`);
      }
      // Nothing about the request was wrong: a generic failure (admin-surface "Refresh-token route" 4).
      if (deps.config.DataEncryption.KeyRing === undefined) throw new AppError('E_KEYRING_MISSING');
      await deps.actor(syncActorId(grant.account)).ask(
        { type: 'imap-sync.store-refresh-token', refreshToken: grant.refreshToken },
        { reply: StoreRefreshTokenReply, deadlineMs },
      );
    },
  };
}
