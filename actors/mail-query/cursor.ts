/**
 * The `list_emails` cursor: opaque base64url over
 * `1.<internal date>.<message id>.<filter fingerprint>.<check>` — a format
 * version, the keyset position (the last email of the page, by internal date
 * then id; `n` for an email without an internal date), the fingerprint of
 * the filters and direction it was issued for, and a truncated SHA-256 of
 * the rest.
 *
 * The check catches a cursor that was cut, retyped or made up (52001). It is
 * not a signature and needs none: a cursor carries no authority — scope and
 * filters are applied afresh on every page — so a hand-made one can at most
 * start a page at another position. A well-formed cursor issued for other
 * filters or another direction is 52002; only `pageSize` may change.
 *
 * Pure. Importable by modules of `actors/mail-query/` only.
 */
import { createHash } from 'node:crypto';
import { AppError } from '../../runtime/errors.ts';

export type Position = { internalDate: number | null; id: number };

const VERSION = '1';
const number36 = /^-?[0-9a-z]{1,12}$/;

function check(body: string): string {
  return createHash('sha256').update(body).digest().subarray(0, 6).toString('base64url');
}

export function encodeCursor(position: Position, fingerprint: string): string {
  const date = position.internalDate === null ? 'n' : position.internalDate.toString(36);
  const body = `${VERSION}.${date}.${position.id.toString(36)}.${fingerprint}`;
  return Buffer.from(`${body}.${check(body)}`).toString('base64url');
}

/** The position a cursor resumes after; E_CURSOR_INVALID or E_CURSOR_FILTERS_CHANGED otherwise. */
export function decodeCursor(cursor: string, fingerprint: string): Position {
  if (cursor.length > 1000 || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw invalid();
  const text = Buffer.from(cursor, 'base64url').toString('latin1');
  // One spelling per cursor: trailing bits or stray characters are refused.
  if (Buffer.from(text, 'latin1').toString('base64url') !== cursor) throw invalid();
  const parts = text.split('.');
  if (parts.length !== 5) throw invalid();
  const [version, date, id, issuedFor, sum] = parts as [string, string, string, string, string];
  if (sum !== check(parts.slice(0, 4).join('.')) || version !== VERSION) throw invalid();
  const internalDate = date === 'n' ? null : parse36(date);
  const messageId = parse36(id);
  if (internalDate === undefined || messageId === undefined || messageId < 1) throw invalid();
  if (issuedFor !== fingerprint) throw new AppError('E_CURSOR_FILTERS_CHANGED');
  return { internalDate, id: messageId };
}

function parse36(value: string): number | undefined {
  if (!number36.test(value)) return undefined;
  const n = Number.parseInt(value, 36);
  return Number.isSafeInteger(n) && n.toString(36) === value ? n : undefined;
}

function invalid(): AppError {
  return new AppError('E_CURSOR_INVALID');
}
