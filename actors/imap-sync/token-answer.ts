/**
 * What the token endpoint's answer to a refresh-token grant means, in the
 * one place that decides it (RFC 6749 §5.1, §5.2). Three kinds of failure,
 * each with its own code and operator sentence (runtime/errors.ts) and its
 * own effect on retries (docs/sync.md, "The token endpoint's answers"):
 *
 * - refused credential — the grant (`invalid_grant`) or the client
 *   (`invalid_client`, `unauthorized_client`, a 401) was refused: asking
 *   again with the same refresh token or secret cannot succeed, so the
 *   account stops asking until a new refresh token is stored or the
 *   configuration changes (a restart);
 * - misconfiguration — the address answers as no token endpoint does (404,
 *   405, 403, a redirect, a 200 without an access token, not JSON, a token
 *   type other than Bearer) or names our request as wrong
 *   (`unsupported_grant_type`, `invalid_scope`, `invalid_request`): parked
 *   the same way;
 * - outage — no answer (refused connection, reset, timeout), a 5xx, a 408
 *   or a 429: retried with the scheduler's backoff, and not before a
 *   `Retry-After` the endpoint gave.
 *
 * Pure. Nothing of the answer's body other than the RFC's own error codes is
 * kept: `error_description` and unknown codes may quote the request.
 */
import { AppError } from '../../runtime/errors.ts';

export type TokenAnswer = {
  status: number;
  /** The parsed JSON body; `undefined` when it was not JSON. */
  body: unknown;
  /** The `Retry-After` header as sent, if any. */
  retryAfter?: string | undefined;
};

export type TokenGranted = { kind: 'granted'; accessToken: string; refreshToken: string | null; expiresIn: unknown };
export type TokenFailure = {
  kind: 'refused' | 'misconfigured' | 'outage';
  code: 'E_OAUTH_REFRESH_REFUSED' | 'E_OAUTH_CLIENT_REFUSED' | 'E_OAUTH_MISCONFIGURED' | 'E_OAUTH_UNAVAILABLE';
  /** A constant word for the log: an HTTP status, an RFC 6749 error code, or what was missing. */
  cause: string;
  /** For an outage: how long the endpoint asked us to wait (capped), if it said. */
  retryAfterMs: number | null;
};
export type TokenVerdict = TokenGranted | TokenFailure;

/** The longest `Retry-After` honoured: a provider's misprint must not park an account for days. */
export const MAX_RETRY_AFTER_MS = 3_600_000;

/** RFC 6749 §5.2's error codes (and RFC 8707's `invalid_target`): the only words of a body ever kept. */
const RFC_ERRORS = new Set([
  'invalid_request',
  'invalid_client',
  'invalid_grant',
  'unauthorized_client',
  'unsupported_grant_type',
  'invalid_scope',
  'invalid_target',
]);

export function classifyTokenAnswer(answer: TokenAnswer, now = Date.now()): TokenVerdict {
  const { status } = answer;
  const body = isObject(answer.body) ? answer.body : null;
  if (status === 408 || status === 429 || status >= 500) return outage(`http-${status}`, retryAfterMs(answer.retryAfter, now));
  if (status >= 200 && status < 300) {
    if (body === null) return misconfigured(answer.body === undefined ? 'not-json' : 'not-an-object');
    if (typeof body.access_token !== 'string' || body.access_token === '') return misconfigured('no-access-token');
    // RFC 6749 §5.1 makes token_type required; an absent one is taken as Bearer (some providers omit it), another type is not ours to use.
    if (body.token_type !== undefined && (typeof body.token_type !== 'string' || body.token_type.toLowerCase() !== 'bearer')) {
      return misconfigured('token-type');
    }
    return {
      kind: 'granted',
      accessToken: body.access_token,
      refreshToken: typeof body.refresh_token === 'string' && body.refresh_token !== '' ? body.refresh_token : null,
      expiresIn: body.expires_in,
    };
  }
  const error = body !== null && typeof body.error === 'string' && RFC_ERRORS.has(body.error) ? body.error : null;
  if (error === 'invalid_grant') return refused('E_OAUTH_REFRESH_REFUSED', error);
  if (error === 'invalid_client' || error === 'unauthorized_client') return refused('E_OAUTH_CLIENT_REFUSED', error);
  if (error !== null) return misconfigured(error);
  // 401 without an RFC code: the client authentication failed (§5.2 answers 401 for invalid_client).
  if (status === 401) return refused('E_OAUTH_CLIENT_REFUSED', 'http-401');
  // 400 with no code we know, 403 (a gateway in front of the endpoint), 404, 405, a redirect (not followed), other 4xx.
  return misconfigured(`http-${status}`);
}

/** What undici threw: no answer at all. TLS codes are the endpoint's certificate not accepted (configuration). */
export function classifyTokenTransportFailure(err: unknown): TokenFailure {
  const code = typeof (err as { code?: unknown })?.code === 'string' ? (err as { code: string }).code : '';
  if (/CERT|^ERR_TLS_|^ERR_SSL_/.test(code)) return misconfigured('tls');
  // A malformed argument to `request` is ours to fix, not the endpoint's: a defect.
  if (code === 'UND_ERR_INVALID_ARG' || err instanceof TypeError) throw err;
  return outage(/^[A-Z0-9_]{1,40}$/.test(code) ? code : 'no-answer', null);
}

export function tokenFailureError(failure: TokenFailure, extra: Record<string, unknown> = {}): AppError {
  return new AppError(failure.code, { details: { cause: failure.cause, ...extra } });
}

/** `Retry-After` in milliseconds from `now` (delta-seconds or an HTTP date), capped; null when absent or unreadable. */
export function retryAfterMs(header: string | undefined, now: number): number | null {
  if (header === undefined) return null;
  const text = header.trim();
  let ms: number;
  if (/^\d+$/.test(text)) ms = Number(text) * 1000;
  else {
    const at = Date.parse(text);
    if (Number.isNaN(at)) return null;
    ms = at - now;
  }
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(0, ms));
}

function refused(code: 'E_OAUTH_REFRESH_REFUSED' | 'E_OAUTH_CLIENT_REFUSED', cause: string): TokenFailure {
  return { kind: 'refused', code, cause, retryAfterMs: null };
}

function misconfigured(cause: string): TokenFailure {
  return { kind: 'misconfigured', code: 'E_OAUTH_MISCONFIGURED', cause, retryAfterMs: null };
}

function outage(cause: string, after: number | null): TokenFailure {
  return { kind: 'outage', code: 'E_OAUTH_UNAVAILABLE', cause, retryAfterMs: after };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
