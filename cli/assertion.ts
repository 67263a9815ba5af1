/**
 * Key-pair sign-in (docs/cli.md "Signing in"): the profile keeps only
 * the absolute path of the private key; every request carries a fresh
 * client assertion signed with it (http/auth/client-assertion.ts is what the
 * deployment checks): header `typ` `service-client-assertion+jwt` with an
 * asymmetric `alg`, `aud` `urn:service:admin`, `exp` 50 s ahead (within the
 * minute the spec allows, leaving the deployment's five-minute bound far
 * off), `iat`, and a `jti` of 128 random bits. One assertion per request,
 * not per command: the deployment refuses a `jti` it has seen, and a command
 * may send several requests.
 */
import { createPrivateKey, randomBytes, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { SignJWT } from 'jose';
import { CliFailure, usage } from './failure.ts';

export const ASSERTION_TYPE = 'service-client-assertion+jwt';
export const ADMIN_AUDIENCE = 'urn:service:admin';
export const ASSERTION_LIFETIME_S = 50;

export type SigningKey = { readonly key: KeyObject; readonly alg: 'RS256' | 'ES256' | 'ES384' | 'ES512' };

const CURVES = { prime256v1: 'ES256', secp384r1: 'ES384', secp521r1: 'ES512' } as const;

export function requireKeyPath(path: string | undefined): string {
  if (path === undefined || path === '') throw usage('--mode keypair needs --private-key <absolute path of the PEM private key>.');
  if (!isAbsolute(path))
    throw usage(
      'Name the private key by its absolute path (--private-key): the profile stores the path, and a relative one would change meaning with the directory.',
    );
  return path;
}

/** Reads and checks the private key now: unreadable, encrypted or of a kind the deployment does not accept is refused. */
export function loadSigningKey(path: string): SigningKey {
  let pem: string;
  try {
    pem = readFileSync(path, 'utf8');
  } catch (err) {
    throw new CliFailure(`The private key ${path} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'}).`);
  }
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: pem, format: 'pem' });
  } catch {
    throw new CliFailure(`The private key ${path} is not an unencrypted PEM private key; this release reads no passphrase.`);
  }
  const details = key.asymmetricKeyDetails;
  if (key.asymmetricKeyType === 'rsa' && (details?.modulusLength ?? 0) >= 2048) return { key, alg: 'RS256' };
  const curve = details?.namedCurve;
  if (key.asymmetricKeyType === 'ec' && curve !== undefined && Object.hasOwn(CURVES, curve)) return { key, alg: CURVES[curve as keyof typeof CURVES] };
  throw new CliFailure(`The private key ${path} is of a kind the deployment does not accept: use RSA of 2048 bits or more, or EC on P-256, P-384 or P-521.`);
}

export function signAssertion(signing: SigningKey, now: number = Date.now()): Promise<string> {
  const seconds = Math.floor(now / 1000);
  return new SignJWT({ jti: randomBytes(16).toString('base64url') })
    .setProtectedHeader({ alg: signing.alg, typ: ASSERTION_TYPE })
    .setAudience(ADMIN_AUDIENCE)
    .setIssuedAt(seconds)
    .setExpirationTime(seconds + ASSERTION_LIFETIME_S)
    .sign(signing.key);
}
