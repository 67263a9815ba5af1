/**
 * The credential file (docs/cli.md "The credential file"): one JSON document
 * of profiles in the per-user configuration directory, and beside it a random
 * 256-bit key that seals every stored secret with AES-256-GCM. The additional
 * data of each seal names the profile and its endpoint, so a sealed value
 * copied onto another profile or endpoint does not open.
 *
 * On Linux (and every POSIX system) the directory is made 0700 and both
 * files 0600 on every write; on Windows the per-user `%APPDATA%` is what
 * keeps other users out. Writes go to a temporary file renamed over the old
 * one, so an interrupted write leaves the previous file whole.
 *
 * What is stored per profile: the endpoint, the sign-in mode, the sealed API
 * key (key mode) or only the absolute path of the private key (key-pair
 * mode) or the sealed access and refresh tokens with the non-secret renewal
 * values (interactive and device modes, cli/oauth/), a pinned certificate
 * fingerprint, whether clear text was accepted.
 * Members this build does not know are kept as written (a later client's
 * renewal values survive an earlier client's write).
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CliFailure } from './failure.ts';

export const CREDENTIAL_FILE = 'credentials.json';
export const KEY_FILE = 'credentials.key';

// The shapes below are checked by hand, not with zod: the credential file is read by every command,
// and zod's own start-up is about half of what `status` adds to Node's (docs/performance.md "Client start-up").

/** Members this build does not know, kept as written. */
type Unknown = { [member: string]: unknown };

/** What an OAuth sign-in needs to renew its access token; nothing here is secret (client rule 5). */
export type OAuthRenewal = Unknown & {
  issuer: string;
  tokenEndpoint: string;
  clientId: string;
  resource: string;
  scopes: string[];
  /** When the stored access token expires (ISO 8601). */
  accessTokenExpiresAt: string;
};

export type StoredProfile = Unknown & {
  endpoint: string;
  mode: 'key' | 'keypair' | 'interactive' | 'device';
  /** Key mode: the API key, sealed. */
  sealedKey?: string | undefined;
  /** Key-pair mode: where the private key is; the key itself is never copied. */
  privateKey?: string | undefined;
  /** OAuth modes: the access token and the refresh token issued at sign-in, sealed. */
  sealedAccessToken?: string | undefined;
  sealedRefreshToken?: string | undefined;
  oauth?: OAuthRenewal | undefined;
  /** SHA-256 of the certificate accepted with --trust-untrusted-certificate (colon-separated hex, upper case). */
  certificateSha256?: string | undefined;
  /** The operator accepted clear text to a non-loopback http endpoint. */
  clearText?: boolean | undefined;
  signedInAt: string;
};

export type CredentialDocument = Unknown & {
  format: 1;
  /** The profile last switched to (or logged in with); null when none is. */
  current: string | null;
  profiles: Record<string, StoredProfile>;
};

type Check = (value: unknown) => boolean;

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const isText: Check = (value) => typeof value === 'string';
const optional =
  (check: Check): Check =>
  (value) =>
    value === undefined || check(value);
/** An object whose named members pass their checks; other members are allowed and kept. */
const shaped =
  (members: Record<string, Check>): Check =>
  (value) =>
    isObject(value) && Object.entries(members).every(([name, check]) => check(value[name]));

const isOAuthRenewal = shaped({
  issuer: isText,
  tokenEndpoint: isText,
  clientId: isText,
  resource: isText,
  scopes: (value) => Array.isArray(value) && value.every((scope) => typeof scope === 'string'),
  accessTokenExpiresAt: isText,
});

const MODES: ReadonlySet<unknown> = new Set(['key', 'keypair', 'interactive', 'device']);

const isStoredProfile = shaped({
  endpoint: isText,
  mode: (value) => MODES.has(value),
  sealedKey: optional(isText),
  privateKey: optional(isText),
  sealedAccessToken: optional(isText),
  sealedRefreshToken: optional(isText),
  oauth: optional(isOAuthRenewal),
  certificateSha256: optional(isText),
  clearText: optional((value) => typeof value === 'boolean'),
  signedInAt: isText,
});

