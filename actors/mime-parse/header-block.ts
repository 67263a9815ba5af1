/**
 * Reads a header block out of raw bytes without decoding anything: the
 * fields (lower-cased name, unfolded value as a latin1 string, so one char is
 * one byte and nothing is lost) and the offset where the body starts.
 *
 * Tolerant by design, as real mail demands:
 * - the block ends at the first empty line; when there is none, at the first
 *   line that is neither a field nor a continuation (a missing separator);
 * - a first line that starts with white space is read as a field, not a
 *   continuation of nothing;
 * - a line that is not a field is a badly folded continuation of the field
 *   before it when an empty line ends the block further on (gateways that
 *   fold without indenting); when no empty line follows, only when the next
 *   line is a field (a parameter wrapped without indentation);
 * - a block is read from at most `limit` bytes; the rest is body.
 *
 * Private to actors/mime-parse/.
 */

export type HeaderFields = Map<string, string[]>;

export type HeaderBlock = {
  fields: HeaderFields;
  /** Number of field lines recognised. */
  count: number;
  /** Absolute offset of the first body byte. */
  bodyStart: number;
};

/** A field line: a printable name without colon or space, optional blanks, then a colon. */
const FIELD = /^([\x21-\x39\x3b-\x7e]{1,200})[ \t]*:/;
const MAX_FIELD_CHARS = 64 * 1024;

/**
 * Offset just past the first empty line in [start, end), or -1. The CRLF
 * form is looked for first and the bare-LF form only before it: mail from
 * IMAP is CRLF, where a search for LF LF found nothing and so read on to
 * `end` (up to 1 MiB of a message's body for its top block, 64 KiB for
 * every part's), the largest self time of the parse in the realistic
 * corpus's profile (docs/performance.md, "Initial mirror").
 */
function emptyLineEnd(buf: Uint8Array, start: number, end: number): number {
  if (buf[start] === 10) return start + 1;
  if (buf[start] === 13 && buf[start + 1] === 10) return start + 2;
  const view = Buffer.from(buf.buffer, buf.byteOffset + start, end - start);
  const crlf = view.indexOf('\n\r\n');
  // An LF LF before the CRLF form starts at most one byte before it (view[crlf + 1] is CR).
  const lf = (crlf === -1 ? view : view.subarray(0, crlf + 1)).indexOf('\n\n');
  if (lf !== -1) return start + lf + 2;
  return crlf === -1 ? -1 : start + crlf + 3;
}

export function readHeaderBlock(buf: Uint8Array, start: number, end: number, limit: number): HeaderBlock {
  const scanEnd = Math.min(end, start + limit);
  const blank = emptyLineEnd(buf, start, scanEnd);
  const blockEnd = blank === -1 ? scanEnd : blank;
  const text = Buffer.from(buf.buffer, buf.byteOffset + start, blockEnd - start).toString('latin1');
  const fields: HeaderFields = new Map();
  let count = 0;
  let name: string | null = null;
  let value = '';
  const flush = (): void => {
    if (name === null) return;
    const list = fields.get(name);
    const v = value.trim();
    if (list) list.push(v);
    else fields.set(name, [v]);
    count += 1;
    name = null;
  };
  let pos = 0;
  let bodyAt = blank === -1 ? blockEnd : blank;
  while (pos < text.length) {
    const nl = text.indexOf('\n', pos);
    const next = nl === -1 ? text.length : nl + 1;
    const line = text.slice(pos, nl === -1 ? text.length : nl > pos && text.charCodeAt(nl - 1) === 13 ? nl - 1 : nl);
    if (line.length === 0 || line === '\r') {
      bodyAt = start + next;
      break;
    }
    const first = line.charCodeAt(0);
    if ((first === 32 || first === 9) && name !== null) {
      if (value.length < MAX_FIELD_CHARS) value += line;
      pos = next;
      continue;
    }
    const candidate = first === 32 || first === 9 ? line.trimStart() : line;
    const match = FIELD.exec(candidate);
    if (match) {
      flush();
      name = match[1]!.toLowerCase();
      value = candidate.slice(match[0].length, match[0].length + MAX_FIELD_CHARS);
      pos = next;
      continue;
    }
    if (name !== null && (blank !== -1 || FIELD.test(lineAt(text, next)))) {
      if (value.length < MAX_FIELD_CHARS) value += ` ${line}`;
      pos = next;
      continue;
    }
    // Neither a field nor a continuation: the separator is missing and the body starts here.
    bodyAt = start + pos;
    break;
  }
  flush();
  return { fields, count, bodyStart: Math.min(bodyAt, end) };
}

function lineAt(text: string, pos: number): string {
  const nl = text.indexOf('\n', pos);
  return text.slice(pos, nl === -1 ? text.length : nl);
}

/** First value of a field, or null. */
export function first(fields: HeaderFields, name: string): string | null {
  return fields.get(name)?.[0] ?? null;
}
