/**
 * The MIME structure of a raw message as byte ranges, decoding nothing:
 * each part's Content-Type, Content-Disposition and transfer encoding, and
 * where its body starts and ends in the raw bytes. Bodies stay where they
 * are; only the parts chosen as text are decoded later (body-text.ts).
 *
 * Tolerance, as real mail demands:
 * - a leading BOM, mbox `From ` line and blank lines are skipped; CR-only
 *   files are read as LF;
 * - a delimiter is `--boundary` at a line start followed only by blanks
 *   (or `--`), so a boundary that prefixes another does not match it;
 * - a missing close delimiter ends the last part at the end of its parent;
 * - a multipart without boundary, or whose boundary never occurs, is read as
 *   text/plain; a missing Content-Type is text/plain (message/rfc822 inside
 *   multipart/digest);
 * - a message/rfc822 (or message/global) part keeps its enclosed message as
 *   `enclosed`, read the same way when its transfer encoding is an identity
 *   (an encoded enclosed message is left opaque);
 * - a malformed Content-Type is text/plain, or application/octet-stream when
 *   the part names a file;
 * - at most MAX_DEPTH nested multiparts or messages and MAX_PARTS parts are
 *   read; what lies deeper or beyond is ignored. Each level searches its own
 *   body for its boundary, so the work is bounded by MAX_DEPTH times the
 *   message's size (ordinary mail nests 2–4 deep).
 *
 * Private to actors/mime-parse/.
 */
import { first, readHeaderBlock, type HeaderBlock, type HeaderFields } from './header-block.ts';
import { structured } from './header-values.ts';

