/**
 * Bytes to text under a declared (often wrong or absent) charset.
 *
 * - Declared UTF-8: decoded as UTF-8, bad sequences become U+FFFD.
 * - Absent, US-ASCII or unknown to iconv-lite ("fakescii", "us-askey"):
 *   UTF-8 when the bytes are UTF-8 (allowing a stray broken sequence, as
 *   from a value cut mid-character), else windows-1252 (the usual truth
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

/**
 * What windows-1252 puts at 0x80–0x9F (the five bytes it leaves undefined
 * stay as the C1 controls, as browsers decode them). Shared with the HTML
 * entity decoder, which reads numeric references in that range the same way.
 */
export const WINDOWS_1252_C1 = '€\x81‚ƒ„…†‡ˆ‰Š‹Œ\x8dŽ\x8f\x90‘’“”•–—˜™š›œ\x9džŸ';
const C1_RANGE = /[\x80-\x9f]/g;

/** windows-1252 (and ISO-8859-1, read as browsers do): latin1 is native and fast; only 0x80–0x9F differ. */
function windows1252(bytes: Buffer): string {
  const text = bytes.toString('latin1');
  C1_RANGE.lastIndex = 0;
  if (!C1_RANGE.test(text)) return text;
  return text.replace(C1_RANGE, (c) => WINDOWS_1252_C1[c.charCodeAt(0) - 0x80]!);
}

/** The bytes as UTF-8 when they are (nearly all) valid UTF-8, else null. */
function asUtf8(bytes: Buffer): string | null {
  if (isUtf8(bytes)) return bytes.toString('utf8');
  const text = bytes.toString('utf8');
  let broken = 0;
  let wide = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0xfffd) broken++;
    else if (c > 0x7f) wide++;
  }
  // Latin-1 text read as UTF-8 breaks at every accented letter; real UTF-8 at most here and there.
  return broken * 8 <= wide ? text : null;
}

function sniff(bytes: Buffer): string {
  return asUtf8(bytes) ?? windows1252(bytes);
}

/** Canonical charset name of a declared value, or null when absent. */
export function charsetName(declared: string | null | undefined): string | null {
  if (!declared) return null;
  const trimmed = declared
    .trim()
    .replace(/^charset=/i, '')
    .replace(/^["']|["']$/g, '');
  return trimmed ? libmime.normalizeCharset(trimmed).toUpperCase() : null;
}

export function decodeBytes(bytes: Buffer, declared: string | null): string {
  const name = charsetName(declared);
  if (name === 'UTF-8' || name === 'UTF8') return bytes.toString('utf8');
  if (name === null || name === 'US-ASCII' || name === 'ASCII') return sniff(bytes);
  if (name.includes('2022-JP')) return libcharset.decode(bytes, name);
  if (name === 'ISO-8859-1' || name === 'LATIN1' || name === 'WINDOWS-1252' || name === 'CP1252') return windows1252(bytes);
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
  const utf8 = asUtf8(bytes);
  if (utf8 !== null) return utf8;
  return hint ? decodeBytes(bytes, hint) : windows1252(bytes);
}
