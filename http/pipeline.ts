/**
 * Answers shared by the stages of an HTTP surface's pipeline (origin →
 * client certificate → authenticate → limit → authorize → route; the
 * stages themselves are in http/auth/, http/limits/, http/proxy.ts and each
 * listener). Refusals carry no body and name nothing.
 */
import type { ServerResponse } from 'node:http';
import { unauthorizedChallenge } from './auth/oauth/challenge.ts';

/** The spec's refusal of a credential: empty body and the Bearer challenge. */
export function answerUnauthenticated(res: ServerResponse, metadataUrl?: string): void {
  res.statusCode = 401;
  res.setHeader('WWW-Authenticate', unauthorizedChallenge(metadataUrl));
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

/** The path of a request target, without its query or fragment ('/' when absent). */
export function pathOf(url: string | undefined): string {
  const raw = url ?? '/';
  const end = raw.search(/[?#]/);
  return end === -1 ? raw : raw.slice(0, end);
}
