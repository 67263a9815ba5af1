/**
 * The permission names of each surface (docs/security.md "Permissions and
 * grants", docs/admin-api.md "Credentials") and the rules of a `Permissions`
 * list (docs/configuration.md "Rules across settings"): names, or patterns in
 * which `*` stands for one or more whole segments; an absent list grants the
 * whole surface, `[]` grants nothing. Startup refuses an unknown name, a name
 * of the other surface, a duplicate, and a pattern matching nothing here.
 *
 * `resolvePermissions` is what the HTTP edge and the posture lines use.
 */
import { type Problem, problem } from './problem.ts';

export const AdminPermissions = [
  'service.admin.read',
  'service.admin.audit.read',
  'service.admin.operate',
  'service.admin.credentials.write',
  'service.admin.spend',
  'service.admin.erase',
] as const;

export const McpPermissions = [
  'service.mail.read',
  'service.mail.ask',
  'service.mail.flags.write',
  'service.mail.drafts.write',
  'service.mail.send',
  'service.mail.contacts.read',
  'service.mail.contacts.write',
] as const;

export type PermissionSurface = 'McpEndpoint' | 'AdminEndpoint';

export function permissionsOf(surface: PermissionSurface): readonly string[] {
  return surface === 'McpEndpoint' ? McpPermissions : AdminPermissions;
}

function otherSurface(surface: PermissionSurface): PermissionSurface {
  return surface === 'McpEndpoint' ? 'AdminEndpoint' : 'McpEndpoint';
}

/** A matcher for one written name or pattern, or null when `*` is not a whole segment. */
function matcher(written: string): RegExp | null {
  const segments = written.split('.');
  if (segments.some((segment) => segment === '' || (segment.includes('*') && segment !== '*'))) return null;
  const body = segments.map((segment) => (segment === '*' ? '[^.]+(?:\\.[^.]+)*' : segment.replace(/[\\^$+?()[\]{}|-]/g, '\\$&'))).join('\\.');
  return new RegExp(`^${body}$`);
}

/** The permissions a list grants on a surface, in the surface's order; absent grants all. */
export function resolvePermissions(surface: PermissionSurface, list: readonly string[] | undefined): string[] {
  const all = permissionsOf(surface);
  if (list === undefined) return [...all];
  const matchers = list.map(matcher).filter((m): m is RegExp => m !== null);
  return all.filter((name) => matchers.some((m) => m.test(name)));
}

export function permissionListProblems(surface: PermissionSurface, list: readonly string[], path: readonly PropertyKey[]): Problem[] {
  const problems: Problem[] = [];
  const seen = new Map<string, number>();
  list.forEach((written, index) => {
    const at = [...path, index];
    const earlier = seen.get(written);
    if (earlier !== undefined) {
      problems.push(problem(at, `repeats ${written} (already at index ${earlier})`));
      return;
    }
    seen.set(written, index);
    const m = matcher(written);
    if (m === null) {
      problems.push(problem(at, 'must be a permission name or a pattern where * stands for whole segments (e.g. service.admin.*)'));
      return;
    }
    const here = permissionsOf(surface).filter((name) => m.test(name));
    if (here.length > 0) return;
    const there = permissionsOf(otherSurface(surface)).some((name) => m.test(name));
    const isPattern = written.includes('*');
    if (there) {
      problems.push(
        problem(
          at,
          `${isPattern ? 'matches only permissions' : 'is a permission'} of the ${otherSurface(surface)} surface; credentials and grants do not cross surfaces`,
        ),
      );
    } else if (isPattern) {
      problems.push(problem(at, 'matches no permission of this surface'));
    } else {
      problems.push(problem(at, `is not a permission of this surface (one of ${permissionsOf(surface).join(', ')})`));
    }
  });
  return problems;
}
