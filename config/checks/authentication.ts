/**
 * Rules over an endpoint's `Authentication` list that need more than one
 * value (docs/configuration.md "Rules across settings"; docs/security.md
 * "Credential entries"):
 * - every entry carries at least one method block;
 * - ApiKey/PublicKey names are unique in the endpoint (they are the
 *   rate-limit partition and the audit identity), and never begin with
 *   `mailcairn:`, which names the service's own requesters in the audit;
 * - every OAuth `Resource` agrees in canonical form, and on the
 *   administrative endpoint its path ends with `/api/admin`;
 * - authorization server names and issuers are unique in an entry's list,
 *   and a `MetadataAddress` is on the issuer's own host and port;
 * - the `Permissions` list follows `config/permissions.ts`.
 * Key material is never read here.
 */
import { canonicalResource } from '../oauth-resource.ts';
import { permissionListProblems } from '../permissions.ts';
import { type Problem, problem } from '../problem.ts';
import type { Config } from '../schema.ts';
import type { CredentialEntry } from '../schema/credential-entry.ts';

/**
 * The prefix of the service's own requesters in the mailbox-change journal and audit
 * (`mailcairn:outbox`, `mailcairn:spam`, `mailcairn:rule:<Name>`): a key name never takes it, so a
 * request identifier an agent sends can never be answered with the service's own changes.
 */
const RESERVED_REQUESTER_PREFIX = 'mailcairn:';

function hostAndPort(url: URL): string {
  const port = url.port !== '' ? url.port : url.protocol === 'https:' ? '443' : '80';
  return `${url.hostname}:${port}`;
}

function serverProblems(entry: CredentialEntry, at: readonly (string | number)[]): Problem[] {
  const problems: Problem[] = [];
  const names = new Map<string, number>();
  const issuers = new Map<string, number>();
  entry.OAuth?.AuthorizationServers.forEach((server, index) => {
    const here = [...at, 'OAuth', 'AuthorizationServers', index];
    const sameName = names.get(server.Name);
    if (sameName !== undefined) problems.push(problem([...here, 'Name'], `repeats the name of AuthorizationServers:${sameName}; names are unique`));
    else names.set(server.Name, index);
    const sameIssuer = issuers.get(server.Issuer);
    if (sameIssuer !== undefined) problems.push(problem([...here, 'Issuer'], `repeats the issuer of AuthorizationServers:${sameIssuer}; issuers are unique`));
    else issuers.set(server.Issuer, index);
    if (server.MetadataAddress !== undefined && hostAndPort(new URL(server.MetadataAddress)) !== hostAndPort(new URL(server.Issuer))) {
      problems.push(problem([...here, 'MetadataAddress'], "must be on the issuer's own host and port"));
    }
  });
  return problems;
}

export function authenticationProblems(config: Config): Problem[] {
  const problems: Problem[] = [];
  for (const section of ['McpEndpoint', 'AdminEndpoint'] as const) {
    const keyNames = new Map<string, string>();
    let agreedResource: { value: string; index: number } | undefined;
    config[section].Authentication.forEach((entry, index) => {
      const at = [section, 'Authentication', index];
      if (entry.ApiKey === undefined && entry.PublicKey === undefined && entry.OAuth === undefined) {
        problems.push(problem(at, 'carries no method: write an ApiKey, PublicKey or OAuth block'));
      }
      for (const block of ['ApiKey', 'PublicKey'] as const) {
        const key = entry[block];
        if (key === undefined) continue;
        if (key.Name.startsWith(RESERVED_REQUESTER_PREFIX)) {
          problems.push(
            problem(
              [...at, block, 'Name'],
              `begins with ${RESERVED_REQUESTER_PREFIX}, which names the service's own work in the mailbox-change audit (the outbox, rules, spam)`,
            ),
          );
        }
        const earlier = keyNames.get(key.Name);
        if (earlier !== undefined) problems.push(problem([...at, block, 'Name'], `repeats the name of ${earlier}; key names are unique in the endpoint`));
        else keyNames.set(key.Name, [...at, block].join(':'));
      }
      if (entry.OAuth !== undefined) {
        const resource = canonicalResource(entry.OAuth.Resource);
        if (section === 'AdminEndpoint' && !new URL(resource).pathname.endsWith('/api/admin')) {
          problems.push(problem([...at, 'OAuth', 'Resource'], 'must end with /api/admin (the public URL of the administrative routes)'));
        }
        if (agreedResource === undefined) agreedResource = { value: resource, index };
        else if (agreedResource.value !== resource) {
          problems.push(
            problem([...at, 'OAuth', 'Resource'], `must agree with ${section}:Authentication:${agreedResource.index}:OAuth:Resource (${agreedResource.value})`),
          );
        }
        problems.push(...serverProblems(entry, at));
      }
      if (entry.Permissions !== undefined) problems.push(...permissionListProblems(section, entry.Permissions, [...at, 'Permissions']));
    });
  }
  return problems;
}
