/**
 * `storedEmailId`: the opaque, stable name agents use for one stored email,
 * built over `messages.id` (never reused: AUTOINCREMENT). Shape: `e` + the id
 * in base 36 (`e2s`, `e1a4k`). Not secret and not meant to be unguessable:
 * every use re-checks the caller's scope, so knowing an id grants nothing.
 * Decoding is strict (one spelling per id), so an id an agent made up or
 * mangled is told apart from one that names no email.
 *
 * Pure, shape only: every contract and tool that names an email imports it
 * from here (the read tools, the write tools, the attachment route).
 */
import { z } from 'zod';

const pattern = /^e[1-9a-z][0-9a-z]{0,10}$/;

/** The zod check of the input schemas: the shape only (a well-formed id may still name nothing). */
export const StoredEmailId = z.string().regex(pattern).describe('storedEmailId from a listing');

export function encodeStoredEmailId(messageId: number): string {
  if (!Number.isSafeInteger(messageId) || messageId < 1) throw new RangeError('a stored email id is built over a positive integer');
  return `e${messageId.toString(36)}`;
}

/** The `messages.id` behind a storedEmailId, or null when the string is not one this service issues. */
export function decodeStoredEmailId(value: string): number | null {
  if (!pattern.test(value)) return null;
  const id = Number.parseInt(value.slice(1), 36);
  return Number.isSafeInteger(id) && encodeStoredEmailId(id) === value ? id : null;
}
