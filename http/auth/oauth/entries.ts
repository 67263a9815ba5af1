/**
 * The OAuth view of an endpoint's `Authentication` list, shared by the
 * modules of `http/auth/oauth/`: the entry and server shapes they read, and
 * the small folds over them (every server, every scope, the one Resource).
 *
 * An entry is anything with an optional `OAuth` block, so the configured
 * list is passed as it is and positions in it (`entryIndex`) stay those of
 * the configuration (what `Permissions` and diagnostics name).
 *
 * Importable from `http/auth/**` only.
 */
import type { CredentialEntry } from '../../../config/schema/credential-entry.ts';

export type OAuthBlock = NonNullable<CredentialEntry['OAuth']>;
export type AuthorizationServer = OAuthBlock['AuthorizationServers'][number];
/** One element of an `Authentication` list; only its OAuth block is read. */
export type OAuthEntry = { readonly OAuth?: OAuthBlock | undefined };
/** What discovery needs to know of a server (the rest of the server block is not read there). */
export type ServerRef = Pick<AuthorizationServer, 'Name' | 'Issuer' | 'MetadataAddress'>;

/** The canonical Resource the entries agree on (startup checks they do), or undefined when no entry carries OAuth. */
export function resourceOf(entries: readonly OAuthEntry[]): string | undefined {
  for (const entry of entries) if (entry.OAuth !== undefined) return entry.OAuth.Resource;
  return undefined;
}

/** Every configured server, in configuration order, once per (Issuer, MetadataAddress). */
export function serversOf(entries: readonly OAuthEntry[]): ServerRef[] {
  const seen = new Set<string>();
  const out: ServerRef[] = [];
  for (const entry of entries) {
    for (const server of entry.OAuth?.AuthorizationServers ?? []) {
      const key = serverKey(server);
      if (seen.has(key)) continue;
      seen.add(key);
      out.push(server);
    }
  }
  return out;
}

/** Identity of a server's discovery and key set: the issuer, and where its document is read. */
export function serverKey(server: ServerRef): string {
  return `${server.Issuer}\u0000${server.MetadataAddress ?? ''}`;
}

/** Values in first-seen order without repeats. */
export function distinct(values: Iterable<string>): string[] {
  return [...new Set(values)];
}
