/**
 * The health listener (`HealthEndpoints`): `/livez` answers while the process
 * runs, `/readyz` while it can serve (database migrated, every configured
 * listener open, supervisor healthy, no child given up, not shutting down).
 * It opens first, so liveness answers while the others are still opening. No credential, no rate limit, and
 * nothing else: `/mcp` and every other path answer 404. A `Host` the guard
 * does not serve is an empty 403 before anything (http/host-guard.ts: the
 * listener takes no credential, so it is checked wherever bound).
 *
 * Answers name no actor, account or path: the listener is unauthenticated.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Codes } from '../../runtime/errors.ts';
import type { StorageCondition } from '../../runtime/storage-full.ts';
import type { HostGuard } from '../host-guard.ts';
import { httpServer } from '../listen.ts';
import { observeExchange } from '../pipeline/exchange-telemetry.ts';

export type Readiness = {
  ready: boolean;
  checks: {
    database: 'migrated' | 'unavailable';
    supervisor: 'healthy' | 'degraded' | 'stopping';
    givenUpActors: number;
    /** Every configured listener accepts connections (`open`) only once startup has opened the last of them. */
    listeners: 'opening' | 'open' | 'closing';
    /**
     * `full` while a writer waits out a full disk under the store (runtime/storage-full.ts). Reads
     * still answer, so it does not make the service unready (docs/operations.md "A full disk").
     */
    storage?: StorageCondition;
  };
};

export function createHealthServer(readiness: () => Readiness, hosts?: HostGuard): Server {
  return httpServer(healthHandler(readiness, hosts));
}

/**
 * What the health listener answers, on clear text or on a TLS socket of its
 * profiles (`Transport: HttpsOnly`). `hosts`: the DNS-rebinding guard
 * (http/host-guard.ts); probes naming an IP address, as kubelet's do, pass it.
 */
export function healthHandler(readiness: () => Readiness, hosts?: HostGuard): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    // Measured and traced as every listener's exchanges are (surface `health`; templates `/livez`, `/readyz`).
    const exchange = observeExchange(req, res, 'health');
    if (hosts !== undefined && !hosts.admits(req)) {
      req.resume();
      return answer(res, Codes.E_HTTP_HOST_REFUSED.status);
    }
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/livez' && path !== '/readyz') return answer(res, 404);
    exchange.routed(path);
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      return answer(res, 405);
    }
    if (path === '/livez') return answer(res, 200, { status: 'live' }, req.method === 'HEAD');
    return answerReadiness(res, readiness(), req.method === 'HEAD');
  };
}

/** The readiness answer, on this listener and on the MCP listener (`/readyz`, no credential, outside limits). */
export function answerReadiness(res: ServerResponse, state: Readiness, headOnly: boolean): void {
  answer(res, state.ready ? 200 : 503, { status: state.ready ? 'ready' : 'not-ready', checks: state.checks }, headOnly);
}

function answer(res: ServerResponse, status: number, body?: unknown, headOnly = false): void {
  res.statusCode = status;
  res.setHeader('Cache-Control', 'no-store');
  if (body === undefined) {
    res.end();
    return;
  }
  const text = JSON.stringify(body);
  res.setHeader('Content-Type', 'application/json');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(headOnly ? undefined : text);
}
