/**
 * The second check every administrative use case makes (docs/admin-api.md "The
 * pipeline", Permission): the route filter already read the permission the
 * route publishes, and the use case asks again. A refusal here is the
 * application failure E_APP_REFUSED (14001) carrying the permission, which the
 * listener answers in the same 403 shape as the filter's. A use case reached
 * under no principal at all is refused with no permission named.
 *
 * `InvalidRequest` carries the sentence of a 400: what to change;
 * `NotFound` the sentence of the 404 of a route naming a record in its path.
 */
import { AppError } from '../../../runtime/errors.ts';
import { holds, type Principal } from '../../auth/principal.ts';
import type { AdminPermission } from '../route.ts';

/** A request the use case refuses as invalid; `message` is the sentence of the 400 (what to change). */
export class InvalidRequest extends Error {
  override readonly name = 'InvalidRequest';
}

/** A route naming a record in its path found none by that name: `message` is the sentence of the 404 (a problem document). */
export class NotFound extends Error {
  override readonly name = 'NotFound';
}

/** The principal, or E_APP_REFUSED: no principal at all, or (when named) a permission not held. */
export function requirePrincipal(principal: Principal | null, ...permissions: AdminPermission[]): Principal {
  if (principal === null) throw new AppError('E_APP_REFUSED');
  for (const permission of permissions) {
    if (!holds(principal, permission)) throw new AppError('E_APP_REFUSED', { details: { permission } });
  }
  return principal;
}

/**
 * A configured account, or the 400 naming what to change. The name is
 * echoed only when it reads like an identifier: a body's arbitrary text is
 * not repeated. The client matches "configures no mail account named".
 */
export function requireAccount(accounts: ReadonlySet<string> | readonly string[], account: string): string {
  const known = accounts instanceof Set ? accounts.has(account) : (accounts as readonly string[]).includes(account);
  if (known) return account;
  const named = /^[A-Za-z0-9._@-]{1,64}$/.test(account) ? ` '${account}'` : ' by that name';
  throw new InvalidRequest(`The deployment configures no mail account named${named}; name one of the configured Accounts:Id values.`);
}
