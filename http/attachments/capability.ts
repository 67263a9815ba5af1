/**
 * Signed capabilities for attachment links (docs/attachment-links.md): a
 * token naming exactly one attachment of one email, with an expiry and an
 * HMAC-SHA256 tag keyed by the key ring's `capability-signing` purpose key
 * of the key id it carries. Whoever holds a valid token may
 * download that attachment until it expires; nothing else is checked at the
 * route, so the token is the authorization and must never be logged.
 *
 * Token (version 1): base64url without padding, in canonical form, of
 *
 *   version        1 byte  (1)
 *   key id         1 byte length, then its ASCII (1–64 characters)
 *   account id     1 byte length, then its UTF-8 (1–255 bytes)
 *   message id     8 bytes, big-endian (`messages.id`, a safe integer)
 *   index          2 bytes, big-endian (position in the attachment list)
 *   expires at     8 bytes, big-endian epoch milliseconds
 *   tag            32 bytes: HMAC-SHA256 over "mailcairn-capability\0" and
 *                  every byte above, keyed by purposeKey(ring,
 *                  'capability-signing', key id)
 *
 * Verification refuses (null, never an exception) a token that is not
 * canonical base64url, is of another version or length, names a key id the
 * ring no longer holds (a rotated-away key), fails its tag (compared in
 * constant time), has expired, or claims an expiry further ahead than the
 * longest lifetime. A token signed under an older key the ring still holds
 * stays valid until it expires.
 *
 * The ring comes from `createLinkKeyRing`: the ring file is held in memory
 * (`runtime/secret-cache.ts`) and parsed and validated once per change of
 * the file, not per link. A rotation needs no restart: a verification sees
 * the ring as of its request's arrival (the file is checked asynchronously,
 * a stat shared by concurrent requests); issuing, which cannot wait, uses
 * the ring as of the last finished check and starts the next one.
 *
 * Importable by the MCP listener and its tools (issue) and the attachment
 * route (verify).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Config } from '../../config/schema.ts';
import { createSecretCache, type SecretCache } from '../../runtime/secret-cache.ts';
import { purposeKey, type KeyRing } from '../../runtime/keyring/keyring.ts';
import { loadKeyRing } from '../../runtime/keyring/load.ts';

/** Ten minutes by default, thirty at most (docs/attachment-links.md). */
export const CAPABILITY_DEFAULT_LIFETIME_MS = 10 * 60_000;
export const CAPABILITY_MAX_LIFETIME_MS = 30 * 60_000;

export type CapabilityTarget = {
  /** `messages.id` (what a storedEmailId is built over). */
  messageId: number;
  /** Position in the message's attachment list, from 0. */
  index: number;
  /** The account the message belongs to. */
  accountId: string;
};

export type CapabilityClaims = CapabilityTarget & {
  /** Epoch milliseconds after which the token is refused. */
  expiresAt: number;
  /** Key ring key the token was signed under. */
  keyId: string;
};

const VERSION = 1;
const TAG_BYTES = 32;
const MAX_INDEX = 0xffff;
const MAX_TOKEN_CHARS = 512;
const DOMAIN = Buffer.from('mailcairn-capability\u0000', 'utf8');
const KEY_ID = /^[A-Za-z0-9_-]{1,64}$/;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

/**
 * A fresh token for one attachment, signed under the ring's active key.
 * @throws RangeError for a lifetime outside (0, 30 min] or a target that cannot be encoded (caller bugs).
 * @example const token = issueCapability(ring, { messageId: 42, index: 0, accountId: 'alice' }, { now: Date.now() });
 */
export function issueCapability(ring: KeyRing, target: CapabilityTarget, options: { now: number; lifetimeMs?: number }): string {
  const lifetimeMs = options.lifetimeMs ?? CAPABILITY_DEFAULT_LIFETIME_MS;
  if (!Number.isSafeInteger(lifetimeMs) || lifetimeMs <= 0 || lifetimeMs > CAPABILITY_MAX_LIFETIME_MS) {
    throw new RangeError(`an attachment link lives more than 0 and at most ${CAPABILITY_MAX_LIFETIME_MS} ms; ${lifetimeMs} was asked for`);
  }
  if (!Number.isSafeInteger(target.messageId) || target.messageId <= 0)
    throw new RangeError('the message id of an attachment link must be a positive safe integer');
  if (!Number.isSafeInteger(target.index) || target.index < 0 || target.index > MAX_INDEX)
    throw new RangeError(`an attachment index must be 0 to ${MAX_INDEX}`);
  const account = Buffer.from(target.accountId, 'utf8');
  if (account.length === 0 || account.length > 255) throw new RangeError('the account id of an attachment link must be 1 to 255 bytes');
  const expiresAt = options.now + lifetimeMs;
  if (!Number.isSafeInteger(expiresAt) || expiresAt <= 0) throw new RangeError('the issue instant must be epoch milliseconds');
  const { keyId, key } = purposeKey(ring, 'capability-signing');
  const keyIdBytes = Buffer.from(keyId, 'ascii');
  const numbers = Buffer.alloc(18);
  numbers.writeBigUInt64BE(BigInt(target.messageId), 0);
  numbers.writeUInt16BE(target.index, 8);
  numbers.writeBigUInt64BE(BigInt(expiresAt), 10);
  const payload = Buffer.concat([Buffer.of(VERSION, keyIdBytes.length), keyIdBytes, Buffer.of(account.length), account, numbers]);
  return Buffer.concat([payload, tagOf(key, payload)]).toString('base64url');
}

