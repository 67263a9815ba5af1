/**
 * The second check every administrative use case makes (docs/admin-api.md "The
 * pipeline", Permission): the route filter already read the permission the
 * route publishes, and the use case asks again. A refusal here is the
 * application failure E_APP_REFUSED (14001) carrying the permission, which the
 * listener answers in the same 403 shape as the filter's. A use case reached
 * under no principal at all is refused with no permission named.
 *
 * `invalidRequest` is the 400 (E_HTTP_BAD_REQUEST) whose sentence says
 * what to change; `notFound` the 404 (E_NOT_FOUND) of a route naming a
 * record in its path. Both are AppErrors: the listener answers every
 * failure by its code's row in the error table, with no class of its own.
 */
import { AppError } from '../../../runtime/errors.ts';
import { holds, type Principal } from '../../auth/principal.ts';
import type { AdminPermission } from '../route.ts';

/** A request the use case refuses as invalid; `sentence` is the 400's detail (what to change), never text the caller sent beyond an identifier. */
export function invalidRequest(sentence: string): AppError {
  return new AppError('E_HTTP_BAD_REQUEST', { message: sentence });
}

/** A route naming a record in its path found none by that name: `sentence` is the 404's detail (a problem document). */
export function notFound(sentence: string): AppError {
  return new AppError('E_NOT_FOUND', { message: sentence });
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
  throw invalidRequest(`The deployment configures no mail account named${named}; name one of the configured Accounts:Id values.`);
}
