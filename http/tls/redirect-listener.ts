/**
 * The clear-text redirect listener of a surface with HTTPS profiles
 * (`McpEndpoint:Https:Redirect` under `HttpAndHttps`, `AdminEndpoint:Https:Redirect`;
 * which ones open is `config/listeners.ts`). It maps no route: every method
 * and path is answered 308 (the method and body are kept, unlike 301/302) to
 * `https://<domain>[:<port>]<path-and-query>` of the profile whose `Domain`
 * the request's host names, the request target copied byte for byte. A host
 * naming no profile (or none, or an IP literal) is answered an empty 400.
 * Nothing else runs here: no credential, limiter, CORS or certificate.
 *
 * Answers carry `Cache-Control: no-store`: a cached 308 is permanent in a
 * browser and outlives a change of the profiles' ports or domains, and an
 * operator switching transports must be able to take it back.
 *
 * The request body is never buffered. A small declared body (≤ 64 KiB) is
 * discarded so the connection stays reusable; anything larger, chunked, or
 * sent with `Expect: 100-continue` (never invited) is answered with
 * `Connection: close` and not read.
 *
 * Nothing a request carries is logged: the path or query may carry a
 * capability (`/attachments/{capability}`), the host is the caller's text.
 * A refusal is logged at debug by its kind only.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Logger } from '../../runtime/log.ts';
import { Codes } from '../../runtime/errors.ts';
import { httpServer } from '../listen.ts';
import { observeExchange, type TelemetrySurface } from '../pipeline/exchange-telemetry.ts';

/** One HTTPS profile of the surface: where a host's clear-text requests are sent. */
export type RedirectTarget = { readonly domain: string; readonly port: number };

/** Declared bodies up to this size are discarded to keep the connection; larger ones close it (as Go's net/http does, at 256 KiB). */
const DISCARD_LIMIT_BYTES = 64 * 1024;

type Refusal = 'no-host' | 'unknown-host' | 'request-target';

export function createRedirectListener(targets: readonly RedirectTarget[], deps: { log: Logger; surface: TelemetrySurface }): Server {
  const origins = new Map<string, string>();
  for (const target of targets) {
    const domain = target.domain.toLowerCase();
    if (!origins.has(domain)) origins.set(domain, `https://${domain}${target.port === 443 ? '' : `:${target.port}`}`);
  }

  const answer = (req: IncomingMessage, res: ServerResponse, invitedBody: boolean): void => {
    // Measured and traced with the surface's other exchanges; no route is matched here, so no template.
    observeExchange(req, res, deps.surface);
    const target = redirectOf(req, origins);
    const keepConnection = invitedBody && bodyIsSmall(req);
    if (keepConnection) req.resume();
    else res.setHeader('Connection', 'close');
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Content-Length', 0);
    if (typeof target === 'string') {
      res.statusCode = 308;
      res.setHeader('Location', target);
    } else {
      deps.log.debug({ event: 'redirect.refused', reason: target.refused }, 'redirect.refused');
      res.statusCode = Codes.E_HTTP_BAD_REQUEST.status;
    }
    res.end();
  };

  const server = httpServer((req, res) => answer(req, res, true));
  // Answering before `100 Continue` tells the client not to send the body (RFC 9110 section 10.1.1); the connection then cannot be reused.
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => answer(req, res, false));
  return server;
}

/** Whether the request's body is absent or declared small enough to discard. */
function bodyIsSmall(req: IncomingMessage): boolean {
  if (req.headers['transfer-encoding'] !== undefined) return false;
  const length = req.headers['content-length'];
  return length === undefined || Number(length) <= DISCARD_LIMIT_BYTES;
}

/** The Location for `req`, or why none is given. */
function redirectOf(req: IncomingMessage, origins: ReadonlyMap<string, string>): string | { refused: Refusal } {
  const target = requestTarget(req.url ?? '');
  if (target === null) return { refused: 'request-target' };
  // An absolute-form target names the host, and the Host header is then ignored (RFC 9112 section 3.2.2).
  const hosts = req.headersDistinct.host;
  const authority = target.authority ?? (hosts?.length === 1 ? hosts[0] : undefined);
  if (authority === undefined) return { refused: 'no-host' };
  const name = hostName(authority);
  const origin = name === null ? undefined : origins.get(name);
  if (origin === undefined) return { refused: 'unknown-host' };
  return origin + target.pathAndQuery;
}

/**
 * The path and query of a request target as sent (fragment dropped: it is
 * not sent to a server, and one in Location would replace the client's), and
 * the authority of an absolute-form target. Null for the asterisk and
 * authority forms, and for user information (RFC 9110 section 4.2.4).
 */
function requestTarget(url: string): { authority: string | undefined; pathAndQuery: string } | null {
  const withoutFragment = url.split('#', 1)[0] ?? '';
  if (withoutFragment.startsWith('/')) return { authority: undefined, pathAndQuery: withoutFragment };
  const absolute = /^https?:\/\/([^/?]*)(.*)$/i.exec(withoutFragment);
  if (absolute === null) return null;
  const authority = absolute[1] ?? '';
  const rest = absolute[2] ?? '';
  if (authority.includes('@')) return null;
  return { authority, pathAndQuery: rest.startsWith('/') ? rest : `/${rest}` };
}

/** The DNS name of a host (port and one trailing dot dropped, lower case), or null when it is not one (an IPv6 literal, text). */
function hostName(authority: string): string | null {
  const parsed = /^([a-z0-9.-]+?)\.?(?::\d*)?$/i.exec(authority);
  return parsed?.[1]?.toLowerCase() ?? null;
}
