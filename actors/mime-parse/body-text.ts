/**
 * The readable body: the body-text parts chosen from the MIME tree, decoded
 * (transfer encoding, then charset) and HTML reduced to text, joined with a
 * blank line. Only these parts are ever decoded.
 *
 * - multipart/alternative: the first alternative holding text/plain wins;
 *   else the last holding HTML (the richest, per RFC 2046); an alternative
 *   that yields only white space gives way to the next.
 * - every other multipart: all its body-text parts, in order.
 * - an enclosed message (message/rfc822 not marked `attachment`: forwards,
 *   digests, returned mail in bounces) adds its own body text, in place.
 * - bounds: at most MAX_TEXT_PART_BYTES encoded bytes of a part are read, and
 *   the body stops at MAX_BODY_CHARS characters.
 *
 * Private to actors/mime-parse/.
 */
import libmime from 'libmime';
import { isBodyText } from './attachments.ts';
import { decodeBytes } from './charsets.ts';
import { htmlToText } from './html-text.ts';
import type { Part } from './mime-tree.ts';

export const MAX_BODY_CHARS = 1_000_000;
export const MAX_TEXT_PART_BYTES = 4 * 1024 * 1024;
const CONTROL = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufeff]/g;

function hexValue(c: number | undefined): number {
  if (c === undefined) return -1;
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 65 && c <= 70) return c - 55;
  if (c >= 97 && c <= 102) return c - 87;
  return -1;
}

/** Quoted-printable to bytes; malformed escapes are kept as written. */
export function decodeQuotedPrintable(src: Buffer): Buffer {
  const out = Buffer.allocUnsafe(src.length);
  const length = src.length;
  let o = 0;
  for (let i = 0; i < length; i++) {
    const c = src[i]!;
    if (c !== 61) {
      out[o++] = c;
      continue;
    }
    const hi = hexValue(src[i + 1]);
    const lo = hexValue(src[i + 2]);
    if (hi >= 0 && lo >= 0) {
      out[o++] = hi * 16 + lo;
      i += 2;
      continue;
    }
    let j = i + 1;
    while (src[j] === 32 || src[j] === 9) j++;
    if (src[j] === 13 && src[j + 1] === 10) j++;
    if (src[j] === 10 || j >= length) {
      i = j; // a soft line break
      continue;
    }
    out[o++] = 61;
  }
  return out.subarray(0, o);
}

function htmlCharset(bytes: Buffer): string | null {
  const head = bytes.toString('latin1', 0, Math.min(bytes.length, 2048));
  const m = /<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_:.-]+)/i.exec(head);
  return m ? m[1]! : null;
}

/** One body-text part as text. */
export function partText(buf: Buffer, part: Part): string {
  const encoded = buf.subarray(part.bodyStart, Math.min(part.bodyEnd, part.bodyStart + MAX_TEXT_PART_BYTES));
  let bytes: Buffer = encoded;
  if (part.encoding === 'base64') bytes = Buffer.from(encoded.toString('latin1'), 'base64');
  else if (part.encoding === 'quoted-printable') bytes = decodeQuotedPrintable(encoded);
  const html = part.contentType === 'text/html';
  const charset = part.params.charset ?? (html ? htmlCharset(bytes) : null);
  let text = decodeBytes(bytes, charset).replace(/\r\n?/g, '\n').replace(CONTROL, '');
  if (html) return htmlToText(text);
  if ((part.params.format ?? '').toLowerCase() === 'flowed') {
    text = libmime.decodeFlowed(text, (part.params.delsp ?? '').toLowerCase() === 'yes');
  }
  return text.trim();
}

type Collect = { buf: Buffer; left: number };

function holds(part: Part, type: string): boolean {
  if (part.children.length === 0) return part.contentType === type && isBodyText(part);
  return part.children.some((child) => holds(child, type));
}

function collect(ctx: Collect, part: Part, out: string[]): void {
  if (ctx.left <= 0) return;
  if (part.children.length > 0) {
    if (part.contentType === 'multipart/alternative') return alternative(ctx, part, out);
    for (const child of part.children) collect(ctx, child, out);
    return;
  }
  if (part.enclosed !== null) {
    if (part.disposition !== 'attachment') collect(ctx, part.enclosed, out);
    return;
  }
  if (!isBodyText(part)) return;
  const text = partText(ctx.buf, part);
  if (text.length === 0) return;
  const piece = cut(text, ctx.left);
  ctx.left -= piece.length + 2;
  out.push(piece);
}

function alternative(ctx: Collect, part: Part, out: string[]): void {
  const plain = part.children.filter((c) => holds(c, 'text/plain'));
  const html = part.children.filter((c) => !plain.includes(c) && holds(c, 'text/html')).reverse();
  for (const child of [...plain, ...html]) {
    const left = ctx.left;
    const found: string[] = [];
    collect(ctx, child, found);
    if (found.some((t) => t.trim().length > 0)) {
      out.push(...found);
      return;
    }
    ctx.left = left;
  }
}

/** At most `max` chars, never splitting a surrogate pair. */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const code = text.charCodeAt(max - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max);
}

export function bodyText(buf: Buffer, root: Part): string {
  const out: string[] = [];
  collect({ buf, left: MAX_BODY_CHARS }, root, out);
  return cut(out.join('\n\n'), MAX_BODY_CHARS);
}
