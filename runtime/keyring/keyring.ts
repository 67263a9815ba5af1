/**
 * The data-encryption key ring (`DataEncryption:KeyRing`): its file format,
 * sealing with AES-256-GCM, and purpose keys derived with HKDF-SHA256.
 *
 * File (JSON): `{"format": "mailcairn-keyring", "version": 1, "activeKeyId":
 * "…", "keys": [{"id": "…", "created": "<ISO 8601>", "key": "<base64 of 32
 * bytes>"}]}`. New values are sealed under the active key; older keys stay to
 * unseal what they sealed.
 *
 * Sealed value: `mc1.<keyId>.<iv>.<ciphertext+tag>` (base64url parts, 96-bit
 * random IV, 128-bit tag). The AES key is HKDF(ring key, purpose), and the
 * additional data binds the format, key id, purpose and the caller's `aad`,
 * so a value moved to another purpose, another key id or another record
 * (when the caller passes the record's identity as `aad`) fails to open.
 *
 * Key material never leaves this module except through `purposeKey`, never
 * appears on the `KeyRing` object (so logging a ring shows ids only), and no
 * error message carries key material, plaintext or file content.
 *
 * Pure apart from randomness. Importable from anywhere through `load.ts`.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { AppError } from '../errors.ts';

export const purposes = ['token-sealing', 'capability-signing'] as const;
export type Purpose = (typeof purposes)[number];

/** What a ring shows: ids only. The keys live in a module-private map. */
export type KeyRing = { readonly activeKeyId: string; readonly keyIds: readonly string[] };

const format = 'mailcairn-keyring';
const formatVersion = 1;
const sealedPrefix = 'mc1';
const keyIdPattern = /^[A-Za-z0-9_-]{1,64}$/;
const base64Key = /^[A-Za-z0-9+/]{43}=$/;
const ivBytes = 12;
const tagBytes = 16;

const material = new WeakMap<KeyRing, Map<string, Buffer>>();
const derived = new WeakMap<KeyRing, Map<string, Buffer>>();

type KeyEntry = { id: string; created: string; key: string };
type KeyRingFile = { format: string; version: number; activeKeyId: string; keys: KeyEntry[] };

export function parseKeyRing(text: string): KeyRing {
  const file = readFile(text);
  const keys = new Map<string, Buffer>();
  for (const entry of file.keys) keys.set(entry.id, Buffer.from(entry.key, 'base64'));
  const ring: KeyRing = Object.freeze({ activeKeyId: file.activeKeyId, keyIds: Object.freeze([...keys.keys()]) });
  material.set(ring, keys);
  derived.set(ring, new Map());
  return ring;
}

/** File text of a new ring holding one fresh active key. */
export function newKeyRing(): string {
  const entry = freshKey();
  return render({ format, version: formatVersion, activeKeyId: entry.id, keys: [entry] });
}

/** File text with a fresh key added and made active; every older key is kept. */
export function rotateKeyRing(text: string): string {
  const file = readFile(text);
  const entry = freshKey();
  return render({ ...file, activeKeyId: entry.id, keys: [...file.keys, entry] });
}

export function seal(ring: KeyRing, purpose: Purpose, plaintext: Uint8Array | string, aad = ''): string {
  const keyId = ring.activeKeyId;
  const iv = randomBytes(ivBytes);
  const cipher = createCipheriv('aes-256-gcm', purposeKeyBytes(ring, purpose, keyId), iv, { authTagLength: tagBytes });
  cipher.setAAD(additionalData(keyId, purpose, aad));
  const body = Buffer.concat([cipher.update(typeof plaintext === 'string' ? Buffer.from(plaintext, 'utf8') : plaintext), cipher.final(), cipher.getAuthTag()]);
  return [sealedPrefix, keyId, iv.toString('base64url'), body.toString('base64url')].join('.');
}

export function unseal(ring: KeyRing, purpose: Purpose, sealed: string, aad = ''): Buffer {
  const parts = sealed.split('.');
  const [prefix, keyId, ivText, bodyText] = parts;
  if (parts.length !== 4 || prefix !== sealedPrefix || keyId === undefined || !keyIdPattern.test(keyId) || ivText === undefined || bodyText === undefined) {
    throw tampered('the sealed value is not in the mc1 format');
  }
  const key = purposeKeyBytes(ring, purpose, keyId);
  const iv = fromBase64url(ivText);
  const body = fromBase64url(bodyText);
  if (iv === undefined || body === undefined || iv.length !== ivBytes || body.length < tagBytes) {
    throw tampered('the sealed value is not in the mc1 format');
  }
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: tagBytes });
    decipher.setAAD(additionalData(keyId, purpose, aad));
    decipher.setAuthTag(body.subarray(body.length - tagBytes));
    return Buffer.concat([decipher.update(body.subarray(0, body.length - tagBytes)), decipher.final()]);
  } catch {
    throw tampered(`the sealed value did not authenticate under key ${keyId} for ${purpose}: it was altered, or sealed for another purpose or record`);
  }
}

