/**
 * API keys (docs/security.md "API key"; the administrative surface also takes
 * `X-API-Key`: docs/admin-api.md "Credentials"): extracting the presented key
 * from a request, judging it against the configured entries, and the startup
 * check of the key material.
 *
 * Judging takes EVERY configured key on every request (through `read`,
 * which the authentication stage serves from memory, the files checked
 * after the request arrived, so a key rotates without restart from the
 * next request) and compares every one, with
 * no early exit: both sides are reduced to SHA-256 digests, which have one length, and
 * compared with `timingSafeEqual`. An entry whose Lifetime has passed is still
 * read and compared, so that using it can be reported by name, but it admits
 * nothing. Material one entry cannot read is a cause for the caller to log at
 * error; it never keeps another entry from matching.
 *
 * Nothing here logs or throws material, a reference target, or the presented
 * key: callers receive entry positions and names only.
 *
 * Importable from http/.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { type Problem, problem } from '../../config/problem.ts';
import type { CredentialEntry } from '../../config/schema/credential-entry.ts';
import { AppError } from '../../runtime/errors.ts';
import { credentialShape, jwtParts } from './credential-shape.ts';

/** An `ApiKey` or `PublicKey` block as configured: `Lifetime` is epoch ms, or Infinity for `NoLimit`. */
export type KeyEntry = NonNullable<CredentialEntry['ApiKey']>;
export type ApiKeyEntry = KeyEntry;

/** The material behind a secret reference; throws when it cannot be had (`readSecret` at startup, the secret cache per request). */
export type ReadMaterial = (ref: string) => string;

export type AuthSurface = 'McpEndpoint' | 'AdminEndpoint';

/** From the `Lifetime` instant on, the entry authenticates nothing (docs/security.md "Credential entries"). */
export function hasExpired(entry: Pick<KeyEntry, 'Lifetime'>, now: number): boolean {
  return now >= entry.Lifetime;
}

export type ApiKeyCause =
  /** The presented key is an expired entry's (log by name at warning). */
  | { readonly cause: 'expired'; readonly entryIndex: number; readonly name: string }
  /** An unexpired entry's material could not be read (log by name at error). */
  | { readonly cause: 'material-unreadable'; readonly entryIndex: number; readonly name: string }
  /** No entry, expired or not, holds the presented key. */
  | { readonly cause: 'unknown' };

export type ApiKeyJudgement =
  | {
      readonly kind: 'admitted';
      readonly entryIndex: number;
      readonly name: string;
      /** Other entries' unreadable material, still to be logged at error. */
      readonly causes: ReadonlyArray<Extract<ApiKeyCause, { cause: 'material-unreadable' }>>;
    }
  | { readonly kind: 'refused'; readonly causes: readonly ApiKeyCause[] };

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/**
 * Digests of configured material, by the material: a key's digest is
 * computed once, not at every request (with 20 keys that was 20 hashes per
 * request). Which entry is looked up says nothing of the presented key, so
 * the comparison stays constant-time. Rotation adds entries; the map is
 * emptied when it outgrows any real configuration.
 */
const materialDigests = new Map<string, Buffer>();
const MATERIAL_DIGESTS_MAX = 1_024;

function materialDigest(material: string): Buffer {
  let known = materialDigests.get(material);
  if (known === undefined) {
    if (materialDigests.size >= MATERIAL_DIGESTS_MAX) materialDigests.clear();
    known = digest(material);
    materialDigests.set(material, known);
  }
  return known;
}

/**
 * Judge a presented API key against the configured entries.
 *
 * `entries` may hold gaps: pass `Authentication.map((e) => e.ApiKey)` and
 * `entryIndex` is the entry's position in the `Authentication` list. The
 * first unexpired matching entry admits. `now` is epoch ms.
 *
 * @example judgeApiKey(key, config.McpEndpoint.Authentication.map((e) => e.ApiKey), Date.now(), (ref) => readSecret(ref))
 */
