/**
 * `McpEndpoint:Cors:AllowedOrigins` for `/mcp` only: `*` serves every origin,
 * a list exactly those, an empty list none. A request without an `Origin`
 * header is not a browser's cross-origin request and passes. A browser
 * request from an origin not served is refused 403 before anything else
 * runs (the first stage of the pipeline).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

export type OriginDecision = { kind: 'no-origin' } | { kind: 'allowed'; origin: string; any: boolean } | { kind: 'refused' };

export function decideOrigin(req: IncomingMessage, allowed: readonly string[]): OriginDecision {
  const origin = req.headers.origin;
  if (origin === undefined) return { kind: 'no-origin' };
  if (allowed.includes('*')) return { kind: 'allowed', origin, any: true };
  return allowed.includes(origin) ? { kind: 'allowed', origin, any: false } : { kind: 'refused' };
}

/** Response headers for an allowed browser request. */
export function applyCors(res: ServerResponse, decision: OriginDecision): void {
  if (decision.kind !== 'allowed') return;
  res.setHeader('Access-Control-Allow-Origin', decision.any ? '*' : decision.origin);
  if (!decision.any) res.setHeader('Vary', 'Origin');
  res.setHeader('Access-Control-Expose-Headers', 'Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate');
}

/** The preflight answer: what a browser client of Streamable HTTP sends. */
export function answerPreflight(res: ServerResponse, decision: OriginDecision): void {
  applyCors(res, decision);
  res.statusCode = 204;
  res.setHeader('Access-Control-Allow-Methods', 'POST, GET, DELETE');
  res.setHeader('Access-Control-Allow-Headers', 'Authorization, Content-Type, Accept, Mcp-Protocol-Version, Mcp-Session-Id, Last-Event-Id');
  res.setHeader('Access-Control-Max-Age', '600');
  res.end();
}
