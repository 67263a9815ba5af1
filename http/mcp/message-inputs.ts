/**
 * The members the sending and draft tools' inputs share: addresses,
 * subject, bodies, the idempotency key, and the names of a send and a draft
 * (the outbox's own codecs: actors/outbox/protocol.ts). Bounds are the
 * outbox's (SEND_LIMITS); refusals: docs/sending.md.
 */
import { z } from 'zod';
import { DRAFT_ID_PATTERN, draftRowOf, OUTGOING_ID_PATTERN, outgoingRowOf, SEND_LIMITS } from '../../actors/outbox/protocol.ts';
import { AppError } from '../../runtime/errors.ts';

const Address = z.string().min(3).max(SEND_LIMITS.addressLength);
export const Addresses = (what: string) => z.array(Address).max(SEND_LIMITS.recipients).default([]).describe(what);
export const Subject = z
  .string()
  .max(SEND_LIMITS.subjectLength)
  .regex(/^[^\r\n\u2028\u2029]*$/, 'subject must be one line: line breaks are refused in header values');
const Body = z.string().max(SEND_LIMITS.bodyCharacters);
export const bodies = {
  plainTextBody: Body.describe('The message text'),
  htmlBody: Body.optional().describe('An HTML version, sent beside the text'),
};
/**
 * A key the caller names a request by (`idempotencyKey`, `requestId`):
 * 1 to `max` characters, no control character. Why: the store's bound is
 * SQLite's `length()`, which stops at a NUL, so a key holding one broke a
 * CHECK constraint inside the outbox (a defect, 54001, and the actor
 * restarted: found by the tool-arguments fuzz family, issue 30); and no
 * key needs one.
 */
export const callerKey = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .regex(/^[^\u0000-\u001f\u007f-\u009f]*$/, 'control characters are refused in a key');
export const IdempotencyKey = callerKey(SEND_LIMITS.idempotencyKeyLength).describe(
  'Your key for this send: repeating it returns the same record, never a second send',
);
export const OutgoingEmailId = z.string().regex(OUTGOING_ID_PATTERN, 'an outgoingEmailId as a send answered it').describe('As a send answered it');
export const DraftId = z.string().regex(DRAFT_ID_PATTERN, 'a draftId as save_draft answered it');

/** The HTML body as the composition holds it: null when none was given. */
export const htmlOf = (value: string | undefined): string | null => value ?? null;

/** The row a send's or draft's name gives; the schema checked its shape, so only a name no row has reads as not found. */
export const outgoingRowIn = (outgoingEmailId: string): number => found(outgoingRowOf(outgoingEmailId));
export const draftRowIn = (draftId: string): number => found(draftRowOf(draftId));

function found(row: number | null): number {
  if (row === null) throw new AppError('E_NOT_FOUND');
  return row;
}