export function judgeApiKey(presented: string, entries: readonly (ApiKeyEntry | undefined)[], now: number, read: ReadMaterial): ApiKeyJudgement {
  const presentedDigest = digest(presented);
  let admitted: { entryIndex: number; name: string } | null = null;
  const expiredMatches: ApiKeyCause[] = [];
  const unreadable: Array<Extract<ApiKeyCause, { cause: 'material-unreadable' }>> = [];
  for (const [entryIndex, entry] of entries.entries()) {
    if (entry === undefined) continue;
    const expired = hasExpired(entry, now);
    let material: string | null = null;
    try {
      material = read(entry.SecretReference);
    } catch {
      // An expired entry's material may be gone on purpose: "expired entries left in place are harmless".
      if (!expired) unreadable.push({ cause: 'material-unreadable', entryIndex, name: entry.Name });
    }
    // Compared even after a match or an unreadable neighbour: no early exit, one digest comparison per entry.
    const equal = timingSafeEqual(presentedDigest, materialDigest(material ?? ''));
    if (!equal || material === null || material === '') continue;
    if (expired) expiredMatches.push({ cause: 'expired', entryIndex, name: entry.Name });
    else if (admitted === null) admitted = { entryIndex, name: entry.Name };
  }
  if (admitted !== null) {
    const { entryIndex, name } = admitted;
    return { kind: 'admitted', entryIndex, name, causes: unreadable };
  }
  const causes: ApiKeyCause[] = [...expiredMatches, ...unreadable];
  if (expiredMatches.length === 0) causes.push({ cause: 'unknown' });
  return { kind: 'refused', causes };
}

type RequestHeaders = Pick<IncomingMessage, 'headers' | 'rawHeaders'>;

/** Visible ASCII, no space: what a header can carry intact as one credential. */
const CREDENTIAL = /^[\x21-\x7E]+$/;

function occurrences(req: RequestHeaders, name: string): number {
  let count = 0;
  for (let i = 0; i < req.rawHeaders.length; i += 2) if (req.rawHeaders[i]?.toLowerCase() === name) count += 1;
  return count;
}

/**
 * The credential of `Authorization: Bearer <credential>`, or null for
 * anything else: another scheme, no header, more than one `Authorization`
 * header (Node would keep only the first), anything but exactly one space
 * between scheme and credential, or a credential with a space or a
 * non-ASCII character. The scheme is case-insensitive (RFC 9110 11.1).
 */
export function bearerOf(req: RequestHeaders): string | null {
  const value = req.headers.authorization;
  if (typeof value !== 'string' || occurrences(req, 'authorization') !== 1) return null;
  const match = /^bearer ([^ ]+)$/i.exec(value);
  const credential = match?.[1];
  return credential !== undefined && CREDENTIAL.test(credential) ? credential : null;
}

/**
 * The key of an `X-API-Key` header (administrative surface only), or null:
 * absent, repeated (Node would join the copies with a comma), or not one
 * run of visible ASCII.
 */
export function apiKeyHeaderOf(req: RequestHeaders): string | null {
  const value = req.headers['x-api-key'];
  if (typeof value !== 'string' || occurrences(req, 'x-api-key') !== 1) return null;
  return CREDENTIAL.test(value) ? value : null;
}

function unreadableMessage(err: unknown): string {
  // readSecret's own message names the scheme and why, never the target; anything else is not repeated.
  if (err instanceof AppError && err.code === 'E_CONFIG_SECRET_UNREADABLE') return `could not be read at startup: ${err.message}`;
  return 'could not be read at startup';
}

/**
 * Startup refusals of the API key entries of one surface, by position
 * (`<surface>:Authentication:N:ApiKey:SecretReference`):
 * - the material is a token of one of `issuers` (the surface's configured
 *   authorization servers): it would be judged as an access token, never as
 *   a key. A token-shaped key naming another issuer is an ordinary key;
 * - the material is shaped like a client assertion: it would be judged as
 *   one and could never match as a key;
 * - the material holds a space, control or non-ASCII character: no client
 *   could present it in a header;
 * - the material cannot be read.
 * Expired entries are not read: an expired entry does not fail startup.
 */
export function apiKeyStartupProblems(
  surface: AuthSurface,
  entries: readonly (ApiKeyEntry | undefined)[],
  issuers: readonly string[],
  read: ReadMaterial,
  now: number = Date.now(),
): Problem[] {
  const problems: Problem[] = [];
  entries.forEach((entry, index) => {
    if (entry === undefined || hasExpired(entry, now)) return;
    const at = [surface, 'Authentication', index, 'ApiKey', 'SecretReference'];
    let material: string;
    try {
      material = read(entry.SecretReference);
    } catch (err) {
      problems.push(problem(at, unreadableMessage(err)));
      return;
    }
    const shape = credentialShape(material, issuers);
    if (shape === 'access-token') {
      const iss = jwtParts(material)?.payload.iss;
      problems.push(
        problem(
          at,
          `holds a token of the configured authorization server ${String(iss)}; it would be judged as an access token, so provision an opaque key instead`,
        ),
      );
    } else if (shape === 'assertion') {
      problems.push(
        problem(at, 'holds a client assertion (a JWT typed service-client-assertion+jwt); it would be judged as one, so provision an opaque key instead'),
      );
    } else if (!CREDENTIAL.test(material)) {
      problems.push(problem(at, 'holds a space, control or non-ASCII character, which no client can present in a header; provision visible ASCII only'));
    }
  });
  return problems;
}
