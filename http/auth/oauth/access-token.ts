/**
 * Judging an OAuth access token (docs/security.md "OAuth access tokens"): the
 * service is a protected resource only, so a token is checked, never
 * redeemed, forwarded or stored. In order:
 *   1. the request arrived over TLS (after trusted forwarded headers), else a
 *      silent refusal, the same 401 as no credential;
 *   2. the token is a compact JWS whose `iss` is, character for character,
 *      the `Issuer` of a configured server; that server's key set (and no
 *      other's) is the only one tried;
 *   3. the signature, with the asymmetric allow-list: the header's `alg` must
 *      be on it and must fit the key (jose matches kty and curve, and the
 *      key's own `alg` where published), so `none`, HS* and a public key
 *      used as an HMAC secret never verify; an unknown `kid` re-reads the
 *      set (rate-limited in `key-sets.ts`);
 *   4. `iss`, `aud` (= `Resource`, alone or in an array), `exp` and `nbf`
 *      with 60 s of skew; `exp` and `sub` must be present;
 *   5. `sub` among that server's `AuthorizedSubjects` (else 403, naming
 *      nothing), then every `RequiredScopes` value in `scope` or `scp`
 *      (else 403 insufficient_scope).
 * Every 401 is the same answer whatever failed; `cause` (and `detail`) are
 * for the log only. Nothing here logs, and nothing returned carries the
 * token.
 *
 * Importable from `http/auth/**` and the pipeline that calls it.
 */
import { decodeJwt, decodeProtectedHeader, type JWTPayload, jwtVerify, type JWTVerifyResult } from 'jose';
import { type AuthorizationServer, distinct, type OAuthBlock, type OAuthEntry } from './entries.ts';
import type { KeySet, KeySets } from './key-sets.ts';

/** The asymmetric allow-list (docs/security.md "OAuth access tokens"). */
export const ACCESS_TOKEN_ALGORITHMS: readonly string[] = Object.freeze(['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512']);
/** Token clock skew (docs/security.md "OAuth access tokens": 60 s). */
export const CLOCK_SKEW_SECONDS = 60;
/** Longest token looked at; anything longer is refused unread. */
const MAX_TOKEN_LENGTH = 16 * 1024;
/** A JWT whose `typ` is the client assertion's media type is never admitted as a token (docs/security.md "Credential entries"). */
const ASSERTION_TYPE = 'service-client-assertion+jwt';

export type RefusalCause =
  | 'clear-text'
  | 'malformed'
  | 'issuer'
  | 'algorithm'
  | 'discovery-failed'
  | 'unknown-key'
  | 'signature'
  | 'audience'
  | 'expired'
  | 'not-yet-valid';

export type TokenJudgement =
  | { kind: 'admitted'; entryIndex: number; server: string; issuer: string; subject: string; scopes: string[] }
  /** 401, the same answer for every cause. `server` once the issuer named one; `detail` is a jose error code. */
  | { kind: 'refused'; status: 401; cause: RefusalCause; server?: string; detail?: string }
  /** 403 insufficient_scope; `scopes` are the entry's RequiredScopes, for the challenge. */
  | { kind: 'insufficient-scope'; status: 403; cause: 'scope'; scopes: string[]; entryIndex: number; server: string }
  /** 403 naming nothing: a valid token of a subject no entry authorizes. */
  | { kind: 'other-subject'; status: 403; cause: 'subject'; server: string };

export type JudgeContext = {
  /** Whether the request arrived over TLS, read after trusted forwarded headers. */
  overTls: boolean;
  /** Epoch milliseconds the token's times are judged at. */
  now: number;
  keySets: KeySets;
};

type Candidate = { entryIndex: number; oauth: OAuthBlock; server: AuthorizationServer };

const refused = (cause: RefusalCause, server?: string, detail?: string): TokenJudgement => ({
  kind: 'refused',
  status: 401,
  cause,
  ...(server !== undefined ? { server } : {}),
  ...(detail !== undefined ? { detail } : {}),
});

/** The scopes a token carries: `scope` (space-separated, RFC 9068) and `scp` (a list, or a string as some servers write it). */
function tokenScopes(payload: JWTPayload): string[] {
  const out: string[] = [];
  for (const claim of [payload.scope, payload.scp]) {
    if (typeof claim === 'string') out.push(...claim.split(' '));
    else if (Array.isArray(claim)) for (const value of claim) if (typeof value === 'string') out.push(...value.split(' '));
  }
  return distinct(out.filter((s) => s !== ''));
}

function audienceHas(aud: unknown, resource: string): boolean {
  return aud === resource || (Array.isArray(aud) && aud.includes(resource));
}

/** Where a jose failure goes in the log. */
function causeOf(err: unknown): { cause: RefusalCause; detail: string } {
  const code = typeof (err as { code?: unknown })?.code === 'string' ? (err as { code: string }).code : `unexpected:${(err as Error)?.name ?? typeof err}`;
  switch (code) {
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
    case 'ERR_JOSE_NOT_SUPPORTED':
      return { cause: 'algorithm', detail: code };
    case 'ERR_JWKS_NO_MATCHING_KEY':
      return { cause: 'unknown-key', detail: code };
    case 'ERR_JWKS_INVALID':
      return { cause: 'discovery-failed', detail: code };
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
      return { cause: 'signature', detail: code };
    case 'ERR_JWT_EXPIRED':
      return { cause: 'expired', detail: code };
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED': {
      const { claim, reason } = err as { claim?: string; reason?: string };
      const detail = `${code}:${claim}:${reason}`;
      if (claim === 'iss') return { cause: 'issuer', detail };
      if (claim === 'aud') return { cause: 'audience', detail };
      if (claim === 'nbf' && reason === 'check_failed') return { cause: 'not-yet-valid', detail };
      return { cause: 'malformed', detail };
    }
    default:
      return { cause: 'malformed', detail: code };
  }
}

