/**
 * Requests to an authorization server (docs/cli.md "Signing in with OAuth"):
 * its metadata (GET, JSON) and its token and device endpoints (POST, a form,
 * the public client named by `client_id` in the body). Each has the client's
 * 30 seconds to be answered in full (client rule 4), and a network failure
 * becomes the sentence the administrative client words for it.
 *
 * An authorization server is spoken to over https only, or http on this
 * machine (the rule the deployment applies to `Issuer`): tokens and codes
 * cross these requests.
 */
import { ANSWER_LIMIT_MS, CONNECT_LIMIT_MS, networkFailure, notInTime } from '../admin-client.ts';
import { CliFailure } from '../failure.ts';
import { createTransport } from '../http-exchange.ts';
import { isLoopbackHost } from '../profiles.ts';

export type ServerAnswer = { status: number; json: Record<string, unknown> | null };

/** The address, when it may carry tokens: https, or http to this machine. */
export function requireSafeAddress(address: unknown, what: string, issuer: string): string {
  let url: URL | null = null;
  try {
    url = typeof address === 'string' ? new URL(address) : null;
  } catch {
    url = null;
  }
  if (url === null || url.username !== '' || url.password !== '' || url.hash !== '')
    throw new CliFailure(`The authorization server ${issuer} publishes no usable ${what}; use --mode key, or ask its operator to correct its metadata.`);
  if (url.protocol === 'https:' || (url.protocol === 'http:' && isLoopbackHost(url.hostname))) return url.href;
  throw new CliFailure(
    `The authorization server ${issuer} publishes its ${what} in clear text (${url.origin}); tokens may only cross https (or http on this machine).`,
  );
}

function parse(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** One request and its whole answer, over the transport the administrative client uses (http-exchange.ts), one connection per request. */
async function exchange(address: string, init: { method: 'GET' | 'POST'; body?: string }): Promise<ServerAnswer> {
  const url = new URL(address);
  const transport = createTransport({ connectLimitMs: CONNECT_LIMIT_MS });
  const limit = AbortSignal.timeout(ANSWER_LIMIT_MS);
  try {
    const headers = { accept: 'application/json', ...(init.body !== undefined ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) };
    const answer = await transport.send(init.method, url, headers, init.body, limit);
    return { status: answer.status, json: parse(answer.text) };
  } catch (err) {
    throw limit.aborted ? notInTime(url.origin) : networkFailure(err, url.origin, false);
  } finally {
    transport.close();
  }
}

export function getJson(address: string): Promise<ServerAnswer> {
  return exchange(address, { method: 'GET' });
}

export function postForm(address: string, form: Record<string, string>): Promise<ServerAnswer> {
  return exchange(address, { method: 'POST', body: new URLSearchParams(form).toString() });
}

/** The registered OAuth error code of an answer (RFC 6749 5.2), never its free text, which could carry anything. */
export function errorCode(answer: ServerAnswer): string | undefined {
  const code = answer.json?.error;
  return typeof code === 'string' && /^[\x20-\x21\x23-\x5B\x5D-\x7E]{1,64}$/.test(code) ? code : undefined;
}
