/**
 * The MIME encoders the mailbox generator needs: text → charset bytes (utf-8, us-ascii,
 * iso-8859-1, windows-1252, iso-2022-jp), quoted-printable, wrapped base64, RFC 2047 encoded
 * words and header folding. CRLF everywhere. Owns encoding only, no message structure.
 */

export type Charset = 'utf-8' | 'us-ascii' | 'iso-8859-1' | 'windows-1252' | 'iso-2022-jp';

/** windows-1252 bytes 0x80–0x9F that differ from Latin-1 (the printable ones). */
const CP1252: Record<string, number> = {
  '€': 0x80,
  '‚': 0x82,
  ƒ: 0x83,
  '„': 0x84,
  '…': 0x85,
  '†': 0x86,
  '‡': 0x87,
  ˆ: 0x88,
  '‰': 0x89,
  Š: 0x8a,
  '‹': 0x8b,
  Œ: 0x8c,
  Ž: 0x8e,
  '‘': 0x91,
  '’': 0x92,
  '“': 0x93,
  '”': 0x94,
  '•': 0x95,
  '–': 0x96,
  '—': 0x97,
  '˜': 0x98,
  '™': 0x99,
  š: 0x9a,
  '›': 0x9b,
  œ: 0x9c,
  ž: 0x9e,
  Ÿ: 0x9f,
};

const CP1252_TEXT = new RegExp(`^[\\x00-\\x7f\\xa0-\\xff${Object.keys(CP1252).join('')}]*$`, 'u');

let jisTable: Map<string, [number, number]> | undefined;
/** Unicode → JIS X 0208 row/cell bytes, learnt once from the platform's ISO-2022-JP decoder. */
function jis(): Map<string, [number, number]> {
  if (jisTable) return jisTable;
  const decoder = new TextDecoder('iso-2022-jp');
  const table = new Map<string, [number, number]>();
  for (let a = 0x21; a < 0x7f; a++) {
    for (let b = 0x21; b < 0x7f; b++) {
      const s = decoder.decode(Uint8Array.of(0x1b, 0x24, 0x42, a, b, 0x1b, 0x28, 0x42));
      if (s.length === 1 && s !== '\ufffd' && !table.has(s)) table.set(s, [a, b]);
    }
  }
  jisTable = table;
  return table;
}

/** Whether every character of `text` exists in `charset`. */
export function encodable(text: string, charset: Charset): boolean {
  switch (charset) {
    case 'utf-8':
      return true;
    case 'us-ascii':
      return /^[\x00-\x7f]*$/.test(text);
    case 'iso-8859-1':
      return /^[\x00-\xff]*$/.test(text);
    case 'windows-1252':
      return CP1252_TEXT.test(text);
    case 'iso-2022-jp': {
      const table = jis();
      return [...text].every((ch) => ch < '\x80' || table.has(ch));
    }
  }
}

export function encodeText(text: string, charset: Charset): Buffer {
  switch (charset) {
    case 'utf-8':
      return Buffer.from(text, 'utf8');
    case 'us-ascii':
    case 'iso-8859-1':
      if (!encodable(text, charset)) throw new Error(`text not representable in ${charset}`);
      return Buffer.from(text, 'latin1');
    case 'windows-1252': {
      if (/^[\x00-\x7f]*$/.test(text)) return Buffer.from(text, 'latin1');
      const max = 0xff;
      const out = Buffer.alloc(text.length);
      let i = 0;
      for (const ch of text) {
        const cp = ch.codePointAt(0)!;
        const mapped = CP1252[ch];
        if (mapped !== undefined) out[i++] = mapped;
        else if (cp <= max && !(cp >= 0x80 && cp < 0xa0)) out[i++] = cp;
        else throw new Error(`U+${cp.toString(16)} not in ${charset}`);
      }
      return out.subarray(0, i);
    }
    case 'iso-2022-jp': {
      const table = jis();
      const bytes: number[] = [];
      let kanji = false;
      for (const ch of text) {
        const cp = ch.codePointAt(0)!;
        if (cp < 0x80) {
          if (kanji) bytes.push(0x1b, 0x28, 0x42);
          kanji = false;
          bytes.push(cp);
          continue;
        }
        const code = table.get(ch);
        if (!code) throw new Error(`U+${cp.toString(16)} not in iso-2022-jp`);
        if (!kanji) bytes.push(0x1b, 0x24, 0x42);
        kanji = true;
        bytes.push(code[0], code[1]);
      }
      if (kanji) bytes.push(0x1b, 0x28, 0x42);
      return Buffer.from(bytes);
    }
  }
}

