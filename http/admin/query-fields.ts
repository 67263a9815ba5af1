/**
 * Query-string fields shared by administrative pages. Query values arrive as
 * text; these turn them into typed values with the sentence of the 400 that
 * names what to change.
 */
import { z } from 'zod';

/** `pageSize`: a whole number from 1 to `max`, `fallback` when absent; out of range is refused, never clamped. */
export function pageSizeField(max: number, fallback: number) {
  const sentence = `Send pageSize as a whole number from 1 to ${max}.`;
  return z
    .string()
    .regex(/^[0-9]{1,6}$/, { error: sentence })
    .transform(Number)
    .pipe(z.number().int().min(1, { error: sentence }).max(max, { error: sentence }))
    .optional()
    .transform((v) => v ?? fallback)
    .describe(`1 to ${max}, default ${fallback}`);
}

/** `cursor`: opaque text from the previous page's `nextCursor`. */
export const CursorField = z
  .string()
  .min(1, { error: 'Send cursor as nextCursor of the previous page, or leave it out.' })
  .optional()
  .describe('`nextCursor` of the previous page');

/** An ISO 8601 instant with a zone, as a query parameter; answered as epoch milliseconds. */
export function instantField(name: string) {
  const sentence = `Send ${name} as an ISO 8601 instant with a time zone, such as 2026-01-31T00:00:00Z.`;
  return z
    .string()
    .refine((v) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/.test(v) && Number.isFinite(Date.parse(v)), { error: sentence })
    .transform((v) => Date.parse(v))
    .optional();
}
