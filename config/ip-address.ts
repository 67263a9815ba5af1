/**
 * IP addresses and CIDR networks, as the configuration needs them: telling
 * an address from a host name, recognising loopback and wildcard addresses,
 * and reducing a `TrustedProxies` network to the network it denotes so that a
 * prefix written with host bits can be refused naming what it would become.
 *
 * Addresses are held as bigints (32 or 128 bits); IPv6 is written back in
 * RFC 5952 form. Imported by `config/` only.
 */
import { isIP } from 'node:net';

export type IpAddress = { readonly family: 4 | 6; readonly value: bigint };
export type Network = { readonly family: 4 | 6; readonly base: bigint; readonly prefix: number };

function parseV4(text: string): bigint {
  return text.split('.').reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
}

function parseV6(text: string): bigint {
  // An IPv4 suffix (::ffff:10.0.0.1) stands for the last two groups.
  let written = text;
  const lastColon = written.lastIndexOf(':');
  const last = written.slice(lastColon + 1);
  if (last.includes('.')) {
    const v4 = parseV4(last);
    written = `${written.slice(0, lastColon + 1)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const groups = (part: string): number[] => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  let all: number[];
  if (written.includes('::')) {
    const [left = '', right = ''] = written.split('::');
    const l = groups(left);
    const r = groups(right);
    all = [...l, ...new Array<number>(8 - l.length - r.length).fill(0), ...r];
  } else {
    all = groups(written);
  }
  return all.reduce((acc, g) => (acc << 16n) | BigInt(g), 0n);
}

/** The address written, or null when the text is not a bare IP address (zone ids are refused). */
export function parseIp(text: string): IpAddress | null {
  const family = isIP(text);
  if (family === 4) return { family: 4, value: parseV4(text) };
  if (family === 6 && !text.includes('%')) return { family: 6, value: parseV6(text) };
  return null;
}

export function formatIp(address: IpAddress): string {
  if (address.family === 4) {
    return [24n, 16n, 8n, 0n].map((shift) => String((address.value >> shift) & 0xffn)).join('.');
  }
  const groups = [112n, 96n, 80n, 64n, 48n, 32n, 16n, 0n].map((shift) => Number((address.value >> shift) & 0xffffn));
  // RFC 5952: the longest run of two or more zero groups (the first on a tie) becomes '::'.
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i += 1;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j += 1;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = (gs: number[]): string => gs.map((g) => g.toString(16)).join(':');
  if (bestStart < 0) return hex(groups);
  return `${hex(groups.slice(0, bestStart))}::${hex(groups.slice(bestStart + bestLength))}`;
}

function bits(family: 4 | 6): number {
  return family === 4 ? 32 : 128;
}

export type NetworkReading =
  | { readonly ok: true; readonly network: Network }
  | { readonly ok: false; readonly reason: 'not-an-address' | 'bad-prefix' }
  | { readonly ok: false; readonly reason: 'host-bits'; readonly wouldBe: string };

/** Reads `address` or `address/prefix`; a bare address is a network of one. */
export function parseNetwork(text: string): NetworkReading {
  const slash = text.indexOf('/');
  const address = parseIp(slash < 0 ? text : text.slice(0, slash));
  if (address === null) return { ok: false, reason: 'not-an-address' };
  const width = bits(address.family);
  let prefix = width;
  if (slash >= 0) {
    const written = text.slice(slash + 1);
    if (!/^\d{1,3}$/.test(written) || Number(written) > width) return { ok: false, reason: 'bad-prefix' };
    prefix = Number(written);
  }
  const hostMask = (1n << BigInt(width - prefix)) - 1n;
  const base = address.value & ~hostMask & ((1n << BigInt(width)) - 1n);
  if (base !== address.value) {
    return { ok: false, reason: 'host-bits', wouldBe: `${formatIp({ family: address.family, value: base })}/${prefix}` };
  }
  return { ok: true, network: { family: address.family, base, prefix } };
}

export function isWildcardAddress(text: string): boolean {
  const address = parseIp(text);
  return address !== null && address.value === 0n;
}

/** Whether a host (name or address, IPv6 optionally in brackets) can only be this machine. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const lower = bare.toLowerCase();
  if (lower === 'localhost' || lower.endsWith('.localhost')) return true;
  const address = parseIp(bare);
  if (address === null) return false;
  if (address.family === 4) return address.value >> 24n === 127n;
  if (address.value === 1n) return true;
  // ::ffff:127.x.x.x, an IPv4 loopback address mapped into IPv6.
  return address.value >> 32n === 0xffffn && (address.value >> 24n) % 256n === 127n;
}
