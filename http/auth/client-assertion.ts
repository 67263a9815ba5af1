/**
 * Judging a client assertion: the signed JWT a key-pair client presents as
 * its bearer credential (docs/security.md "Key pair (signed client
 * assertion)"; docs/admin-api.md "Credentials": only the audience differs).
 *
 * Rules, in the order they are applied:
 * 1. Shape: a compact JWS whose header and payload are JSON objects; a
 *    `crit` or `b64` header is refused (no extension is understood).
 *    Cause `malformed`.
 * 2. Header `typ` is exactly `service-client-assertion+jwt`. Cause `typ`.
 * 3. Header `alg` is on the asymmetric allow-list (RS/PS/ES 256/384/512);
 *    `none` and every HS* are refused before any key is touched. Cause
 *    `algorithm`.
 * 4. Signature: every unexpired `PublicKey` entry is tried in configuration
 *    order, material re-read each time (rotation without restart), and the
 *    first whose key verifies wins. The algorithm follows from the KEY: a key
 *    is only tried when the token's `alg` is one the key admits (RSA: RS*,
 *    PS*; P-256: ES256 only; P-384: ES384; P-521: ES512), and jose is told to
 *    accept that one algorithm, so the header can never steer an RSA key into
 *    HMAC (the classic confusion) or a curve into another. When no unexpired
 *    key verifies, expired entries are tried only to diagnose: a match is
 *    refused as `retired-key` (logged at warning by name). Otherwise the
 *    cause is `material-unreadable` when an unexpired entry's material could
 *    not be read or no longer holds an acceptable key, `algorithm` when no
 *    readable key admits the token's `alg`, else `bad-signature`.
 * 5. Claims, read only from the verified payload, so a cause never reflects
 *    what an unsigned party wrote: `aud` equals the surface's audience (a
 *    string, or a one-element list; never a list naming both surfaces);
 *    `exp` is required (`missing-exp`), a number strictly after now
 *    (`expired`) and at most five minutes ahead (`expiry-too-far`); an `nbf`,
 *    when written, is a number not more than 60 s ahead; an `iat`, when
 *    written, is a number; `jti` is required, base64url, 22 to 256
 *    characters (a 128-bit random value is 22). Cause `malformed` otherwise.
 * 6. Replay: `claimJti(jti, expiresAt)` stores the identifier until the
 *    assertion expires and answers whether it was fresh; a second
 *    presentation is `replay`. The store is durable (actors/replay-guard), so
 *    a restart does not reopen the window. It is asked last, only for an
 *    assertion that passed everything else, so nobody can fill it without a
 *    configured private key.
 *
 * Decisions the spec leaves open:
 * - Clock skew. The spec's 60 s applies to OAuth tokens. For `exp` none is
 *   granted: the client mints the assertion for this very request, the five
 *   minutes are a hard bound, and the replay store holds a `jti` exactly until
 *   `exp`, so no leeway can let a pruned identifier be served again. A
 *   client whose clock runs behind by more than the lifetime it chose is
 *   refused as `expired`, which the log names. A client clock running ahead
 *   is tolerated up to the five-minute bound; an `nbf` it writes gets the
 *   token skew of 60 s, which cannot widen the window `exp` closes.
 * - `iss` and `sub` are never consulted: the key that verified is the
 *   identity, and the caller's identity is that entry's `Name`. A claim the
 *   client writes cannot stand in for the entry (nor reach a log). The
 *   spec's client stores only the path of its private key, so requiring the
 *   entry's name in the token would ask it for something it does not hold.
 * - A `jti` is refused while it is remembered, i.e. until the assertion it
 *   came with has expired and been pruned, whichever key signed it.
 *
 * Never logs and never returns material, the reference target or the
 * assertion; causes carry entry positions and names only. A rejected
 * `claimJti` (the replay guard down) rejects this function: the caller must
 * fail closed.
 *
 * Importable from http/.
 */
import type { KeyObject } from 'node:crypto';
import { compactVerify } from 'jose';
import { type AuthSurface, type ReadMaterial, hasExpired } from './api-key.ts';
import { nestsWithin } from '../pipeline/json-depth.ts';
import { ASSERTION_MEDIA_TYPE, jwtParts } from './credential-shape.ts';
import { ASSERTION_ALGORITHMS, type AssertionAlgorithm, type PublicKeyEntry, inspectPublicKey } from './public-keys.ts';

