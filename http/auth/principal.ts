/**
 * Principals and grants (docs/security.md "Permissions and grants";
 * docs/admin-api.md "Credentials", "GET /api/admin/session"): who a request
 * is, as use cases are told, and what it may do. A principal is an identity
 * plus the permissions its entry's grant resolved to at startup; no use case
 * learns which credential admitted it. Identity forms: the entry's own name
 * (an API key or a public key), the issuer and subject (a token), or
 * `anonymous` (the surface configures no credential entry).
 *
 * Refusals: every one increments `service.authorization.refusals` (surface,
 * tool or route, the permission that would have sufficed) and logs one
 * warning naming the credential the work was admitted as. A tool withheld
 * from a listing is not a refusal.
 */
import { resolvePermissions, type PermissionSurface } from '../../config/permissions.ts';
import type { CredentialEntry } from '../../config/schema/credential-entry.ts';
import type { Logger } from '../../runtime/log.ts';
import { counter } from '../../runtime/telemetry/instruments.ts';

export type Principal = {
  kind: 'caller';
  /** Entry name, `issuer sub`, or `anonymous`: for logs of refusals and audits, never in a refusal. */
  identity: string;
  permissions: ReadonlySet<string>;
};

export type Surface = 'mcp' | 'admin';

export function surfaceSection(surface: Surface): PermissionSurface {
  return surface === 'mcp' ? 'McpEndpoint' : 'AdminEndpoint';
}

/**
 * Each entry's grant, resolved once at startup, and one log line per entry:
 * an entry that wrote no `Permissions` list is named as such (it holds the
 * whole surface, the most sensitive posture), one that grants nothing warns.
 */
export function resolveGrants(surface: Surface, entries: readonly CredentialEntry[], log: Logger): ReadonlySet<string>[] {
  const section = surfaceSection(surface);
  return entries.map((entry, index) => {
    const granted = resolvePermissions(section, entry.Permissions);
    const name = entryName(entry);
    const wroteGrant = entry.Permissions !== undefined;
    const fields = { event: 'auth.grant', setting: `${section}:Authentication:${index}`, entry: name, wroteGrant, permissions: granted };
    if (granted.length === 0) log.warn(fields, 'auth.grant: this entry grants nothing');
    else if (!wroteGrant) log.info(fields, 'auth.grant: this entry wrote no grant, so it holds every permission of the surface');
    else log.info(fields, 'auth.grant');
    return new Set(granted);
  });
}

/** The name an entry is known by in logs: its key's Name, else its OAuth servers' names. */
export function entryName(entry: CredentialEntry): string {
  return entry.ApiKey?.Name ?? entry.PublicKey?.Name ?? entry.OAuth?.AuthorizationServers.map((s) => s.Name).join(',') ?? 'entry';
}

/** The caller of a surface that configures no credential: everything the surface publishes. */
export function anonymousPrincipal(surface: Surface): Principal {
  return { kind: 'caller', identity: 'anonymous', permissions: new Set(resolvePermissions(surfaceSection(surface), undefined)) };
}

export function holds(principal: Principal, permission: string): boolean {
  return principal.permissions.has(permission);
}

/**
 * Count and log one refusal; `target` is the tool name or the route
 * template. The counter is looked up at use: one made when this module
 * loaded came from the API's no-op meter and never recorded.
 */
export function recordRefusal(log: Logger, refusal: { surface: Surface; target: string; permission: string; principal: Principal }): void {
  counter('authorizationRefusals').add(1, { surface: refusal.surface, target: refusal.target, permission: refusal.permission });
  log.warn(
    { event: 'auth.refused', surface: refusal.surface, target: refusal.target, permission: refusal.permission, credential: refusal.principal.identity },
    'auth.refused',
  );
}
