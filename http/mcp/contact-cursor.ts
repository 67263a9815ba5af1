/**
 * The `list_contacts` cursor, built like the `list_emails` one
 * (actors/mail-query/cursor.ts, which stays private to the query pool):
 * opaque base64url over `k1.<name key>.<row>.<filter fingerprint>.<check>` —
 * a format version, the keyset position after the page's last contact (its
 * name's comparison form, base64url, and its row in base 36), the
 * fingerprint of the query and origin it was issued for, and a truncated
 * SHA-256 of the rest.
 *
 * The check catches a cursor that was cut, retyped or made up (52001); it
 * needs no key, because a cursor carries no authority: the filters are
 * applied afresh on every page, so a hand-made one can at most start a page
 * at another position. One issued for another query or origin is 52002;
 * only `pageSize` may change. The name key it carries is that of a contact
 * the same answer showed (docs/contacts.md "Tools").
 */
import { createHash } from 'node:crypto';
import type { ContactPosition } from '../../actors/contacts/protocol.ts';
import { AppError } from '../../runtime/errors.ts';

/** What a walk is bound to: every filter but the page size. */
export type ContactFilters = { readonly query?: string | undefined; readonly origin?: string | undefined };

const VERSION = 'k1';
const MAX_LENGTH = 2_000;

const digest = (text: string, bytes: number): string => createHash('sha256').update(text).digest().subarray(0, bytes).toString('base64url');
const check = (body: string): string => digest(body, 6);

export function fingerprintOf(filters: ContactFilters): string {
  return digest(JSON.stringify([filters.query ?? null, filters.origin ?? null]), 9);
}

export function encodeContactCursor(position: ContactPosition, filters: ContactFilters): string {
  const body = [VERSION, Buffer.from(position.nameKey).toString('base64url'), position.row.toString(36), fingerprintOf(filters)].join('.');
  return Buffer.from(`${body}.${check(body)}`).toString('base64url');
}

/** The position a cursor resumes after; E_CURSOR_INVALID or E_CURSOR_FILTERS_CHANGED otherwise. */
export function decodeContactCursor(cursor: string, filters: ContactFilters): ContactPosition {
  if (cursor.length > MAX_LENGTH || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw invalid();
  const text = Buffer.from(cursor, 'base64url').toString('latin1');
  // One spelling per cursor: trailing bits or stray characters are refused.
  if (Buffer.from(text, 'latin1').toString('base64url') !== cursor) throw invalid();
  const parts = text.split('.');
  if (parts.length !== 5) throw invalid();
  const [version, nameKey, row, issuedFor, sum] = parts as [string, string, string, string, string];
  if (version !== VERSION || sum !== check(parts.slice(0, 4).join('.'))) throw invalid();
  const position = { nameKey: Buffer.from(nameKey, 'base64url').toString('utf8'), row: parseRow(row) };
  if (position.row === undefined) throw invalid();
  if (issuedFor !== fingerprintOf(filters)) throw new AppError('E_CURSOR_FILTERS_CHANGED');
  return position as ContactPosition;
}

function parseRow(value: string): number | undefined {
  if (!/^[0-9a-z]{1,11}$/.test(value)) return undefined;
  const n = Number.parseInt(value, 36);
  return Number.isSafeInteger(n) && n >= 1 && n.toString(36) === value ? n : undefined;
}

function invalid(): AppError {
  return new AppError('E_CURSOR_INVALID');
}