/** The claims of a valid token, or null (malformed, unknown key, bad tag, expired). */
export function verifyCapability(ring: KeyRing, token: string, now: number): CapabilityClaims | null {
  if (typeof token !== 'string' || token.length > MAX_TOKEN_CHARS || !BASE64URL.test(token)) return null;
  const bytes = Buffer.from(token, 'base64url');
  // Node's decoder forgives; only the one spelling we issue is accepted, so no two strings name one token.
  if (bytes.toString('base64url') !== token) return null;
  const parsed = parse(bytes);
  if (parsed === null || !ring.keyIds.includes(parsed.claims.keyId)) return null;
  const { key } = purposeKey(ring, 'capability-signing', parsed.claims.keyId);
  const expected = tagOf(key, parsed.payload);
  if (expected.length !== parsed.tag.length || !timingSafeEqual(expected, parsed.tag)) return null;
  const { expiresAt } = parsed.claims;
  if (now >= expiresAt || expiresAt - now > CAPABILITY_MAX_LIFETIME_MS) return null;
  return parsed.claims;
}

/**
 * The link an agent is given: `{PublicBaseAddress}/attachments/{token}`,
 * keeping a path prefix of the base (`https://h/mail/` gives
 * `https://h/mail/attachments/…`). Never built from a request's Host.
 */
export function attachmentLink(publicBaseAddress: string, token: string): string {
  if (!BASE64URL.test(token)) throw new RangeError('an attachment link carries a base64url token');
  const url = new URL(publicBaseAddress);
  url.search = '';
  url.hash = '';
  const prefix = url.pathname.endsWith('/') ? url.pathname : `${url.pathname}/`;
  url.pathname = `${prefix}attachments/${token}`;
  return url.href;
}

type LinkSettings = { DataEncryption: Pick<Config['DataEncryption'], 'KeyRing'>; Deployment: Pick<Config['Deployment'], 'PublicBaseAddress'> };

/** Whether links may be issued at all: a key ring and `Deployment:PublicBaseAddress` are both configured. */
export function canIssueLinks(config: LinkSettings): boolean {
  return config.DataEncryption.KeyRing !== undefined && config.Deployment.PublicBaseAddress !== undefined;
}

/** The key ring links are signed and verified with (`DataEncryption:KeyRing`), from memory. */
export type LinkKeyRing = {
  /**
   * The ring as of the last finished check, with no I/O on this call (a check
   * of the file starts in the background, for the next caller); null when no
   * ring is configured. For issuing links, which cannot wait.
   * @throws AppError E_CONFIG_SECRET_UNREADABLE (the file is gone, or not read yet) or E_KEYRING_* (it does not parse).
   */
  current(): KeyRing | null;
  /** The ring as of this call: waits for a check of the file started at or after it (shared). For verifying. Rejects as `current` throws. */
  fresh(): Promise<KeyRing | null>;
};

/**
 * The ring of `DataEncryption:KeyRing`, its first check started now.
 * A file that does not parse is refused once per change too (every use
 * throws the same error until the file changes).
 * @example const links = createLinkKeyRing(config); const token = issueCapability(links.current()!, target, { now: Date.now() });
 */
export function createLinkKeyRing(
  config: { DataEncryption: Pick<Config['DataEncryption'], 'KeyRing'> },
  options: { env?: NodeJS.ProcessEnv; secrets?: SecretCache } = {},
): LinkKeyRing {
  const ref = config.DataEncryption.KeyRing;
  if (ref === undefined) return { current: () => null, fresh: async () => null };
  const secrets = options.secrets ?? createSecretCache({ env: options.env ?? process.env, setting: 'DataEncryption:KeyRing' });
  secrets.refresh([ref]);
  // The last text and what it gave; the cache hands back the same string while the file is unchanged.
  let parsed: { text: string; ring: KeyRing } | { text: string; error: unknown } | undefined;
  const parse = (): KeyRing => {
    const text = secrets.read(ref);
    if (parsed?.text !== text) {
      try {
        parsed = { text, ring: loadKeyRing(text) };
      } catch (error) {
        parsed = { text, error };
      }
    }
    if ('error' in parsed) throw parsed.error;
    return parsed.ring;
  };
  return {
    current() {
      secrets.refresh([ref]);
      return parse();
    },
    async fresh() {
      await secrets.fresh([ref]);
      return parse();
    },
  };
}

function tagOf(key: Buffer, payload: Buffer): Buffer {
  return createHmac('sha256', key).update(DOMAIN).update(payload).digest();
}

function parse(bytes: Buffer): { payload: Buffer; tag: Buffer; claims: CapabilityClaims } | null {
  let at = 0;
  if (bytes[at++] !== VERSION) return null;
  const keyIdLength = bytes[at++];
  if (keyIdLength === undefined || at + keyIdLength > bytes.length) return null;
  const keyId = bytes.toString('latin1', at, at + keyIdLength);
  at += keyIdLength;
  if (!KEY_ID.test(keyId)) return null;
  const accountLength = bytes[at++];
  if (accountLength === undefined || accountLength === 0 || at + accountLength > bytes.length) return null;
  const accountId = bytes.toString('utf8', at, at + accountLength);
  at += accountLength;
  if (bytes.length !== at + 18 + TAG_BYTES) return null;
  const messageId = bytes.readBigUInt64BE(at);
  const index = bytes.readUInt16BE(at + 8);
  const expiresAt = bytes.readBigUInt64BE(at + 10);
  at += 18;
  if (messageId === 0n || messageId > BigInt(Number.MAX_SAFE_INTEGER) || expiresAt > BigInt(Number.MAX_SAFE_INTEGER)) return null;
  return {
    payload: bytes.subarray(0, at),
    tag: bytes.subarray(at),
    claims: { messageId: Number(messageId), index, accountId, expiresAt: Number(expiresAt), keyId },
  };
}
