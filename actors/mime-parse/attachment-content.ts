/**
 * One attachment's bytes out of a raw message, for a download: the
 * `index`-th entry of exactly the list `listAttachments` gives (the same
 * walk, attachments.ts `attachmentParts`), with its transfer encoding undone.
 *
 * - base64: white space and characters outside the alphabet (RFC 2045) are
 *   skipped, `-` and `_` included; padding in the middle (encoders that
 *   concatenate separately padded chunks) starts a new chunk instead of
 *   ending the data.
 * - quoted-printable: the body-text decoder (malformed escapes kept as
 *   written).
 * - 7bit, 8bit, binary, none, and any encoding this parser does not know
 *   (x-uuencode, garbage): the bytes as stored. The listing sizes such parts
 *   the same way, so what is served matches what was listed.
 * - message/rfc822: the enclosed message, as a whole (an `.eml`).
 *
 * null for an index outside the list and for a message the parser calls
 * unreadable (empty, or no header field at its top), exactly where
 * `parseMessage` lists no attachment. Pure, synchronous, never throws, logs
 * nothing.
 *
 * Private to actors/mime-parse/: the pool task answers
 * `mime-parse.extract-attachment` with it (task.ts); a forward's
 * attachments are decoded by the same `partContent` (read-original.ts).
 */
import { attachmentParts, encodedBody, encodedSha256, filenameOf } from './attachments.ts';
import { decodeQuotedPrintable } from './body-text.ts';
import { type Part, readMimeTree } from './mime-tree.ts';

export type AttachmentContent = {
  filename: string | null;
  contentType: string;
  /** Decoded bytes; the Buffer owns its whole ArrayBuffer, so it can be transferred between threads. */
  content: Buffer;
  /** SHA-256 (hex) of the encoded body: equals the listed attachment's `sha256`. */
  encodedSha256: string;
};

export function extractAttachment(raw: Uint8Array, index: number): AttachmentContent | null {
  if (!Number.isSafeInteger(index) || index < 0 || raw.byteLength === 0) return null;
  try {
    const tree = readMimeTree(raw);
    if (tree.top.count === 0) return null;
    const part = attachmentParts(tree.root)[index];
    if (part === undefined) return null;
    return {
      filename: filenameOf(part),
      contentType: part.contentType,
      content: partContent(tree.buf, part),
      encodedSha256: encodedSha256(tree.buf, part),
    };
  } catch {
    // Same contract as parseMessage: whatever slipped past the tolerant readers is "unreadable".
    return null;
  }
}

/** A part's body with its transfer encoding undone, in a Buffer that owns its whole ArrayBuffer (transferable). */
export function partContent(buf: Buffer, part: Part): Buffer {
  return owned(decode(encodedBody(buf, part), part.encoding));
}

function decode(encoded: Buffer, encoding: string): Buffer {
  if (encoding === 'base64') return decodeBase64(encoded);
  if (encoding === 'quoted-printable') return decodeQuotedPrintable(encoded);
  return encoded;
}

const TRAILING_PADDING = /^[\s=]*$/;
const OUTSIDE_ALPHABET = /[^A-Za-z0-9+/=\r\n\t ]/;

function decodeBase64(encoded: Buffer): Buffer {
  let text = encoded.toString('latin1');
  // RFC 2045: characters outside the alphabet are ignored. Node's decoder would read `-` and `_` as
  // base64url digits, so they go first (a scan only; clean bodies are not copied).
  if (OUTSIDE_ALPHABET.test(text)) text = text.replace(/[^A-Za-z0-9+/=]/g, '');
  const pad = text.indexOf('=');
  // Node's decoder skips white space but stops at the first `=`.
  if (pad === -1 || TRAILING_PADDING.test(text.slice(pad))) return Buffer.from(text, 'base64');
  const chunks = text
    .replace(/[^A-Za-z0-9+/=]/g, '')
    .split(/=+/)
    .filter((chunk) => chunk.length > 0)
    .map((chunk) => Buffer.from(chunk, 'base64'));
  return Buffer.concat(chunks);
}

/** The bytes in a Buffer of their own: decoders hand back slices of Node's shared pool or of the whole message. */
function owned(bytes: Buffer): Buffer {
  if (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength) return bytes;
  const copy = Buffer.allocUnsafeSlow(bytes.byteLength);
  bytes.copy(copy);
  return copy;
}
