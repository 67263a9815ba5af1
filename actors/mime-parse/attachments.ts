/**
 * Which parts are body text and which are attachments, and the attachment
 * list itself. Listing never decodes a payload: the size is estimated from
 * the encoded length and the SHA-256 is taken over the encoded bytes. Only a
 * download decodes one (attachment-content.ts), walking the same list.
 *
 * A part is body text when it is text/plain or text/html and its
 * Content-Disposition is not `attachment` (a `name` parameter alone does
 * not make it an attachment: old mailers and bounce generators name their
 * only text part). Every other leaf is an attachment, including message/rfc822: one entry for the whole
 * enclosed message, whose own attachments are not listed. `inline` is true
 * for disposition `inline`, or no disposition and a Content-ID (an image
 * the HTML shows).
 *
 * Private to actors/mime-parse/.
 */
import { createHash } from 'node:crypto';
import type { Attachment } from './protocol.ts';
import type { Part } from './mime-tree.ts';

const MAX_FILENAME_CHARS = 500;

export function filenameOf(part: Part): string | null {
  const raw = part.dispositionParams.filename ?? part.params.name ?? '';
  const name = raw
    .replace(/\ufffd+$/, '')
    .replace(/[\x00-\x1f\x7f]/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, MAX_FILENAME_CHARS);
  return name || null;
}

export function isBodyText(part: Part): boolean {
  if (part.contentType !== 'text/plain' && part.contentType !== 'text/html') return false;
  return part.disposition !== 'attachment';
}

/** Decoded size of a part's body estimated from its encoded bytes, without decoding. */
export function estimateSize(buf: Buffer, part: Part): number {
  const length = part.bodyEnd - part.bodyStart;
  if (length <= 0) return 0;
  const body = buf.subarray(part.bodyStart, part.bodyEnd);
  if (part.encoding === 'base64') {
    // Lines of one length: count the line breaks from the first line instead of scanning.
    let from = 0;
    while (from < length && (body[from] === 10 || body[from] === 13 || body[from] === 32)) from++;
    const rest = length - from;
    const lf = body.indexOf(10, from);
    let chars = rest;
    if (lf !== -1 && lf + 1 < length) {
      const eol = lf > from && body[lf - 1] === 13 ? 2 : 1;
      chars = rest - Math.ceil(rest / (lf + 1 - from)) * eol;
    }
    let pad = 0;
    for (let i = length - 1; i >= 0 && i >= length - 8; i--) {
      const c = body[i];
      if (c === 61) pad++;
      else if (c !== 10 && c !== 13 && c !== 32) break;
    }
    return Math.max(0, Math.floor((Math.max(chars, 0) * 3) / 4) - Math.min(pad, 2));
  }
  if (part.encoding === 'quoted-printable') {
    let size = length;
    for (let i = body.indexOf(61); i !== -1; i = body.indexOf(61, i + 1)) size -= 2;
    return Math.max(0, size);
  }
  return length;
}

/** The bytes of a part's body as written in the message (still transfer-encoded). */
export function encodedBody(buf: Buffer, part: Part): Buffer {
  return buf.subarray(part.bodyStart, Math.max(part.bodyStart, part.bodyEnd));
}

/** SHA-256 (hex) over the encoded body: the `sha256` of a listed attachment. */
export function encodedSha256(buf: Buffer, part: Part): string {
  return createHash('sha256').update(encodedBody(buf, part)).digest('hex');
}

function describe(buf: Buffer, part: Part): Attachment {
  return {
    filename: filenameOf(part),
    contentType: part.contentType,
    size: estimateSize(buf, part),
    sha256: encodedSha256(buf, part),
    inline: part.disposition === 'inline' || (part.disposition === null && part.hasContentId),
  };
}

/**
 * The parts that are attachments, in tree order: the one walk that decides
 * both the list agents see and what an attachment's index names
 * (attachment-content.ts), so the two cannot drift apart.
 */
export function attachmentParts(root: Part): Part[] {
  const out: Part[] = [];
  const visit = (part: Part): void => {
    if (part.children.length > 0) {
      for (const child of part.children) visit(child);
      return;
    }
    // A multipart left without children lies beyond the depth bound: ignored.
    if (part.contentType.startsWith('multipart/') || isBodyText(part)) return;
    out.push(part);
  };
  visit(root);
  return out;
}

/** Every attachment in tree order. */
export function listAttachments(buf: Buffer, root: Part): Attachment[] {
  return attachmentParts(root).map((part) => describe(buf, part));
}