export const MAX_DEPTH = 128;
export const MAX_PARTS = 500;
const TOP_HEADER_LIMIT = 1024 * 1024;
const PART_HEADER_LIMIT = 64 * 1024;
const IDENTITY = new Set(['', '7bit', '8bit', 'binary']);
const MEDIA_TYPE = /^([a-z0-9][a-z0-9!#$&^_.+-]*)\/([a-z0-9][a-z0-9!#$&^_.+-]*)/;

export type Part = {
  contentType: string;
  params: Record<string, string>;
  /** Lower-cased disposition type, or null when there is no Content-Disposition. */
  disposition: string | null;
  dispositionParams: Record<string, string>;
  /** Lower-cased Content-Transfer-Encoding, '' when absent. */
  encoding: string;
  hasContentId: boolean;
  bodyStart: number;
  bodyEnd: number;
  children: Part[];
  /** The message enclosed by a message/rfc822 part, or null. */
  enclosed: Part | null;
};

export type MimeTree = {
  buf: Buffer;
  /** Offset of the top header block (after an mbox `From ` line). */
  headerStart: number;
  top: HeaderBlock;
  root: Part;
  /** Charset of the top-level Content-Type: the best guess for raw 8-bit header bytes. */
  hint: string | null;
};

type Walk = { buf: Buffer; parts: number };

function asBuffer(raw: Uint8Array): Buffer {
  const buf = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  if (buf.indexOf(10) !== -1 || buf.indexOf(13) === -1) return buf;
  // Classic Mac line endings: copy once with CR read as LF, so every line ends in LF below.
  const copy = Buffer.from(buf);
  for (let i = copy.indexOf(13); i !== -1; i = copy.indexOf(13, i + 1)) copy[i] = 10;
  return copy;
}

/** Ranges [start, end) of the parts between delimiters of `boundary` in [start, end), at most `max`. */
export function splitMultipart(buf: Buffer, start: number, end: number, boundary: string, max: number): Array<[number, number]> {
  const view = buf.subarray(start, end);
  const delimiter = Buffer.from(`--${boundary}`, 'latin1');
  const ranges: Array<[number, number]> = [];
  let partStart = -1;
  let pos = 0;
  while (pos < view.length) {
    const at = view.indexOf(delimiter, pos);
    if (at === -1) break;
    if (at > 0 && view[at - 1] !== 10) {
      pos = at + 1;
      continue;
    }
    let k = at + delimiter.length;
    const close = view[k] === 45 && view[k + 1] === 45;
    if (close) k += 2;
    while (k < view.length && (view[k] === 32 || view[k] === 9)) k++;
    if (k < view.length && view[k] !== 10 && view[k] !== 13 && !close) {
      pos = at + 1; // a longer boundary that merely starts with ours
      continue;
    }
    while (k < view.length && view[k] !== 10) k++;
    const lineEnd = Math.min(k + 1, view.length);
    if (partStart !== -1) {
      let partEnd = at;
      if (partEnd > partStart && view[partEnd - 1] === 10) partEnd--;
      if (partEnd > partStart && view[partEnd - 1] === 13) partEnd--;
      ranges.push([start + partStart, start + partEnd]);
      if (ranges.length >= max) return ranges;
    }
    if (close) return ranges;
    partStart = lineEnd;
    pos = lineEnd;
  }
  if (partStart !== -1) ranges.push([start + partStart, end]);
  return ranges;
}

function mediaType(value: string, fallback: string, named: boolean): string {
  const m = MEDIA_TYPE.exec(value);
  if (m) return `${m[1]}/${m[2]}`;
  return value && named ? 'application/octet-stream' : fallback;
}

function leafAsText(part: Part): Part {
  return { ...part, contentType: 'text/plain', children: [] };
}

function buildPart(walk: Walk, fields: HeaderFields, bodyStart: number, bodyEnd: number, depth: number, fallback: string, hint: string | null): Part {
  walk.parts += 1;
  const ct = structured(first(fields, 'content-type'), hint);
  const cd = first(fields, 'content-disposition');
  const disposition = cd === null ? null : structured(cd, hint);
  const part: Part = {
    contentType: mediaType(ct.value, fallback, Boolean(ct.params.name || disposition?.params.filename)),
    params: ct.params,
    disposition: disposition ? disposition.value || null : null,
    dispositionParams: disposition ? disposition.params : {},
    encoding: (first(fields, 'content-transfer-encoding') ?? '').trim().toLowerCase(),
    hasContentId: fields.has('content-id'),
    bodyStart,
    bodyEnd,
    children: [],
    enclosed: null,
  };
  if (part.contentType === 'message/rfc822' || part.contentType === 'message/global') {
    if (depth < MAX_DEPTH && walk.parts < MAX_PARTS && IDENTITY.has(part.encoding)) {
      const block = readHeaderBlock(walk.buf, bodyStart, bodyEnd, PART_HEADER_LIMIT);
      if (block.count > 0) part.enclosed = buildPart(walk, block.fields, block.bodyStart, bodyEnd, depth + 1, 'text/plain', hint);
    }
    return part;
  }
  if (!part.contentType.startsWith('multipart/')) return part;
  if (depth >= MAX_DEPTH) return part;
  const boundary = (part.params.boundary ?? '').trim();
  const ranges = boundary ? splitMultipart(walk.buf, bodyStart, bodyEnd, boundary, MAX_PARTS - walk.parts) : [];
  if (ranges.length === 0) return leafAsText(part);
  const childFallback = part.contentType === 'multipart/digest' ? 'message/rfc822' : 'text/plain';
  for (const [start, end] of ranges) {
    if (walk.parts >= MAX_PARTS) break;
    const block = readHeaderBlock(walk.buf, start, end, PART_HEADER_LIMIT);
    part.children.push(buildPart(walk, block.fields, block.bodyStart, end, depth + 1, childFallback, hint));
  }
  return part;
}

/** Where the top header block starts: past a BOM, an mbox `From ` line and lines of blanks only. */
function headerStartOf(buf: Buffer): number {
  let at = buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf ? 3 : 0;
  if (buf.toString('latin1', at, at + 5) === 'From ') {
    const nl = buf.indexOf(10, at);
    at = nl === -1 ? buf.length : nl + 1;
  }
  for (;;) {
    let k = at;
    while (buf[k] === 32 || buf[k] === 9) k++;
    if (k === at) return at;
    if (buf[k] === 13) k++;
    if (buf[k] !== 10) return at;
    at = k + 1;
  }
}

export function readMimeTree(raw: Uint8Array): MimeTree {
  const buf = asBuffer(raw);
  const headerStart = headerStartOf(buf);
  const top = readHeaderBlock(buf, headerStart, buf.length, TOP_HEADER_LIMIT);
  const ct = first(top.fields, 'content-type');
  const hint = ct ? (structured(ct, null).params.charset ?? null) : null;
  const root = buildPart({ buf, parts: 0 }, top.fields, top.bodyStart, buf.length, 0, 'text/plain', hint);
  return { buf, headerStart, top, root, hint };
}
