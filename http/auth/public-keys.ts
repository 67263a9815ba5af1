/**
 * The public keys of key-pair clients (docs/security.md "Key pair
 * (signed client assertion)"): what PEM material is accepted, which signature
 * algorithms each accepted key admits, and the startup check of every
 * configured `PublicKey` entry.
 *
 * Accepted: exactly one PEM block, `PUBLIC KEY` (SubjectPublicKeyInfo) or
 * `RSA PUBLIC KEY` (PKCS#1), and nothing but whitespace around it, holding
 * - an RSA key (rsaEncryption) of at least 2048 bits: RS256/384/512 and
 *   PS256/384/512;
 * - an EC key on P-256, P-384 or P-521, recognized by the curve's identifier
 *   (so secp256k1 or a Brainpool curve of equal size is refused): ES256,
 *   ES384, ES512 respectively, one algorithm per curve.
 * Refused: anything that is not such a block (a certificate, a JWK, an SSH
 * key), any material carrying a private key (even beside a public one), RSA
 * below 2048 bits, other curves, and every other key kind (Ed25519, Ed448,
 * X25519, DSA, DH...), which the asymmetric allow-list does not cover. An
 * RSASSA-PSS-only key (id-RSASSA-PSS) is refused too: the key import this
 * build relies on cannot carry one on Node 20, and the same modulus written
 * as an ordinary RSA key serves PS256/384/512.
 *
 * Nothing here logs or repeats material; messages name the kind of problem.
 * Importable from http/.
 */
import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { type Problem, problem } from '../../config/problem.ts';
import { AppError } from '../../runtime/errors.ts';
import { type AuthSurface, type KeyEntry, type ReadMaterial, hasExpired } from './api-key.ts';

export type PublicKeyEntry = KeyEntry;

/** The asymmetric allow-list (docs/security.md "Key pair (signed client assertion)"). */
export const ASSERTION_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512'] as const;
export type AssertionAlgorithm = (typeof ASSERTION_ALGORITHMS)[number];

export const MIN_RSA_BITS = 2048;

/** OpenSSL's names of the permitted curves (derived from the curve OID), with the one algorithm each admits. */
const CURVES: Readonly<Record<string, AssertionAlgorithm>> = { prime256v1: 'ES256', secp384r1: 'ES384', secp521r1: 'ES512' };
const RSA_ALGORITHMS: readonly AssertionAlgorithm[] = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'];

export type PublicKeyRefusal = 'not-public-key' | 'private-key' | 'rsa-too-small' | 'curve' | 'key-type';

export type PublicKeyInspection =
  | { readonly ok: true; readonly key: KeyObject; readonly algorithms: readonly AssertionAlgorithm[] }
  | { readonly ok: false; readonly refusal: PublicKeyRefusal; readonly message: string };

const ANY_PRIVATE_LABEL = /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/;
const ONE_BLOCK = /^-----BEGIN ((?:RSA )?PUBLIC KEY)-----\r?\n[A-Za-z0-9+/=\r\n]+-----END \1-----$/;

function refuse(refusal: PublicKeyRefusal, message: string): PublicKeyInspection {
  return { ok: false, refusal, message };
}

function holdsPrivateKey(pem: string): boolean {
  if (ANY_PRIVATE_LABEL.test(pem)) return true;
  try {
    createPrivateKey({ key: pem, format: 'pem' });
    return true;
  } catch {
    return false;
  }
}

/** The algorithms a loaded public key admits; empty for a key outside the allow-list. */
export function algorithmsFor(key: KeyObject): readonly AssertionAlgorithm[] {
  if (key.type !== 'public') return [];
  const details = key.asymmetricKeyDetails ?? {};
  if (key.asymmetricKeyType === 'rsa') return (details.modulusLength ?? 0) >= MIN_RSA_BITS ? RSA_ALGORITHMS : [];
  if (key.asymmetricKeyType === 'ec') {
    const algorithm = details.namedCurve === undefined ? undefined : CURVES[details.namedCurve];
    return algorithm === undefined ? [] : [algorithm];
  }
  return [];
}

/** Judge PEM material as a key-pair client's public key. Never throws. */
export function inspectPublicKey(pem: string): PublicKeyInspection {
  if (holdsPrivateKey(pem)) return refuse('private-key', 'contains a private key; configure only the public half (the client keeps the private key)');
  const block = pem.trim();
  if (!ONE_BLOCK.test(block)) {
    return refuse('not-public-key', 'is not a PEM public key (one -----BEGIN PUBLIC KEY----- block and nothing else; not a certificate)');
  }
  let key: KeyObject;
  try {
    key = createPublicKey({ key: block, format: 'pem' });
  } catch {
    return refuse('not-public-key', 'is not a PEM public key (the block does not parse)');
  }
  const details = key.asymmetricKeyDetails ?? {};
  switch (key.asymmetricKeyType) {
    case 'rsa': {
      const bits = details.modulusLength ?? 0;
      if (bits < MIN_RSA_BITS) return refuse('rsa-too-small', `is an RSA key of ${bits} bits; at least ${MIN_RSA_BITS} are required`);
      break;
    }
    case 'ec':
      if (details.namedCurve === undefined || CURVES[details.namedCurve] === undefined) {
        return refuse('curve', `is an elliptic-curve key on ${details.namedCurve ?? 'an unnamed curve'}; only P-256, P-384 and P-521 are accepted`);
      }
      break;
    case 'rsa-pss':
      return refuse('key-type', 'is an RSASSA-PSS-only RSA key; provide the same key as an ordinary RSA public key (it serves PS256/384/512 too)');
    default:
      return refuse(
        'key-type',
        `is a key of kind ${key.asymmetricKeyType ?? 'unknown'}, which no permitted algorithm covers (RSA at least ${MIN_RSA_BITS} bits, or EC on P-256, P-384, P-521)`,
      );
  }
  return { ok: true, key, algorithms: algorithmsFor(key) };
}

/**
 * The public key in `pem`.
 * @throws AppError E_CONFIG_INVALID whose message says what kind of material was refused (never the material).
 */
export function loadPublicKey(pem: string): KeyObject {
  const inspection = inspectPublicKey(pem);
  if (!inspection.ok) throw new AppError('E_CONFIG_INVALID', { message: `the public key ${inspection.message}`, details: { refusal: inspection.refusal } });
  return inspection.key;
}

/**
 * Startup refusals of the `PublicKey` entries of one surface, by position
 * (`<surface>:Authentication:N:PublicKey:SecretReference`): unreadable
 * material, and every refusal of `inspectPublicKey`. Expired entries are not
 * read: an expired entry does not fail startup.
 */
export function publicKeyStartupProblems(
  surface: AuthSurface,
  entries: readonly (PublicKeyEntry | undefined)[],
  read: ReadMaterial,
  now: number = Date.now(),
): Problem[] {
  const problems: Problem[] = [];
  for (const [index, entry] of entries.entries()) {
    if (entry === undefined || hasExpired(entry, now)) continue;
    const at = [surface, 'Authentication', index, 'PublicKey', 'SecretReference'];
    let material: string;
    try {
      material = read(entry.SecretReference);
    } catch (err) {
      const why = err instanceof AppError && err.code === 'E_CONFIG_SECRET_UNREADABLE' ? `: ${err.message}` : '';
      problems.push(problem(at, `could not be read at startup${why}`));
      continue;
    }
    const inspection = inspectPublicKey(material);
    if (!inspection.ok) problems.push(problem(at, inspection.message));
  }
  return problems;
}
