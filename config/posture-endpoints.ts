/**
 * Posture lines of the listeners and of the HTTP endpoints: where each
 * listener binds, the limits in force (one line per enabled endpoint, as the
 * spec asks), and one line per credential entry with the permissions it
 * resolved to, naming entries that wrote no grant. Names and schemes only:
 * never a reference target, never material.
 */
import { listenersOf, type Listener } from './listeners.ts';
import { type PermissionSurface, resolvePermissions } from './permissions.ts';
import type { Config } from './schema.ts';
import type { CredentialEntry } from './schema/credential-entry.ts';
import { formatTimeSpan } from './schema/time-span.ts';

const PATHS: Record<Listener['surface'], string> = { McpEndpoint: '/mcp', AdminEndpoint: '/api/admin', HealthEndpoints: '/livez, /readyz' };

function hostPort(address: string, port: number): string {
  return `${address.includes(':') ? `[${address}]` : address}:${port}`;
}

function listenerLines(config: Config, listener: Listener): string[] {
  const where = hostPort(listener.bindAddress, listener.port);
  if (listener.role === 'routes') return [`${listener.section}: serving ${PATHS[listener.surface]} on http://${where} (clear text)`];
  if (listener.role === 'redirect') return [`${listener.section}: clear text on ${where} answers 308 to the https address of each domain`];
  const section = config[listener.surface];
  return listener.profiles.map((index) => {
    const profile = section.Https.Endpoints[index];
    if (profile === undefined) return '';
    const tls = profile.MinimumTlsVersion === 'Tls13' ? 'TLS 1.3' : 'TLS 1.2 or later';
    return `${listener.surface}:Https:Endpoints:${index} (${profile.Name}): serving ${PATHS[listener.surface]} for ${profile.Domain} on https://${where}, ${tls}, ${profile.HttpProtocols.join(' and ')}`;
  });
}

function limitLines(section: 'McpEndpoint' | 'AdminEndpoint', config: Config): string[] {
  const limits = config[section].RateLimiting;
  const timeout = config[section].RequestTimeout;
  const partition = section === 'McpEndpoint' ? 'per client' : 'one bucket for all callers';
  return [
    limits.Enabled
      ? `${section}:RateLimiting: ${limits.MaxConcurrentRequests} requests at once, ${limits.ConcurrencyQueueLimit} queued; ${partition}: ${limits.TokenCapacity} tokens, ${limits.TokensPerReplenishmentPeriod} restored every ${formatTimeSpan(limits.ReplenishmentPeriod)}, ${limits.RequestQueueLimit} queued`
      : `${section}:RateLimiting: off`,
    timeout.Enabled ? `${section}:RequestTimeout: ${formatTimeSpan(timeout.Duration)}` : `${section}:RequestTimeout: off`,
  ];
}

function scheme(ref: string): string {
  return ref.slice(0, ref.indexOf(':') + 1);
}

function methods(entry: CredentialEntry, now: number): string {
  const parts: string[] = [];
  for (const block of ['ApiKey', 'PublicKey'] as const) {
    const key = entry[block];
    if (key === undefined) continue;
    const life =
      key.Lifetime === Number.POSITIVE_INFINITY ? 'no limit' : `${key.Lifetime <= now ? 'expired' : 'until'} ${new Date(key.Lifetime).toISOString()}`;
    parts.push(`${block} ${key.Name} (${scheme(key.SecretReference)}, ${life})`);
  }
  if (entry.OAuth !== undefined) {
    parts.push(`OAuth ${entry.OAuth.Resource} from ${entry.OAuth.AuthorizationServers.map((server) => server.Name).join(', ')}`);
  }
  return parts.length > 0 ? parts.join(' + ') : 'no method';
}

function credentialLines(section: PermissionSurface, config: Config, now: number): string[] {
  const entries = config[section].Authentication;
  if (entries.length === 0) return [`${section}:Authentication: none (anyone who reaches the endpoint holds every permission)`];
  return entries.map((entry, index) => {
    const granted = resolvePermissions(section, entry.Permissions);
    const grant =
      entry.Permissions === undefined
        ? `wrote no grant, so holds every permission: ${granted.join(', ')}`
        : granted.length === 0
          ? 'grants nothing'
          : `grants ${granted.join(', ')}`;
    return `${section}:Authentication:${index}: ${methods(entry, now)}; ${grant}`;
  });
}

function mcpExtras(config: Config): string[] {
  const mcp = config.McpEndpoint;
  const origins = mcp.Cors.AllowedOrigins;
  const lines = [
    `McpEndpoint:Cors:AllowedOrigins: ${origins.includes('*') ? 'every origin' : origins.length === 0 ? 'no origin' : origins.join(', ')}`,
    `McpEndpoint:PublishedToolCategories: ${mcp.PublishedToolCategories === undefined ? 'every category' : mcp.PublishedToolCategories.join(', ') || 'none'}`,
  ];
  mcp.ClientCertificateProfiles.forEach((profile, index) => {
    lines.push(`McpEndpoint:ClientCertificateProfiles:${index} (${profile.Name}): ${profile.Requirement}, ${profile.TrustAnchors.length} trust anchor(s)`);
  });
  return lines;
}

export function endpointLines(config: Config, now: number): string[] {
  const lines: string[] = [];
  const listeners = listenersOf(config);
  for (const section of ['McpEndpoint', 'AdminEndpoint', 'HealthEndpoints'] as const) {
    if (!config[section].Enabled) {
      lines.push(`${section}: disabled`);
      continue;
    }
    for (const listener of listeners.filter((l) => l.surface === section)) lines.push(...listenerLines(config, listener));
    if (section === 'HealthEndpoints') continue;
    lines.push(...limitLines(section, config));
    if (section === 'McpEndpoint') lines.push(...mcpExtras(config));
    lines.push(...credentialLines(section, config, now));
  }
  return lines.filter((line) => line !== '');
}
