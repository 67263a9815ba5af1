/**
 * Keyset cursors of the administrative pages (docs/admin-api.md
 * "Mailbox-change audit": a cursor is bound to the filters it was issued
 * under; presenting it with different filters is 400, changing only `pageSize`
 * is allowed; one not issued by this deployment is 400).
 *
 * A cursor is base64url over `a1.<route>.<filters>.<position>.<tag>`:
 * `route` names the page it walks, `filters` is a digest of the filters
 * (canonical JSON, `pageSize` and `cursor` left out), `position` the keyset
 * position after the page's last entry (base64url JSON of numbers and text),
 * and `tag` an HMAC-SHA256 (first 16 bytes) of the rest under the
 * deployment's own `cursor-signing` secret (runtime/store/deployment-secrets).
 * Without the tag, a cursor from another deployment — or one made up — would
 * start a page anywhere; with it, such a cursor is refused before its
 * position is read. The tag is compared in constant time.
 *
 * Pure apart from the key. Importable by admin use cases.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { invalidRequest } from './use-cases/guard.ts';

export type Position = ReadonlyArray<string | number>;

export type Cursors = {
  /** A cursor resuming after `position`, for the page `route` under `filters`. */
  issue(route: string, filters: Readonly<Record<string, unknown>>, position: Position): string;
  /** The position a cursor resumes after; the 400 (invalidRequest) when not ours, or issued under other filters. */
  read(route: string, filters: Readonly<Record<string, unknown>>, cursor: string): Position;
};

const VERSION = 'a1';
const TAG_BYTES = 16;

export const NOT_ISSUED_HERE = 'The cursor was not issued by this deployment for this page; start the walk again without cursor.';
export const OTHER_FILTERS =
  'The cursor was issued under other filters; send the filters of the first page again (only pageSize may change), or start again without cursor.';

export function createCursors(key: Buffer): Cursors {
  const tag = (body: string): Buffer => createHmac('sha256', key).update(body).digest().subarray(0, TAG_BYTES);
  return {
    issue(route, filters, position) {
      const body = [VERSION, routeName(route), digest(filters), Buffer.from(JSON.stringify(position)).toString('base64url')].join('.');
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
      const value: unknown = JSON.parse(Buffer.from(position, 'base64url').toString('utf8'));
      if (!Array.isArray(value) || !value.every((v) => typeof v === 'string' || typeof v === 'number')) throw invalidRequest(NOT_ISSUED_HERE);
      return value as Position;
    },
  };
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