/**
 * The 256-bit key of one purpose, for HMAC signing (capabilities): derived
 * from the active key, or from `keyId` when verifying something signed under
 * an older one. Put `keyId` beside what you sign.
 */
export function purposeKey(ring: KeyRing, purpose: Purpose, keyId: string = ring.activeKeyId): { keyId: string; key: Buffer } {
  return { keyId, key: Buffer.from(purposeKeyBytes(ring, purpose, keyId)) };
}

function purposeKeyBytes(ring: KeyRing, purpose: Purpose, keyId: string): Buffer {
  if (!(purposes as readonly string[]).includes(purpose)) {
    throw new AppError('E_KEYRING_INVALID', { message: 'an unknown key-ring purpose was asked for' });
  }
  const cache = derived.get(ring);
  const keys = material.get(ring);
  if (cache === undefined || keys === undefined) {
    throw new AppError('E_KEYRING_INVALID', { message: 'the key ring was not made by parseKeyRing' });
  }
  const cacheKey = `${keyId}\u0000${purpose}`;
  const hit = cache.get(cacheKey);
  if (hit !== undefined) return hit;
  const ikm = keys.get(keyId);
  if (ikm === undefined) {
    throw new AppError('E_KEYRING_UNKNOWN_KEY', {
      message: `the value was sealed or signed under key ${keyId}, which DataEncryption:KeyRing does not hold (was a key removed from the ring?)`,
    });
  }
  const key = Buffer.from(hkdfSync('sha256', ikm, Buffer.from(format, 'utf8'), Buffer.from(`mailcairn/${purpose}/v1`, 'utf8'), 32));
  cache.set(cacheKey, key);
  return key;
}

function additionalData(keyId: string, purpose: Purpose, aad: string): Buffer {
  return Buffer.from([sealedPrefix, keyId, purpose, aad].join('\u0000'), 'utf8');
}

function fromBase64url(text: string): Buffer | undefined {
  return /^[A-Za-z0-9_-]*$/.test(text) ? Buffer.from(text, 'base64url') : undefined;
}

function tampered(message: string): AppError {
  return new AppError('E_KEYRING_TAMPERED', { message });
}

function freshKey(): KeyEntry {
  // The id is random, not a counter: a value sealed under another ring then
  // reads as "unknown key", not as tampering.
  return { id: randomBytes(9).toString('base64url'), created: new Date().toISOString(), key: randomBytes(32).toString('base64') };
}

function render(file: KeyRingFile): string {
  return `${JSON.stringify(file, null, 2)}\n`;
}

// Hand-written checks rather than a schema library: each message names the
// offending member and never echoes a value (a key is a value).
function readFile(text: string): KeyRingFile {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw invalid('is not JSON');
  }
  if (!isRecord(value)) throw invalid('is not a JSON object');
  const extra = Object.keys(value).filter((name) => !['format', 'version', 'activeKeyId', 'keys'].includes(name));
  if (extra.length > 0) throw invalid(`has unknown members (${extra.join(', ')})`);
  if (value.format !== format) throw invalid(`is not a key ring: "format" must be "${format}"`);
  if (value.version !== formatVersion) throw invalid(`has a "version" this build cannot read (it reads ${formatVersion})`);
  if (!Array.isArray(value.keys) || value.keys.length === 0) throw invalid('must hold at least one key in "keys"');
  const keys: KeyEntry[] = value.keys.map((entry: unknown, index: number) => readKey(entry, index));
  const ids = new Set<string>();
  for (const entry of keys) {
    if (ids.has(entry.id)) throw invalid(`holds key id ${entry.id} twice`);
    ids.add(entry.id);
  }
  if (typeof value.activeKeyId !== 'string' || !ids.has(value.activeKeyId)) throw invalid('"activeKeyId" names no key in "keys"');
  return { format, version: formatVersion, activeKeyId: value.activeKeyId, keys };
}

function readKey(entry: unknown, index: number): KeyEntry {
  const where = `keys[${index}]`;
  if (!isRecord(entry)) throw invalid(`${where} is not an object`);
  const extra = Object.keys(entry).filter((name) => !['id', 'created', 'key'].includes(name));
  if (extra.length > 0) throw invalid(`${where} has unknown members (${extra.join(', ')})`);
  if (typeof entry.id !== 'string' || !keyIdPattern.test(entry.id)) throw invalid(`${where}.id must be 1 to 64 letters, digits, "-" or "_"`);
  if (typeof entry.created !== 'string' || Number.isNaN(Date.parse(entry.created))) throw invalid(`${where}.created must be an ISO 8601 instant`);
  if (typeof entry.key !== 'string' || !base64Key.test(entry.key)) throw invalid(`${where}.key must be the base64 of exactly 32 bytes`);
  return { id: entry.id, created: entry.created, key: entry.key };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function invalid(problem: string): AppError {
  return new AppError('E_KEYRING_INVALID', { message: `the key ring in DataEncryption:KeyRing ${problem}` });
}
