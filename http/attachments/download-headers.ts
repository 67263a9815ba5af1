/**
 * The two headers of a download that carry what a mail's sender wrote: the
 * media type and the file name. Both are treated as hostile.
 *
 * Media type: the part's own type only when it is on SERVED_AS_DECLARED,
 * types a browser either downloads or shows in a viewer that runs no page of
 * this origin (documents, images without script, archives, plain text,
 * audio, video); everything else is `application/octet-stream`. Left off on
 * purpose: text/html, application/xhtml+xml, image/svg+xml, XML types,
 * scripts and style sheets (a browser would run or render them as this
 * origin), and message/* and multipart/* (some browsers render MHTML).
 * Parameters (charset) are never passed on. The download is still
 * `attachment`, with nosniff and a sandboxing CSP (attachment-route.ts):
 * the allow-list is the last of three fences, not the only one.
 *
 * File name: the base name only (no directory a sender wrote), without
 * control characters, bidirectional overrides (`invoice\u202Efdp.exe`) or
 * lone surrogates, without leading dots, at most 150 characters, and
 * `attachment` (with an extension for a few types) when none is left. It is
 * sent twice (RFC 6266 section 4.3): an ASCII `filename` for old clients and
 * the exact UTF-8 name as `filename*` (RFC 8187/5987 percent-encoding).
 *
 * Private to http/attachments/.
 */

export const SERVED_AS_DECLARED: ReadonlySet<string> = new Set([
  'application/pdf',
  'application/zip',
  'application/gzip',
  'application/msword',
  'application/vnd.ms-excel',
  'application/vnd.ms-powerpoint',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  'application/vnd.oasis.opendocument.text',
  'application/vnd.oasis.opendocument.spreadsheet',
  'application/vnd.oasis.opendocument.presentation',
  'image/png',
  'image/jpeg',
  'image/gif',
  'image/webp',
  'text/plain',
  'text/csv',
  'text/calendar',
  'audio/mpeg',
  'audio/ogg',
  'video/mp4',
]);

const FALLBACK_EXTENSION: Readonly<Record<string, string>> = {
  'application/pdf': '.pdf',
  'image/png': '.png',
  'image/jpeg': '.jpg',
  'image/gif': '.gif',
  'text/plain': '.txt',
  'text/calendar': '.ics',
  'message/rfc822': '.eml',
};

const MAX_NAME_CHARS = 150;
/** C0 and C1 controls, DEL, and the bidirectional embedding, override and isolate characters. */
const UNSAFE = /[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
/** RFC 8187 attr-char: sent as is in `filename*`; every other byte is percent-encoded. */
const ATTR_CHAR = /^[A-Za-z0-9!#$&+\-.^_`|~]$/;

export function servedContentType(contentType: string): string {
  const type = contentType.trim().toLowerCase();
  return SERVED_AS_DECLARED.has(type) ? type : 'application/octet-stream';
}

export function contentDisposition(filename: string | null, contentType: string): string {
  const name = safeFilename(filename, contentType);
  return `attachment; filename="${asciiFallback(name)}"; filename*=UTF-8''${percentEncode(name)}`;
}

export function safeFilename(filename: string | null, contentType: string): string {
  const base = (filename ?? '').split(/[/\\]/).pop() ?? '';
  const cleaned = base
    .replace(LONE_SURROGATE, '\ufffd')
    .replace(UNSAFE, '')
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^[.\s]+/, '')
    .replace(/[.\s]+$/, '');
  const chars = Array.from(cleaned);
  const name = chars.length > MAX_NAME_CHARS ? chars.slice(0, MAX_NAME_CHARS).join('').trimEnd() : cleaned;
  return name || `attachment${FALLBACK_EXTENSION[contentType.trim().toLowerCase()] ?? ''}`;
}

/** The name with every character outside printable ASCII, and `"`, `\` and `%`, as `_`. */
function asciiFallback(name: string): string {
  return Array.from(name, (c) => (c >= ' ' && c <= '~' && c !== '"' && c !== '\\' && c !== '%' ? c : '_')).join('');
}

function percentEncode(name: string): string {
  let out = '';
  for (const byte of Buffer.from(name, 'utf8')) {
    const c = String.fromCharCode(byte);
    out += ATTR_CHAR.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}
