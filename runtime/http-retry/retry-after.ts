/**
 * The `Retry-After` header (RFC 9110 §10.2.3) as a delay in milliseconds:
 * either whole seconds or an HTTP date. Pure; `now` is the caller's clock.
 * Anything else (a negative or fractional number, a date that does not
 * parse) is treated as absent, so our own backoff applies instead.
 *
 * Shared by the clients of OpenAI-compatible endpoints (embeddings in
 * `actors/embedding/`, chat in `actors/answering/`), which is why it lives
 * in runtime/. Importable from anywhere.
 */

/** Delay asked for, in ms (0 for a date already past), or null when absent or unusable. */
export function retryAfterMs(header: string | string[] | undefined, now: number): number | null {
  const value = (Array.isArray(header) ? header[0] : header)?.trim();
  if (value === undefined || value === '') return null;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  // An HTTP date names a day of the week first; this keeps Date.parse from reading "12" or "1e3".
  if (!/^[A-Za-z]{3},? /.test(value)) return null;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}