/** Base64 in CRLF-terminated lines of 76 characters. */
export function base64Lines(data: Buffer): Buffer {
  const b64 = Buffer.from(data.toString('base64'), 'latin1');
  const lines = Math.ceil(b64.length / 76);
  const out = Buffer.allocUnsafe(b64.length + lines * 2);
  let o = 0;
  for (let i = 0; i < b64.length; i += 76) {
    o += b64.copy(out, o, i, Math.min(i + 76, b64.length));
    out[o++] = 13;
    out[o++] = 10;
  }
  return out.subarray(0, o);
}

const HEX = '0123456789ABCDEF';

/** Quoted-printable (RFC 2045 §6.7) of CRLF text: hard line breaks kept, soft breaks at 76. */
export function quotedPrintable(data: Buffer): Buffer {
  const out = Buffer.allocUnsafe(data.length * 3 + Math.ceil((data.length * 3) / 73) * 3 + 3);
  let o = 0;
  let lineLen = 0;
  for (let i = 0; i < data.length; i++) {
    const c = data[i]!;
    if (c === 13 && data[i + 1] === 10) {
      out[o++] = 13;
      out[o++] = 10;
      lineLen = 0;
      i++;
      continue;
    }
    const atEol = i + 1 === data.length || (data[i + 1] === 13 && data[i + 2] === 10);
    const literal = (c >= 33 && c <= 126 && c !== 61) || ((c === 32 || c === 9) && !atEol);
    const width = literal ? 1 : 3;
    if (lineLen + width > 75) {
      out[o++] = 0x3d;
      out[o++] = 13;
      out[o++] = 10;
      lineLen = 0;
    }
    if (literal) {
      out[o++] = c;
    } else {
      out[o++] = 0x3d;
      out[o++] = HEX.charCodeAt(c >> 4);
      out[o++] = HEX.charCodeAt(c & 15);
    }
    lineLen += width;
  }
  return out.subarray(0, o);
}

/** Split text into runs whose encoding stays under `maxBytes`, never inside a character. */
function chunks(text: string, charset: Charset, maxBytes: number): string[] {
  const out: string[] = [];
  let cur = '';
  for (const ch of text) {
    if (cur && encodeText(cur + ch, charset).length > maxBytes) {
      out.push(cur);
      cur = '';
    }
    cur += ch;
  }
  if (cur) out.push(cur);
  return out;
}

/** RFC 2047 encoded words (each ≤ 75 chars), space separated; plain text if pure printable ASCII. */
export function encodeWords(text: string, charset: Charset, mode: 'B' | 'Q'): string {
  if (/^[\x20-\x7e]*$/.test(text) && !text.includes('=?')) return text;
  const cs = charset.toUpperCase();
  const overhead = cs.length + 7;
  if (mode === 'B') {
    const maxBytes = Math.floor((75 - overhead) / 4) * 3;
    return chunks(text, charset, maxBytes)
      .map((c) => `=?${cs}?B?${encodeText(c, charset).toString('base64')}?=`)
      .join(' ');
  }
  const q = (s: string) =>
    [...encodeText(s, charset)]
      .map((b) => (b === 32 ? '_' : /[A-Za-z0-9!*+\-/]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `=${HEX[b >> 4]}${HEX[b & 15]}`))
      .join('');
  const out: string[] = [];
  let cur = '';
  for (const ch of text) {
    if (cur && q(cur + ch).length > 75 - overhead) {
      out.push(cur);
      cur = '';
    }
    cur += ch;
  }
  if (cur) out.push(cur);
  return out.map((c) => `=?${cs}?Q?${q(c)}?=`).join(' ');
}

/** `Name: value` folded at whitespace to lines of at most 78 characters where possible. */
export function header(name: string, value: string): string {
  const words = value.split(' ');
  const lines: string[] = [];
  let line = `${name}:`;
  for (const w of words) {
    if (line.length + 1 + w.length > 78 && line.trim().length > name.length + 1) {
      lines.push(line);
      line = ` ${w}`;
    } else {
      line += ` ${w}`;
    }
  }
  lines.push(line);
  return `${lines.join('\r\n')}\r\n`;
}
