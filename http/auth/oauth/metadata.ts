/**
 * The protected-resource metadata document (RFC 9728; docs/security.md
 * "OAuth access tokens"): what a client reads, from the
 * address in a 401 challenge, to learn which authorization servers to ask
 * and for which scopes.
 *
 * It lives at `/.well-known/oauth-protected-resource` followed by the path
 * of `Resource` (`https://h/mcp` → `/.well-known/oauth-protected-resource/mcp`)
 * and is served only to a request whose own scheme and host (after trusted
 * forwarded headers, worked out by the caller) are those of `Resource`;
 * another gets an empty 404. `Resource` is never derived from a request. A
 * surface with no OAuth entry publishes nothing.
 *
 * Importable from the HTTP listeners and `http/auth/**`.
 */
import { distinct, type OAuthEntry, resourceOf } from './entries.ts';
import { Codes } from '../../../runtime/errors.ts';

export const METADATA_PREFIX = '/.well-known/oauth-protected-resource';
const RESOURCE_NAME = 'mailcairn';

export type ProtectedResourceMetadata = {
  resource: string;
  authorization_servers: string[];
  scopes_supported: string[];
  bearer_methods_supported: ['header'];
  resource_name: string;
};

/** Where the document of `resource` (canonical) is served on the resource's own host. */
export function metadataPathOf(resource: string): string {
  const path = new URL(resource).pathname;
  return `${METADATA_PREFIX}${path === '/' ? '' : path}`;
}

/** The document's absolute address, as challenges carry it; undefined when nothing is published. */
export function metadataUrlOf(entries: readonly OAuthEntry[]): string | undefined {
  const resource = resourceOf(entries);
  return resource === undefined ? undefined : `${new URL(resource).origin}${metadataPathOf(resource)}`;
}

/** The document, or undefined when no entry carries OAuth. */
export function metadataDocument(entries: readonly OAuthEntry[]): ProtectedResourceMetadata | undefined {
  const resource = resourceOf(entries);
  if (resource === undefined) return undefined;
  const blocks = entries.flatMap((e) => (e.OAuth !== undefined ? [e.OAuth] : []));
  return {
    resource,
    authorization_servers: distinct(blocks.flatMap((b) => b.AuthorizationServers.map((s) => s.Issuer))),
    scopes_supported: distinct(blocks.flatMap((b) => [...b.RequiredScopes, ...b.AdvertisedScopes])),
    bearer_methods_supported: ['header'],
    resource_name: RESOURCE_NAME,
  };
}

/** Whether the request's own scheme and host are the resource's (case and default port aside). */
export function sameOrigin(resource: string, origin: { scheme: string; host: string }): boolean {
  // Only what a Host value may hold: a userinfo or path smuggled into it
  // would otherwise be parsed away by URL and the rest compared.
  if (!/^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/.test(origin.host)) return false;
  const scheme = origin.scheme.replace(/:$/, '').toLowerCase();
  if (scheme !== 'https' && scheme !== 'http') return false;
  let asked: URL;
  try {
    asked = new URL(`${scheme}://${origin.host}`);
  } catch {
    return false;
  }
  const published = new URL(resource);
  return asked.protocol === published.protocol && asked.host === published.host;
}

type Request = { method?: string | undefined; url?: string | undefined };
type Response = { statusCode: number; setHeader(name: string, value: string | number): unknown; end(chunk?: string): unknown };

/**
 * Answers a request for the metadata document and returns true, or returns
 * false (answering nothing) when the path is not the document's or nothing
 * is published, so the listener routes on.
 */
export function serveMetadata(req: Request, res: Response, origin: { scheme: string; host: string }, entries: readonly OAuthEntry[]): boolean {
  const document = metadataDocument(entries);
  if (document === undefined) return false;
  const url = req.url ?? '';
  const query = url.indexOf('?');
  if ((query === -1 ? url : url.slice(0, query)) !== metadataPathOf(document.resource)) return false;

  res.setHeader('Cache-Control', 'no-store');
  if (!sameOrigin(document.resource, origin)) {
    res.statusCode = Codes.E_HTTP_NO_ROUTE.status;
    res.setHeader('Content-Length', 0);
    res.end();
    return true;
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.statusCode = Codes.E_HTTP_METHOD_NOT_ALLOWED.status;
    res.setHeader('Allow', 'GET, HEAD');
    res.setHeader('Content-Length', 0);
    res.end();
    return true;
  }
  const body = JSON.stringify(document);
  res.statusCode = 200;
  res.setHeader('Content-Type', 'application/json');
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(req.method === 'HEAD' ? undefined : body);
  return true;
}
