/**
 * Text that repeats earlier mail is embedded once per generation
 * (docs/semantic-search.md "Repeated text"): a passage whose normalised text
 * equals one the generation already has a vector for takes that vector, and
 * the provider never sees it again. Mail repeats itself a lot: a reply quotes
 * its parent, a list footer or signature fills a message's last passage.
 *
 * Normalised: quote markers (`>` at the start of a line, nested or not)
 * dropped, runs of whitespace made one space, ends trimmed; case kept (it
 * can carry meaning the model reads). The key is the SHA-256 of the
 * normalised text as sent (subject line and cut included), stored with the
 * vector (migration 0018).
 */
import { createHash } from 'node:crypto';

const QUOTE_MARKERS = /^[ \t]*(?:>[ \t]?)+/gm;
const WHITESPACE = /\s+/g;

export function normalisedText(text: string): string {
  return text.replace(QUOTE_MARKERS, '').replace(WHITESPACE, ' ').trim();
}

/** SHA-256 of the normalised text. */
export function textHash(text: string): Uint8Array {
  return createHash('sha256').update(normalisedText(text)).digest();
}

export function hashKey(hash: Uint8Array): string {
  return Buffer.from(hash.buffer, hash.byteOffset, hash.byteLength).toString('hex');
}
