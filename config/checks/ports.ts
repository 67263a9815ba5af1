/**
 * Two listeners of the process on one port fail startup, naming both
 * sections (docs/configuration.md "Listeners").
 *
 * Exceptions, both one socket rather than two:
 * - TLS profiles of one endpoint on the same address and port share a
 *   listener selected by server name (their own rules are in https-profiles.ts);
 * - the administrative redirect listener "may share a port with other
 *   listeners in the process": it joins the MCP redirect listener when both
 *   are on the same address and port, each Host redirected to its own profile.
 *   A redirect cannot share a socket with a listener that serves routes.
 */
import { listenersOf, type Listener } from '../listeners.ts';
import { type Problem, problem } from '../problem.ts';
import type { Config } from '../schema.ts';

function sharesOneSocket(a: Listener, b: Listener): boolean {
  if (a.role === 'tls' && b.role === 'tls' && a.surface === b.surface) return true;
  const redirects = a.role === 'redirect' && b.role === 'redirect';
  return redirects && a.surface !== b.surface && a.bindAddress === b.bindAddress && a.surface !== 'HealthEndpoints' && b.surface !== 'HealthEndpoints';
}

/** The refusal of a port another listener of the process binds (shared with the telemetry scrape listener's check). */
export function portClash(port: number, other: Listener): string {
  return `port ${port} is also bound by ${other.section} (${other.section}:Port); two listeners of the process cannot share a port`;
}

/** The configured listener already on `port` (never for port 0, "any free port"). */
export function listenerOnPort(config: Config, port: number): Listener | undefined {
  return port === 0 ? undefined : listenersOf(config).find((listener) => listener.port === port);
}

export function portProblems(config: Config): Problem[] {
  const problems: Problem[] = [];
  const seen: Listener[] = [];
  for (const listener of listenersOf(config)) {
    if (listener.port === 0) continue;
    const clash = seen.find((other) => other.port === listener.port && !sharesOneSocket(other, listener));
    if (clash !== undefined) {
      problems.push(problem(`${listener.section}:Port`, portClash(listener.port, clash)));
    }
    seen.push(listener);
  }
  return problems;
}
