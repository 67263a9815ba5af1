/**
 * The request pipeline of an HTTP surface, in the spec's order: origin →
 * client certificate → authenticate → limit → authorize → route. Each stage
 * either lets the request on or answers it; nothing after a refusal runs.
 *
 * This release serves the unauthenticated posture: an empty
 * `Authentication` list admits everyone with every permission (startup
 * warns). A configured credential list cannot be checked by this build, so
 * every request is refused with the empty 401 and challenge of the spec
 * rather than served openly — a credential an operator asked for is never
 * silently ignored. Client certificates need a TLS transport, which this
 * build does not serve; rate limits are accepted as configured and applied
 * with the credentials that partition them.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

export const REALM = 'mailcairn';

/** Who a request is, and what it may do ('all' = every permission of the surface). */
export type Admission = { principal: { kind: 'anonymous' }; permissions: 'all' | ReadonlySet<string> };

export type Authenticator = (req: IncomingMessage) => Admission | null;

export function authenticator(entries: readonly unknown[]): Authenticator {
  if (entries.length === 0) return () => ({ principal: { kind: 'anonymous' }, permissions: 'all' });
  return () => null;
}

export function permits(admission: Admission, permission: string): boolean {
  return admission.permissions === 'all' || admission.permissions.has(permission);
}

/** The spec's refusal of a credential: empty body and the Bearer challenge. */
export function answerUnauthenticated(res: ServerResponse): void {
  res.statusCode = 401;
  res.setHeader('WWW-Authenticate', `Bearer realm="${REALM}"`);
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Content-Length', 0);
  res.end();
}

/** An answer with no body and nothing in it, for refusals that name nothing. */
export function answerEmpty(res: ServerResponse, status: number, headers: Record<string, string> = {}): void {
  res.statusCode = status;
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Content-Length', 0);
  res.end();
}
