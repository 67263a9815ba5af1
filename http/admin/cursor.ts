/**
 * Keyset cursors of the administrative pages (docs/admin-api.md
 * "Mailbox-change audit": a cursor is bound to the filters it was issued
 * under; presenting it with different filters is 400, changing only `pageSize`
 * is allowed; one not issued by this deployment is 400).
 *
 * A cursor is base64url over `a2.<route>.<filters>.<position>.<tag>`:
 * `route` names the page it walks, `filters` is a digest of the filters
 * (canonical JSON, `pageSize` and `cursor` left out), `position` the keyset
 * position after the page's last entry (JSON of numbers and text, sealed
 * with AES-256-GCM under a key derived from the same secret: a contact
 * listing resumes after a name's comparison form, which must not be
 * readable from a cursor copied into a shell history or a ticket,
 * docs/contacts.md "Privacy"), and `tag` an HMAC-SHA256 (first 16 bytes) of the rest under the
 * deployment's own `cursor-signing` secret (runtime/store/deployment-secrets).
 * Without the tag, a cursor from another deployment — or one made up — would
 * start a page anywhere; with it, such a cursor is refused before its
 * position is read. The tag is compared in constant time.
 *
 * Pure apart from the key. Importable by admin use cases.
 */
import { createCipheriv, createDecipheriv, createHash, createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import { invalidRequest } from './use-cases/guard.ts';

export type Position = ReadonlyArray<string | number>;

export type Cursors = {
  /** A cursor resuming after `position`, for the page `route` under `filters`. */
  issue(route: string, filters: Readonly<Record<string, unknown>>, position: Position): string;
  /** The position a cursor resumes after; the 400 (invalidRequest) when not ours, or issued under other filters. */
  read(route: string, filters: Readonly<Record<string, unknown>>, cursor: string): Position;
};

const VERSION = 'a2';
const IV_BYTES = 12;
const GCM_TAG_BYTES = 16;
const TAG_BYTES = 16;

export const NOT_ISSUED_HERE = 'The cursor was not issued by this deployment for this page; start the walk again without cursor.';
export const OTHER_FILTERS =
  'The cursor was issued under other filters; send the filters of the first page again (only pageSize may change), or start again without cursor.';

export function createCursors(key: Buffer): Cursors {
  const tag = (body: string): Buffer => createHmac('sha256', key).update(body).digest().subarray(0, TAG_BYTES);
  const sealing = Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), 'mailcairn admin cursor position', 32));
  return {
    issue(route, filters, position) {
      const head = [VERSION, routeName(route), digest(filters)];
      const body = [...head, seal(sealing, head.join('.'), JSON.stringify(position))].join('.');
      return Buffer.from(`${body}.${tag(body).toString('base64url')}`).toString('base64url');
    },
    read(route, filters, cursor) {
      if (cursor.length > 2_000 || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw invalidRequest(NOT_ISSUED_HERE);
      const text = Buffer.from(cursor, 'base64url').toString('latin1');
      // One spelling per cursor: trailing bits or stray characters are refused.
      if (Buffer.from(text, 'latin1').toString('base64url') !== cursor) throw invalidRequest(NOT_ISSUED_HERE);
      const parts = text.split('.');
      if (parts.length !== 5) throw invalidRequest(NOT_ISSUED_HERE);
      const [version, name, issuedFor, position, sent] = parts as [string, string, string, string, string];
      const expected = tag(parts.slice(0, 4).join('.'));
      const given = Buffer.from(sent, 'base64url');
      if (
        given.length !== TAG_BYTES ||
        given.toString('base64url') !== sent ||
        !timingSafeEqual(given, expected) ||
        version !== VERSION ||
        name !== routeName(route)
      ) {
        throw invalidRequest(NOT_ISSUED_HERE);
      }
      if (issuedFor !== digest(filters)) throw invalidRequest(OTHER_FILTERS);
      const opened = unseal(sealing, parts.slice(0, 3).join('.'), position);
      if (opened === null) throw invalidRequest(NOT_ISSUED_HERE);
      const value: unknown = JSON.parse(opened);
      if (!Array.isArray(value) || !value.every((v) => typeof v === 'string' || typeof v === 'number')) throw invalidRequest(NOT_ISSUED_HERE);
      return value as Position;
    },
  };
}

/** `text` sealed under `key`, bound to `head` (version, route, filters): base64url of IV, ciphertext and GCM tag. */
function seal(key: Buffer, head: string, text: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv).setAAD(Buffer.from(head));
  const sealed = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, sealed, cipher.getAuthTag()]).toString('base64url');
}

/** The text `seal` sealed, or null when it does not open under `key` and `head`. */
function unseal(key: Buffer, head: string, sealed: string): string | null {
  const bytes = Buffer.from(sealed, 'base64url');
  if (bytes.length < IV_BYTES + GCM_TAG_BYTES) return null;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES)).setAAD(Buffer.from(head));
    decipher.setAuthTag(bytes.subarray(bytes.length - GCM_TAG_BYTES));
    return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES, bytes.length - GCM_TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    return null;
  }
}

/** The filters a cursor is bound to: every member but pageSize and cursor, undefined ones dropped, in key order. */
function digest(filters: Readonly<Record<string, unknown>>): string {
  const bound = Object.keys(filters)
    .filter((k) => k !== 'pageSize' && k !== 'cursor' && filters[k] !== undefined)
    .sort()
    .map((k) => [k, filters[k]]);
  return createHash('sha256').update(JSON.stringify(bound)).digest().subarray(0, 12).toString('base64url');
}

function routeName(route: string): string {
  return createHash('sha256').update(route).digest().subarray(0, 6).toString('base64url');
}