/**
 * jose leaves several keys matching one header (no `kid`, two keys of the
 * kind) to the caller: each is tried, and only a signature mismatch moves on.
 */
async function verify(token: string, keys: KeySet, options: Parameters<typeof jwtVerify>[2]): Promise<JWTVerifyResult> {
  try {
    return await jwtVerify(token, keys, options);
  } catch (err) {
    if ((err as { code?: unknown }).code !== 'ERR_JWKS_MULTIPLE_MATCHING_KEYS') throw err;
    let last: unknown = err;
    for await (const key of err as AsyncIterable<Awaited<ReturnType<KeySet>>>) {
      try {
        return await jwtVerify(token, key, options);
      } catch (inner) {
        last = inner;
        if ((inner as { code?: unknown }).code !== 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED') throw inner;
      }
    }
    throw last;
  }
}

export async function judgeAccessToken(token: string, entries: readonly OAuthEntry[], context: JudgeContext): Promise<TokenJudgement> {
  // Before anything is read: a token that crossed the network in clear text is
  // refused whatever it holds (and whatever it holds is not worth a lookup).
  if (!context.overTls) return refused('clear-text');
  if (token.length > MAX_TOKEN_LENGTH || !/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(token)) return refused('malformed');

  let header: ReturnType<typeof decodeProtectedHeader>;
  let claims: JWTPayload;
  try {
    header = decodeProtectedHeader(token);
    claims = decodeJwt(token);
  } catch (err) {
    return refused('malformed', undefined, causeOf(err).detail);
  }
  if (typeof header.typ === 'string' && header.typ.toLowerCase().replace(/^application\//, '') === ASSERTION_TYPE) return refused('malformed');

  // The unverified `iss` only chooses whose keys to try; it is verified with them.
  const iss = claims.iss;
  const candidates: Candidate[] = [];
  entries.forEach((entry, entryIndex) => {
    const server = entry.OAuth?.AuthorizationServers.find((s) => s.Issuer === iss);
    if (entry.OAuth !== undefined && server !== undefined) candidates.push({ entryIndex, oauth: entry.OAuth, server });
  });
  const first = candidates[0];
  if (typeof iss !== 'string' || first === undefined) return refused('issuer');
  const serverName = first.server.Name;

  // Checked before any key is fetched, so a forged header costs no request.
  if (typeof header.alg !== 'string' || !ACCESS_TOKEN_ALGORITHMS.includes(header.alg)) return refused('algorithm', serverName);

  const set = await context.keySets.keys(first.server);
  if (set.kind === 'failed') return refused('discovery-failed', serverName);

  let current = set.keys;
  const keys: KeySet = Object.assign(
    async (...args: Parameters<KeySet>) => {
      try {
        return await current(...args);
      } catch (err) {
        if ((err as { code?: unknown }).code !== 'ERR_JWKS_NO_MATCHING_KEY') throw err;
        const fresh = await context.keySets.refresh(first.server);
        if (fresh?.kind !== 'found') throw err;
        current = fresh.keys;
        return await current(...args);
      }
    },
    { jwks: () => current.jwks() },
  );

  let payload: JWTPayload;
  try {
    ({ payload } = await verify(token, keys, {
      algorithms: [...ACCESS_TOKEN_ALGORITHMS],
      issuer: iss,
      audience: distinct(candidates.map((c) => c.oauth.Resource)),
      clockTolerance: CLOCK_SKEW_SECONDS,
      currentDate: new Date(context.now),
      requiredClaims: ['exp', 'sub'],
    }));
  } catch (err) {
    const { cause, detail } = causeOf(err);
    return refused(cause, serverName, detail);
  }

  if (typeof payload.sub !== 'string') return refused('malformed', serverName, 'sub');
  const subject = payload.sub;
  const scopes = tokenScopes(payload);
  const granted = new Set(scopes);
  let short: Candidate | undefined;
  for (const candidate of candidates) {
    if (!audienceHas(payload.aud, candidate.oauth.Resource)) continue;
    // Subject and scope are both required; neither stands in for the other.
    if (!candidate.server.AuthorizedSubjects.includes(subject)) continue;
    if (candidate.oauth.RequiredScopes.every((s) => granted.has(s))) {
      return { kind: 'admitted', entryIndex: candidate.entryIndex, server: candidate.server.Name, issuer: iss, subject, scopes };
    }
    short ??= candidate;
  }
  if (short !== undefined) {
    return {
      kind: 'insufficient-scope',
      status: 403,
      cause: 'scope',
      scopes: [...short.oauth.RequiredScopes],
      entryIndex: short.entryIndex,
      server: short.server.Name,
    };
  }
  return { kind: 'other-subject', status: 403, cause: 'subject', server: serverName };
}