export const ASSERTION_AUDIENCES = { McpEndpoint: 'urn:service:mcp', AdminEndpoint: 'urn:service:admin' } as const;
export type AssertionAudience = (typeof ASSERTION_AUDIENCES)[AuthSurface];

/** Agent-surface "Other constants": assertion `exp` at most 5 minutes ahead. */
export const ASSERTION_MAX_AHEAD_MS = 5 * 60_000;
/** The token clock skew, granted to an assertion's optional `nbf` only. */
export const ASSERTION_NBF_SKEW_MS = 60_000;

/** Stores `jti` until `expiresAt` (epoch ms); true when it had not been served before. */
export type ClaimJti = (jti: string, expiresAt: number) => Promise<boolean>;

export type AssertionCause =
  | 'malformed'
  | 'typ'
  | 'algorithm'
  | 'bad-signature'
  | 'material-unreadable'
  | 'retired-key'
  | 'audience'
  | 'missing-exp'
  | 'expired'
  | 'expiry-too-far'
  | 'replay';

/** An unexpired entry whose material could not be read or no longer holds an acceptable key (log at error). */
export type UnreadableKey = { readonly entryIndex: number; readonly name: string };

export type AssertionJudgement =
  | { readonly kind: 'admitted'; readonly entryIndex: number; readonly name: string; readonly unreadable: readonly UnreadableKey[] }
  | {
      readonly kind: 'refused';
      readonly cause: AssertionCause;
      /** The entry whose key verified, for causes found after the signature (and `retired-key`). */
      readonly entryIndex?: number;
      readonly name?: string;
      readonly unreadable: readonly UnreadableKey[];
    };

const JTI = /^[A-Za-z0-9_-]{22,256}$/;

function isAllowedAlgorithm(alg: unknown): alg is AssertionAlgorithm {
  return typeof alg === 'string' && (ASSERTION_ALGORITHMS as readonly string[]).includes(alg);
}

