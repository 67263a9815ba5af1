/**
 * Telling presented bearer credentials apart (docs/security.md "Credential
 * entries"): a client assertion is a JWT whose header `typ` is
 * the assertion media type; an access token is a JWT naming its issuer (`iss`
 * in the payload); anything else is an API key.
 *
 * "JWT" here means the JWS compact serialization: three base64url segments,
 * a header that is a JSON object with a string `alg`, and a payload that is a
 * JSON object. The signature segment may be empty (an `alg: none` token is
 * still shaped like a JWT, and its judge refuses it). Nothing is verified
 * here; the parts are only decoded, never trusted.
 *
 * The shape reads `typ` leniently (RFC 7515 4.1.9: media types compare
 * case-insensitively and may drop `application/`), so a near-miss assertion
 * is judged, and refused, as an assertion with a diagnosable cause rather
 * than drifting to another judge. The assertion judge itself demands the
 * exact value (http/auth/client-assertion.ts).
 *
 * Pure and total: never throws, never logs. Importable from http/.
 */
import { nestsWithin } from '../pipeline/json-depth.ts';

/** The header `typ` a client assertion carries (docs/security.md "Key pair (signed client assertion)"). */
export const ASSERTION_MEDIA_TYPE = 'service-client-assertion+jwt';

export type CredentialShape = 'assertion' | 'access-token' | 'api-key';

export type JwtParts = {
  readonly header: Readonly<Record<string, unknown>>;
  readonly payload: Readonly<Record<string, unknown>>;
};

const SEGMENT = /^[A-Za-z0-9_-]*$/;

function decodeObject(segment: string): Record<string, unknown> | null {
  if (segment === '' || !SEGMENT.test(segment)) return null;
  try {
    const bytes = Buffer.from(segment, 'base64url');
    // Nested past the bound: unreadable, as a body would be (http/pipeline/json-depth.ts).
    if (!nestsWithin(bytes)) return null;
    const value: unknown = JSON.parse(bytes.toString('utf8'));
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
    return value as Record<string, unknown>;
  } catch {
    return null;
  }
}

/**
 * The decoded header and payload of a compact JWS whose payload is a JSON
 * object, or null for anything else. Decoding only: nothing is verified.
 */
export function jwtParts(token: string): JwtParts | null {
  if (typeof token !== 'string') return null;
  const segments = token.split('.');
  if (segments.length !== 3) return null;
  const [headerSegment = '', payloadSegment = '', signature = ''] = segments;
  if (!SEGMENT.test(signature)) return null;
  const header = decodeObject(headerSegment);
  if (header === null || typeof header.alg !== 'string') return null;
  const payload = decodeObject(payloadSegment);
  if (payload === null) return null;
  return { header, payload };
}

/** RFC 7515 4.1.9 comparison of a `typ` value with the assertion media type. */
export function namesAssertionType(typ: unknown): boolean {
  if (typeof typ !== 'string') return false;
  const lower = typ.toLowerCase();
  const bare = lower.startsWith('application/') ? lower.slice('application/'.length) : lower;
  return bare === ASSERTION_MEDIA_TYPE;
}

/**
 * Which judge a presented bearer credential goes to.
 *
 * `issuers`, when given, are the issuers configured on the surface: a JWT
 * naming any other issuer is then an API key: a token-shaped key naming an
 * unconfigured issuer is an ordinary key (docs/security.md "API key").
 * Without it, every JWT naming an issuer is an access token.
 *
 * @example credentialShape(bearer, surfaceIssuers) === 'assertion'
 */
export function credentialShape(token: string, issuers?: Iterable<string>): CredentialShape {
  const parts = jwtParts(token);
  if (parts === null) return 'api-key';
  if (namesAssertionType(parts.header.typ)) return 'assertion';
  const iss = parts.payload.iss;
  if (typeof iss !== 'string' || iss === '') return 'api-key';
  if (issuers === undefined) return 'access-token';
  for (const issuer of issuers) if (issuer === iss) return 'access-token';
  return 'api-key';
}