const isCredentialDocument = shaped({
  format: (value) => value === 1,
  current: (value) => value === null || typeof value === 'string',
  profiles: (value) => isObject(value) && Object.values(value).every(isStoredProfile),
}) as (value: unknown) => value is CredentialDocument;

const posix = process.platform !== 'win32';

export function readCredentialFile(dir: string): CredentialDocument {
  const path = join(dir, CREDENTIAL_FILE);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { format: 1, current: null, profiles: {} };
    throw new CliFailure(`The credential file ${path} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'}).`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (!isCredentialDocument(parsed)) throw new CliFailure(`The credential file ${path} is damaged; move it aside and log in again.`);
  return parsed;
}

function ensureDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // mkdir leaves an existing directory's mode alone: the client's own directory is tightened every time.
  if (posix) chmodSync(dir, 0o700);
}

function writePrivate(path: string, text: string): void {
  const temporary = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    writeFileSync(temporary, text, { mode: 0o600, flag: 'wx' });
    if (posix) chmodSync(temporary, 0o600);
    renameSync(temporary, path);
  } catch (err) {
    rmSync(temporary, { force: true });
    throw new CliFailure(`The credential file ${path} cannot be written (${(err as NodeJS.ErrnoException).code ?? 'error'}).`);
  }
}

export function writeCredentialFile(dir: string, document: CredentialDocument): void {
  ensureDir(dir);
  writePrivate(join(dir, CREDENTIAL_FILE), `${JSON.stringify(document, null, 2)}\n`);
}

/** The sealing key beside the file, made on first need: `wx`, so two clients racing agree on the first one written. */
function sealingKey(dir: string, create: boolean): Buffer {
  const path = join(dir, KEY_FILE);
  const read = (): Buffer | null => {
    try {
      const key = Buffer.from(readFileSync(path, 'utf8').trim(), 'base64');
      if (key.length !== 32) throw new CliFailure(`The key file ${path} is damaged; remove it and ${CREDENTIAL_FILE}, then log in again.`);
      return key;
    } catch (err) {
      if (err instanceof CliFailure) throw err;
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw new CliFailure(`The key file ${path} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'}).`);
    }
  };
  const found = read();
  if (found) return found;
  if (!create) throw new CliFailure(`The key file ${path} is missing, so the stored credentials cannot be opened; log in again.`);
  ensureDir(dir);
  try {
    writeFileSync(path, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
    if (posix) chmodSync(path, 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST')
      throw new CliFailure(`The key file ${path} cannot be written (${(err as NodeJS.ErrnoException).code ?? 'error'}).`);
  }
  return read()!;
}

export type SealBinding = { readonly profile: string; readonly endpoint: string };

function additionalData(binding: SealBinding): Buffer {
  return Buffer.from(`mailcairn credential\0${binding.profile}\0${binding.endpoint}`, 'utf8');
}

/** `v1.<iv>.<ciphertext>.<tag>`, base64url parts. */
export function seal(dir: string, secret: string, binding: SealBinding): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', sealingKey(dir, true), iv);
  cipher.setAAD(additionalData(binding));
  const body = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return ['v1', iv, body, cipher.getAuthTag()].map((part) => (typeof part === 'string' ? part : part.toString('base64url'))).join('.');
}

export function unseal(dir: string, sealed: string, binding: SealBinding): string {
  const parts = sealed.split('.');
  const refused = new CliFailure(
    `The stored credential of profile ${binding.profile} cannot be opened (the key file beside it changed, or the entry was edited); log in again.`,
  );
  if (parts.length !== 4 || parts[0] !== 'v1') throw refused;
  const [iv, body, tag] = parts.slice(1).map((p) => Buffer.from(p, 'base64url')) as [Buffer, Buffer, Buffer];
  // GCM would accept a shortened tag: only the full 16 bytes authenticate.
  if (iv.length !== 12 || tag.length !== 16) throw refused;
  try {
    const decipher = createDecipheriv('aes-256-gcm', sealingKey(dir, false), iv);
    decipher.setAAD(additionalData(binding));
    decipher.setAuthTag(tag);
    return Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8');
  } catch (err) {
    if (err instanceof CliFailure) throw err;
    throw refused;
  }
}
