/**
 * The `WWW-Authenticate` challenges of the Bearer scheme (docs/security.md
 * "What a refusal looks like": realm `mailcairn`, every parameter value
 * quoted):
 * - 401, every refusal alike: `Bearer realm="mailcairn"`, plus
 *   `resource_metadata="<absolute https URL>"` where a metadata document is
 *   published (some entry carries OAuth; API keys alone publish nothing);
 * - 403 for a missing scope: the realm, `error="insufficient_scope"`,
 *   `scope="<the required scopes, space-separated>"` and `resource_metadata`;
 * - 403 for a subject no entry authorizes: no challenge, empty body.
 * The metadata address comes from `Resource`, never from the request.
 *
 * Importable from the HTTP pipeline and `http/auth/**`.
 */
import type { TokenJudgement } from './access-token.ts';

export const REALM = 'mailcairn';

/** A quoted-string (RFC 9110 section 5.6.4). */
function quoted(value: string): string {
  return `"${value.replace(/["\\]/g, '\\$&')}"`;
}

/** The 401 challenge; `metadataUrl` from `metadataUrlOf(entries)`. */
export function unauthorizedChallenge(metadataUrl: string | undefined): string {
  return `Bearer realm=${quoted(REALM)}${metadataUrl !== undefined ? `, resource_metadata=${quoted(metadataUrl)}` : ''}`;
}

/** The 403 challenge of a token lacking required scopes. */
export function insufficientScopeChallenge(scopes: readonly string[], metadataUrl: string | undefined): string {
  return [
    `Bearer realm=${quoted(REALM)}`,
    `error=${quoted('insufficient_scope')}`,
    `scope=${quoted(scopes.join(' '))}`,
    ...(metadataUrl !== undefined ? [`resource_metadata=${quoted(metadataUrl)}`] : []),
  ].join(', ');
}

type Response = { statusCode: number; setHeader(name: string, value: string | number): unknown; end(): unknown };
export type TokenRefusal = Exclude<TokenJudgement, { kind: 'admitted' }>;

/** Writes the empty answer for a refused token: its status, the challenge it takes, no body. */
export function answerTokenRefusal(res: Response, refusal: TokenRefusal, metadataUrl: string | undefined): void {
  res.statusCode = refusal.status;
  if (refusal.kind === 'refused') res.setHeader('WWW-Authenticate', unauthorizedChallenge(metadataUrl));
  else if (refusal.kind === 'insufficient-scope') res.setHeader('WWW-Authenticate', insufficientScopeChallenge(refusal.scopes, metadataUrl));
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Content-Length', 0);
  res.end();
}
