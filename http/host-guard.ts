/**
 * The DNS-rebinding defence (issue 28, item 6): which `Host` a listener
 * serves. A page on a site the attacker controls can point its own name at
 * 127.0.0.1 and have the browser send requests to a listener on this
 * machine; the browser then names the attacker's site in `Host` (a header
 * page script cannot set). So a request is served only when its `Host`
 * names something that cannot be rebound or that the operator configured:
 *
 * - an IP literal (IPv4, or bracketed IPv6): nobody's DNS answers for it;
 * - `localhost` or a name under `.localhost` (RFC 6761: never sent to DNS);
 * - a domain of the surface's HTTPS profiles (`<Section>:Https:Endpoints`);
 * - the host of the surface's OAuth `Resource`, when an entry carries one
 *   (where its clients are told the surface is);
 * - the host of `Deployment:PublicBaseAddress`, when set.
 *
 * The port is ignored (as the MCP SDK's `hostHeaderValidation` does), and so
 * is one trailing dot. No `Host`, or one that is not `host[:port]`, is
 * refused; so is an absolute-form request target naming any other host
 * (RFC 9112 3.2.2: it overrides `Host`).
 *
 * When the check applies: on a connection that arrived at a loopback address
 * (every connection of a listener bound to one, and a wildcard listener
 * reached through loopback: the same attack), and on every connection of a
 * surface that requires no credential (empty `Authentication`; the health
 * listener never takes one), wherever it is bound. Elsewhere a rebound page
 * has no credential to send, and an authenticated listener reachable by
 * other names (a LAN name, a proxy's upstream name) keeps working.
 *
 * Refused: an empty 403 (E_HTTP_HOST_REFUSED), what the MCP SDK's own guard
 * answers; the conformance suite's `dns-rebinding-protection` scenario
 * accepts any 4xx. 421 was not chosen: it tells a client to retry on another
 * connection, and there is none that would be served.
 *
 * `X-Forwarded-Host` is never read: a page's script may set it (only `Host`
 * is a forbidden header), and the hop judged here is the one to this
 * process. Behind a reverse proxy the `Host` is what the proxy sends: its
 * upstream address (an IP literal or `localhost`), or, when it passes the
 * client's, a name to write in `Deployment:PublicBaseAddress` or a profile.
 *
 * Imported by the listeners (http/mcp, http/admin, http/health).
 */
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import type { Config } from '../config/schema.ts';
import { isLoopbackHost } from '../config/ip-address.ts';
import type { Logger } from '../runtime/log.ts';

/** What one surface's guard knows. */
export type HostGuardSettings = {
  /** Whether the surface asks every request for a credential (a non-empty `Authentication`). */
  readonly credentialRequired: boolean;
  /** Host names served besides IP literals and loopback names: profile domains, the OAuth resource's and public base address's hosts. */
  readonly names: readonly string[];
};

export type HostGuard = {
  /** Whether the request may be served: the check does not apply to its connection, or its `Host` is allowed. */
  admits(req: IncomingMessage): boolean;
};

/** The surfaces with a guard of their own. */
export type GuardedSection = 'McpEndpoint' | 'AdminEndpoint' | 'HealthEndpoints';

/** A refused request is logged at most this often (a page can send many): a count of refusals since the last line. */
const REFUSAL_LOG_INTERVAL_MS = 60_000;

/** The guard of a surface as configured; refusals are logged (throttled) as `http.host-refused`. */
export function hostGuardOf(config: Config, section: GuardedSection, log?: Logger): HostGuard {
  const entries = section === 'HealthEndpoints' ? [] : config[section].Authentication;
  const credentialRequired = entries.length > 0;
  const names = config[section].Https.Endpoints.map((profile) => profile.Domain);
  for (const entry of entries) if (entry.OAuth !== undefined) names.push(new URL(entry.OAuth.Resource).hostname);
  const base = config.Deployment.PublicBaseAddress;
  if (base !== undefined) names.push(new URL(base).hostname);
  return createHostGuard({ credentialRequired, names }, log === undefined ? undefined : throttledRefusalLog(log, section));
}

export function createHostGuard(settings: HostGuardSettings, refused?: () => void): HostGuard {
  const names = new Set(settings.names.map(nameKey));
  return {
    admits(req) {
      if (!guardApplies(settings.credentialRequired, req.socket.localAddress)) return true;
      if (requestHostsAllowed(req, names)) return true;
      refused?.();
      return false;
    },
  };
}

/** Whether a connection arriving at `localAddress` is checked. */
export function guardApplies(credentialRequired: boolean, localAddress: string | undefined): boolean {
  if (!credentialRequired) return true;
  // Unknown (a socket already gone): checked, the stricter reading.
  return localAddress === undefined || isLoopbackHost(localAddress);
}

function requestHostsAllowed(req: IncomingMessage, names: ReadonlySet<string>): boolean {
  if (!hostAllowed(req.headers.host, names)) return false;
  const target = req.url ?? '/';
  if (target.startsWith('/') || target === '*') return true;
  // Absolute form: its authority is the request's host.
  try {
    return hostAllowed(new URL(target).host, names);
  } catch {
    return false;
  }
}

/** Whether a `Host` value (`host[:port]`) names an IP literal, a loopback name, or one of `names` (lower case, no trailing dot). */
export function hostAllowed(host: string | undefined, names: ReadonlySet<string>): boolean {
  if (host === undefined) return false;
  const authority = splitAuthority(host.trim().toLowerCase());
  if (authority === null) return false;
  const { name, bracketed } = authority;
  // A zone id (`%25eth0`) names an interface of the client's, never this listener.
  if (bracketed) return isIP(name) === 6 && !name.includes('%');
  if (isIP(name) === 4) return true;
  const key = nameKey(name);
  if (!isHostName(key)) return false;
  return key === 'localhost' || key.endsWith('.localhost') || names.has(key);
}

/** `name[:port]` or `[v6][:port]`; null when the text is neither (the port, when written, is digits). */
function splitAuthority(text: string): { name: string; bracketed: boolean } | null {
  let name: string;
  let rest: string;
  const bracketed = text.startsWith('[');
  if (bracketed) {
    const close = text.indexOf(']');
    if (close < 0) return null;
    name = text.slice(1, close);
    rest = text.slice(close + 1);
  } else {
    const colon = text.indexOf(':');
    name = colon < 0 ? text : text.slice(0, colon);
    rest = colon < 0 ? '' : text.slice(colon);
  }
  if (rest !== '' && !/^:\d{0,5}$/.test(rest)) return null;
  return name === '' ? null : { name, bracketed };
}

/** A DNS name's labels: letters, digits, hyphens (underscores, as some internal names carry them). */
function isHostName(name: string): boolean {
  return name.length <= 253 && name.split('.').every((label) => /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/.test(label));
}

/** Names compare as DNS names: case-insensitively, without one trailing dot. */
function nameKey(name: string): string {
  return name.toLowerCase().replace(/\.$/, '');
}

function throttledRefusalLog(log: Logger, section: GuardedSection): () => void {
  let refusals = 0;
  let lastLine = Number.NEGATIVE_INFINITY;
  return () => {
    refusals += 1;
    const now = Date.now();
    if (now - lastLine < REFUSAL_LOG_INTERVAL_MS) return;
    lastLine = now;
    // The Host itself is the caller's text and stays out of the line; the setting that would admit a name is named instead.
    log.warn({ event: 'http.host-refused', section, refusals, setting: 'Deployment:PublicBaseAddress' }, 'http.host-refused');
    refusals = 0;
  };
}