function isNumericDate(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

async function verifies(jwt: string, key: KeyObject, alg: AssertionAlgorithm): Promise<Uint8Array | null> {
  try {
    const { payload } = await compactVerify(jwt, key, { algorithms: [alg] });
    return payload;
  } catch {
    return null;
  }
}

/**
 * Inspections by material text: the file is still read at every request (so
 * a rotation takes effect at once), but parsing the same PEM again cost
 * ~1.7 ms an assertion (bench `auth-overhead`). Bounded: a handful of keys.
 */
const inspections = new Map<string, ReturnType<typeof inspectPublicKey>>();
function inspected(material: string): ReturnType<typeof inspectPublicKey> {
  let found = inspections.get(material);
  if (!found) {
    if (inspections.size >= 64) inspections.clear();
    found = inspectPublicKey(material);
    inspections.set(material, found);
  }
  return found;
}

type KeyAttempt = { kind: 'verified'; payload: Uint8Array } | { kind: 'unreadable' } | { kind: 'incompatible' } | { kind: 'failed' };

async function attempt(jwt: string, entry: PublicKeyEntry, alg: AssertionAlgorithm, read: ReadMaterial): Promise<KeyAttempt> {
  let material: string;
  try {
    material = read(entry.SecretReference);
  } catch {
    return { kind: 'unreadable' };
  }
  const inspection = inspected(material);
  if (!inspection.ok) return { kind: 'unreadable' };
  if (!inspection.algorithms.includes(alg)) return { kind: 'incompatible' };
  const payload = await verifies(jwt, inspection.key, alg);
  return payload === null ? { kind: 'failed' } : { kind: 'verified', payload };
}

function parsePayload(bytes: Uint8Array): Record<string, unknown> | null {
  if (!nestsWithin(bytes)) return null;
  try {
    const value: unknown = JSON.parse(Buffer.from(bytes).toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

function audienceMatches(aud: unknown, audience: AssertionAudience): boolean {
  if (aud === audience) return true;
  return Array.isArray(aud) && aud.length === 1 && aud[0] === audience;
}

type ClaimCheck = { ok: true; jti: string; expiresAt: number } | { ok: false; cause: AssertionCause };

/** Rule 5 over a verified payload. */
function checkClaims(claims: Record<string, unknown>, audience: AssertionAudience, now: number): ClaimCheck {
  if (!audienceMatches(claims.aud, audience)) return { ok: false, cause: 'audience' };
  const exp = claims.exp;
  if (exp === undefined) return { ok: false, cause: 'missing-exp' };
  if (!isNumericDate(exp)) return { ok: false, cause: 'malformed' };
  const expiresAt = Math.ceil(exp * 1000);
  if (expiresAt <= now) return { ok: false, cause: 'expired' };
  if (expiresAt - now > ASSERTION_MAX_AHEAD_MS) return { ok: false, cause: 'expiry-too-far' };
  if (claims.nbf !== undefined && (!isNumericDate(claims.nbf) || claims.nbf * 1000 > now + ASSERTION_NBF_SKEW_MS)) return { ok: false, cause: 'malformed' };
  if (claims.iat !== undefined && !isNumericDate(claims.iat)) return { ok: false, cause: 'malformed' };
  const jti = claims.jti;
  if (typeof jti !== 'string' || !JTI.test(jti)) return { ok: false, cause: 'malformed' };
  return { ok: true, jti, expiresAt };
}

/**
 * Judge a presented client assertion for the surface whose audience is
 * `audience`. `entries` may hold gaps: pass
 * `Authentication.map((e) => e.PublicKey)` and `entryIndex` is the entry's
 * position in the `Authentication` list. `now` is epoch ms.
 *
 * @example await judgeAssertion(bearer, auth.map((e) => e.PublicKey), ASSERTION_AUDIENCES.McpEndpoint, Date.now(), (ref) => readSecret(ref), replayClaimer(guard))
 */
export async function judgeAssertion(
  jwt: string,
  entries: readonly (PublicKeyEntry | undefined)[],
  audience: AssertionAudience,
  now: number,
  read: ReadMaterial,
  claimJti: ClaimJti,
): Promise<AssertionJudgement> {
  const unreadable: UnreadableKey[] = [];
  const refused = (cause: AssertionCause, entry?: UnreadableKey): AssertionJudgement => ({ kind: 'refused', cause, ...(entry ?? {}), unreadable });

  const parts = jwtParts(jwt);
  if (parts === null || 'crit' in parts.header || 'b64' in parts.header) return refused('malformed');
  if (parts.header.typ !== ASSERTION_MEDIA_TYPE) return refused('typ');
  const alg = parts.header.alg;
  if (!isAllowedAlgorithm(alg)) return refused('algorithm');

  let verified: { entryIndex: number; name: string; payload: Uint8Array } | null = null;
  let readable = 0;
  let compatible = 0;
  for (const [entryIndex, entry] of entries.entries()) {
    if (entry === undefined || hasExpired(entry, now)) continue;
    const result = await attempt(jwt, entry, alg, read);
    if (result.kind === 'unreadable') {
      unreadable.push({ entryIndex, name: entry.Name });
      continue;
    }
    readable += 1;
    if (result.kind === 'incompatible') continue;
    compatible += 1;
    if (result.kind === 'verified') {
      verified = { entryIndex, name: entry.Name, payload: result.payload };
      break;
    }
  }

  if (verified === null) {
    for (const [entryIndex, entry] of entries.entries()) {
      if (entry === undefined || !hasExpired(entry, now)) continue;
      // Diagnosis only: a retired key verifying admits nothing, and its vanished material is no fault.
      if ((await attempt(jwt, entry, alg, read)).kind === 'verified') return refused('retired-key', { entryIndex, name: entry.Name });
    }
    if (unreadable.length > 0) return refused('material-unreadable');
    return refused(readable > 0 && compatible === 0 ? 'algorithm' : 'bad-signature');
  }

  const who = { entryIndex: verified.entryIndex, name: verified.name };
  const claims = parsePayload(verified.payload);
  if (claims === null) return refused('malformed', who);
  const check = checkClaims(claims, audience, now);
  if (!check.ok) return refused(check.cause, who);
  if (!(await claimJti(check.jti, check.expiresAt))) return refused('replay', who);
  return { kind: 'admitted', ...who, unreadable };
}
