/**
 * The sockets the process will open, derived from the endpoint sections:
 * which section owns each, its role (serving routes, terminating TLS for
 * one or more profiles, or redirecting clear text), and its address.
 *
 * Shared by the port check (`config/checks/ports.ts`), the posture lines and,
 * if it wishes, the HTTP layer. Disabled endpoints open nothing; port 0 is
 * "any free port" and never collides.
 */
import type { Config } from './schema.ts';
import { redirect } from './schema/https.ts';

export type ListenerSurface = 'McpEndpoint' | 'AdminEndpoint' | 'HealthEndpoints';
export type ListenerRole = 'routes' | 'tls' | 'redirect';

export type Listener = {
  readonly surface: ListenerSurface;
  readonly role: ListenerRole;
  /** The setting that owns the socket, e.g. `McpEndpoint`, `McpEndpoint:Https:Endpoints:0`, `McpEndpoint:Https:Redirect`. */
  readonly section: string;
  readonly bindAddress: string;
  readonly port: number;
  /** Indexes into `Https:Endpoints` of the profiles served (role `tls`), sharing one socket by server name. */
  readonly profiles: readonly number[];
};

type Profile = { readonly BindAddress: string; readonly Port: number };

function tlsListeners(surface: ListenerSurface, profiles: readonly Profile[]): Listener[] {
  const byAddress = new Map<string, { bindAddress: string; port: number; profiles: number[] }>();
  profiles.forEach((profile, index) => {
    const key = `${profile.BindAddress}|${profile.Port}`;
    const group = byAddress.get(key);
    if (group === undefined) byAddress.set(key, { bindAddress: profile.BindAddress, port: profile.Port, profiles: [index] });
    else group.profiles.push(index);
  });
  return [...byAddress.values()].map((group) => ({
    surface,
    role: 'tls' as const,
    section: `${surface}:Https:Endpoints:${group.profiles[0] ?? 0}`,
    bindAddress: group.bindAddress,
    port: group.port,
    profiles: group.profiles,
  }));
}

function redirectListener(
  surface: ListenerSurface,
  written: { Enabled: boolean; BindAddress: string; Port: number } | undefined,
  defaultPort: number,
): Listener[] {
  const settings = written ?? redirect(defaultPort).parse({});
  if (!settings.Enabled) return [];
  return [{ surface, role: 'redirect', section: `${surface}:Https:Redirect`, bindAddress: settings.BindAddress, port: settings.Port, profiles: [] }];
}

function routes(surface: ListenerSurface, bindAddress: string, port: number): Listener {
  return { surface, role: 'routes', section: surface, bindAddress, port, profiles: [] };
}

export function listenersOf(config: Config): Listener[] {
  const listeners: Listener[] = [];
  const mcp = config.McpEndpoint;
  if (mcp.Enabled) {
    if (mcp.Transport === 'Http') listeners.push(routes('McpEndpoint', mcp.BindAddress, mcp.Port));
    else {
      listeners.push(...tlsListeners('McpEndpoint', mcp.Https.Endpoints));
      if (mcp.Transport === 'HttpAndHttps') listeners.push(...redirectListener('McpEndpoint', mcp.Https.Redirect, 8080));
    }
  }
  const admin = config.AdminEndpoint;
  if (admin.Enabled) {
    if (admin.Https.Endpoints.length === 0) listeners.push(routes('AdminEndpoint', admin.BindAddress, admin.Port));
    else {
      listeners.push(...tlsListeners('AdminEndpoint', admin.Https.Endpoints));
      listeners.push(...redirectListener('AdminEndpoint', admin.Https.Redirect, 8091));
    }
  }
  const health = config.HealthEndpoints;
  if (health.Enabled) {
    if (health.Transport === 'Http') listeners.push(routes('HealthEndpoints', health.BindAddress, health.Port));
    else listeners.push(...tlsListeners('HealthEndpoints', health.Https.Endpoints));
  }
  return listeners;
}
