/**
 * The origin a request was addressed to, with a TLS-terminating reverse proxy
 * in front (docs/security.md "Reverse proxy"): the scheme and host the client
 * used, which the plain-HTTP token refusal and the metadata route read.
 *
 * The connection's own scheme (TLS socket or not) and `Host` header come
 * first. `X-Forwarded-Proto` and `X-Forwarded-Host` replace them only when
 * the peer that connected to us is in `ReverseProxy:TrustedProxies`
 * (empty trusts every address). `X-Forwarded-For` is never read, so the
 * intermediate hops cannot be checked: raising `MaximumForwardedHops` above
 * 1 says the operator trusts the proxies behind the first one too.
 *
 * Reading, as ASP.NET Core's forwarded-headers middleware does (with header
 * symmetry off): each header is a comma-separated list, one component per
 * hop, the nearest proxy's last. At most `MaximumForwardedHops` components
 * are taken from the right of each header; they are walked right to left
 * and each valid one replaces the value so far. "Discarded per component"
 * means an unparseable component is skipped on its own: the value set by
 * the nearer hops (or the connection's own) stands, and the walk goes on to
 * the next component; the other header is unaffected. So the result is the
 * leftmost valid component inside the window. A proto component is valid
 * when it is `http` or `https` (any case); a host component when it is a
 * DNS name or an IPv4 address, or a bracketed IPv6 address, with an
 * optional port of 1 to 65535. Empty components are invalid.
 *
 * Peers are compared as ASP.NET does: an IPv4-mapped IPv6 peer
 * (`::ffff:10.0.0.1`, what a dual-stack socket reports) is checked in both
 * its IPv4 and its IPv6 form, and so is an IPv4 peer; a zone id is dropped.
 *
 * `overTls` is the connection's own transport, never a header: client
 * certificates need a TLS connection this process terminated.
 *
 * Imported by the listeners.
 */
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { Config } from '../config/schema.ts';
import { type IpAddress, type Network, parseIp, parseNetwork } from '../config/ip-address.ts';

export type ReverseProxySettings = Config['ReverseProxy'];

export type EffectiveOrigin = {
  readonly scheme: 'http' | 'https';
  /** Lower-cased `host[:port]`; empty when the request named no valid host. */
  readonly host: string;
  /** Whether this process terminated TLS on the connection. */
  readonly overTls: boolean;
};

const MAPPED_PREFIX = 0xffffn << 32n;

/** Trusted networks per settings object (configuration is frozen, so its identity is stable). */
const trustedBySettings = new WeakMap<ReverseProxySettings, readonly Network[]>();

function trustedNetworks(settings: ReverseProxySettings): readonly Network[] {
  let networks = trustedBySettings.get(settings);
  if (networks === undefined) {
    networks =
      settings.TrustedProxies.length === 0
        ? [
            { family: 4, base: 0n, prefix: 0 },
            { family: 6, base: 0n, prefix: 0 },
          ]
        : settings.TrustedProxies.flatMap((written) => {
            const reading = parseNetwork(written);
            // Startup refuses anything else; a bad entry here trusts nobody rather than somebody.
            return reading.ok ? [reading.network] : [];
          });
    trustedBySettings.set(settings, networks);
  }
  return networks;
}

function contains(network: Network, address: IpAddress): boolean {
  if (network.family !== address.family) return false;
  const width = network.family === 4 ? 32 : 128;
  const shift = BigInt(width - network.prefix);
  return address.value >> shift === network.base >> shift;
}

/** The peer in every form it is compared in: IPv4 and IPv4-mapped IPv6 stand for each other. */
function peerForms(remoteAddress: string | undefined): IpAddress[] {
  if (remoteAddress === undefined) return [];
  const zone = remoteAddress.indexOf('%');
  const peer = parseIp(zone < 0 ? remoteAddress : remoteAddress.slice(0, zone));
  if (peer === null) return [];
  if (peer.family === 4) return [peer, { family: 6, value: MAPPED_PREFIX | peer.value }];
  if (peer.value >> 32n === 0xffffn) return [{ family: 4, value: peer.value & 0xffffffffn }, peer];
  return [peer];
}

export function isTrustedPeer(remoteAddress: string | undefined, settings: ReverseProxySettings): boolean {
  const forms = peerForms(remoteAddress);
  return trustedNetworks(settings).some((network) => forms.some((form) => contains(network, form)));
}

function validProto(component: string): 'http' | 'https' | null {
  const lower = component.toLowerCase();
  return lower === 'http' || lower === 'https' ? lower : null;
}

const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;

/** `name[:port]`, `ipv4[:port]` or `[ipv6][:port]`, lower-cased; null when it is none of these. */
export function validHost(component: string): string | null {
  const lower = component.toLowerCase();
  let name: string;
  let port: string | undefined;
  if (lower.startsWith('[')) {
    const close = lower.indexOf(']');
    if (close < 0) return null;
    const inside = lower.slice(1, close);
    if (isIP(inside) !== 6) return null;
    const rest = lower.slice(close + 1);
    if (rest !== '' && !rest.startsWith(':')) return null;
    name = lower.slice(0, close + 1);
    port = rest === '' ? undefined : rest.slice(1);
  } else {
    const colon = lower.indexOf(':');
    name = colon < 0 ? lower : lower.slice(0, colon);
    port = colon < 0 ? undefined : lower.slice(colon + 1);
    if (name.length === 0 || name.length > 253) return null;
    if (!name.split('.').every((label) => LABEL.test(label))) return null;
  }
  if (port !== undefined && !(/^\d{1,5}$/.test(port) && Number(port) >= 1 && Number(port) <= 65535)) return null;
  return port === undefined ? name : `${name}:${port}`;
}

/** The last `hops` comma-separated components of a header, nearest proxy first. */
function lastComponents(value: string | string[] | undefined, hops: number): string[] {
  if (value === undefined) return [];
  const joined = Array.isArray(value) ? value.join(',') : value;
  return joined
    .split(',')
    .map((component) => component.trim())
    .slice(-hops)
    .reverse();
}

/** The leftmost valid component within the window, or `current` when none is valid. */
function walk<T>(components: readonly string[], current: T, valid: (component: string) => T | null): T {
  let value = current;
  for (const component of components) {
    const parsed = valid(component);
    if (parsed !== null) value = parsed;
  }
  return value;
}

export function effectiveOrigin(req: IncomingMessage, settings: ReverseProxySettings): EffectiveOrigin {
  const overTls = (req.socket as Partial<TLSSocket>).encrypted === true;
  const own: EffectiveOrigin = { scheme: overTls ? 'https' : 'http', host: validHost(req.headers.host ?? '') ?? '', overTls };
  if (!isTrustedPeer(req.socket.remoteAddress, settings)) return own;
  const hops = settings.MaximumForwardedHops;
  return {
    scheme: walk(lastComponents(req.headers['x-forwarded-proto'], hops), own.scheme, validProto),
    host: walk(lastComponents(req.headers['x-forwarded-host'], hops), own.host, validHost),
    overTls,
  };
}
