/**
 * Bytes to text under a declared (often wrong or absent) charset.
 *
 * - Declared UTF-8: decoded as UTF-8, bad sequences become U+FFFD.
 * - Absent, US-ASCII or unknown to iconv-lite ("fakescii", "us-askey"):
 *   UTF-8 when the bytes are valid UTF-8, else windows-1252 (the usual truth
 *   behind 8-bit text that names no charset).
 * - ISO-2022-JP and friends: libmime's charset module (encoding-japanese).
 * - ISO-8859-1 is read as windows-1252, as browsers do.
 * - Anything else iconv-lite knows: iconv-lite.
 *
 * Private to actors/mime-parse/.
 */
import { isUtf8 } from 'node:buffer';
import iconv from 'iconv-lite';
import libmime from 'libmime';
import libcharset from 'libmime/lib/charset.js';

const ASCII_ONLY = /^[\x00-\x7f]*$/;

function sniff(bytes: Buffer): string {
  return isUtf8(bytes) ? bytes.toString('utf8') : iconv.decode(bytes, 'windows-1252');
}

/** Canonical charset name of a declared value, or null when absent. */
export function charsetName(declared: string | null | undefined): string | null {
  if (!declared) return null;
  const trimmed = declared.trim().replace(/^charset=/i, '').replace(/^["']|["']$/g, '');
  return trimmed ? libmime.normalizeCharset(trimmed).toUpperCase() : null;
}

export function decodeBytes(bytes: Buffer, declared: string | null): string {
  const name = charsetName(declared);
  if (name === 'UTF-8' || name === 'UTF8') return bytes.toString('utf8');
  if (name === null || name === 'US-ASCII' || name === 'ASCII') return sniff(bytes);
  if (name.includes('2022-JP')) return libcharset.decode(bytes, name);
  if (name === 'ISO-8859-1' || name === 'LATIN1') return iconv.decode(bytes, 'windows-1252');
  if (iconv.encodingExists(name)) return iconv.decode(bytes, name);
  return sniff(bytes);
}

/**
 * A header value read as latin1 (one char per byte) back to text. Raw 8-bit
 * header bytes (RFC 6532 UTF-8, or a legacy charset) are UTF-8 when valid,
 * else in `hint` (the message's body charset), else windows-1252. Raw JIS
 * escape sequences (ISO-2022-JP without encoded words) are decoded as such.
 */
export function headerText(latin1: string, hint: string | null): string {
  if (latin1.includes('\x1b$')) return libcharset.decode(Buffer.from(latin1, 'latin1'), 'ISO-2022-JP');
  if (ASCII_ONLY.test(latin1)) return latin1;
  const bytes = Buffer.from(latin1, 'latin1');
  if (isUtf8(bytes)) return bytes.toString('utf8');
  return hint ? decodeBytes(bytes, hint) : iconv.decode(bytes, 'windows-1252');
}
