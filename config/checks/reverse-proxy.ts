/**
 * `ReverseProxy:TrustedProxies`: each value an address or a CIDR network; a
 * prefix written over an address with host bits is refused naming the
 * network it would become, so nobody trusts more (or less) than they meant.
 */
import { parseNetwork } from '../ip-address.ts';
import { type Problem, problem } from '../problem.ts';
import type { Config } from '../schema.ts';

export function reverseProxyProblems(config: Config): Problem[] {
  const problems: Problem[] = [];
  config.ReverseProxy.TrustedProxies.forEach((written, index) => {
    const at = ['ReverseProxy', 'TrustedProxies', index];
    const reading = parseNetwork(written);
    if (reading.ok) return;
    if (reading.reason === 'host-bits') {
      problems.push(problem(at, `${written} has host bits set; write the network it would become, ${reading.wouldBe}, or the single address`));
    } else if (reading.reason === 'bad-prefix') {
      problems.push(problem(at, 'has a prefix length that does not fit the address (0 to 32 for IPv4, 0 to 128 for IPv6)'));
    } else {
      problems.push(problem(at, 'must be an IP address or a CIDR network (e.g. 10.0.0.0/8, fd00::/8)'));
    }
  });
  return problems;
}

const MAPPED_IPV4 = 0xffffn << 32n;

/** Whether forwarded headers are believed from anyone: the list is empty, or holds 0.0.0.0/0, ::/0 or all of ::ffff:0:0/96. */
export function trustsEveryone(trusted: readonly string[]): boolean {
  if (trusted.length === 0) return true;
  const all = (family: 4 | 6): boolean =>
    trusted.some((written) => {
      const reading = parseNetwork(written);
      return reading.ok && reading.network.family === family && reading.network.prefix === 0;
    });
  // http/proxy.ts compares an IPv4 peer in its IPv4-mapped IPv6 form too
  // (::ffff:a.b.c.d, what a dual-stack socket reports), so a network holding
  // all of ::ffff:0:0/96 believes every IPv4 peer.
  const allMapped = trusted.some((written) => {
    const reading = parseNetwork(written);
    if (!reading.ok || reading.network.family !== 6 || reading.network.prefix > 96) return false;
    const shift = BigInt(128 - reading.network.prefix);
    return reading.network.base >> shift === MAPPED_IPV4 >> shift;
  });
  // Either family wholly covered already believes anyone who reaches the process over it.
  return all(4) || all(6) || allMapped;
}
