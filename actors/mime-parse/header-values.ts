/**
 * Header values as agents need them: message ids normalised to `<id>`, the
 * subject decoded, and Content-Type / Content-Disposition as a value plus
 * parameters (RFC 2231 continuations and encoded words decoded). Every
 * function takes the raw latin1 value from header-block.ts and never throws
 * on garbage. Addresses are in addresses.ts, dates in date.ts.
 *
 * Private to actors/mime-parse/.
 */
import libmime from 'libmime';
import { headerText } from './charsets.ts';

/** Longest message id kept; a longer one is garbage (fuzzers) and dropped. */
export const MAX_ID_CHARS = 998;
/** References kept: the first (the root) and the last 99. */
const MAX_REFERENCES = 100;
const MAX_SUBJECT_CHARS = 2_000;
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f]/g;

/** Decoded, single-line text of a header value. */
export function decodeText(latin1: string, hint: string | null): string {
  let text = headerText(latin1, hint);
  if (text.includes('=?')) text = libmime.decodeWords(text);
  return text.replace(CONTROL, ' ').replace(/\s+/g, ' ').trim();
}

export function subject(values: string[] | undefined, hint: string | null): string | null {
  if (!values) return null;
  return decodeText(values[0]!, hint).slice(0, MAX_SUBJECT_CHARS);
}

function cleanId(inner: string): string | null {
  const id = inner.replace(/\s+/g, '');
  return id.length === 0 || id.length > MAX_ID_CHARS ? null : `<${id}>`;
}

/** Every `<id>` in a value, in order; bare tokens with an `@` when there are no brackets. */
export function messageIds(value: string | null): string[] {
  if (!value) return [];
  const out: string[] = [];
  if (value.includes('<')) {
    for (const m of value.matchAll(/<([^<>]*)>/g)) {
      const id = cleanId(m[1]!);
      if (id) out.push(id);
    }
    return out;
  }
  for (const token of value.split(/[\s,]+/)) {
    if (!token.includes('@')) continue;
    const id = cleanId(token);
    if (id) out.push(id);
  }
  return out;
}

/** The message's own id: a bracketed id, or the whole value when it is one token. */
export function ownId(value: string | null): string | null {
  if (!value) return null;
  const ids = messageIds(value);
  if (ids.length > 0) return ids[0]!;
  const token = value.trim();
  return /^[^\s<>]+$/.test(token) ? cleanId(token) : null;
}

export function references(value: string | null): string[] {
  const ids = [...new Set(messageIds(value))];
  if (ids.length <= MAX_REFERENCES) return ids;
  return [ids[0]!, ...ids.slice(ids.length - (MAX_REFERENCES - 1))];
}

export type Structured = { value: string; params: Record<string, string> };

/**
 * Content-Type or Content-Disposition: lower-cased value and parameters, with
 * RFC 2231 and encoded words decoded. `application/pdf name="x.pdf"` (a
 * missing semicolon) is repaired.
 */
export function structured(latin1: string | null, hint: string | null): Structured {
  if (!latin1) return { value: '', params: {} };
  const simple = plainStructured(latin1);
  if (simple) return simple;
  const parsed = libmime.parseHeaderValue(headerText(latin1, hint));
  let value = String(parsed.value ?? '').trim();
  const params: Record<string, string> = {};
  const decoded = new Set((parsed as { decodedParams?: string[] }).decodedParams ?? []);
  const space = value.search(/\s/);
  if (space !== -1) {
    const rest = libmime.parseHeaderValue(`x; ${value.slice(space + 1)}`);
    for (const [k, v] of Object.entries(rest.params)) params[k] = String(v);
    value = value.slice(0, space);
  }
  value = value.toLowerCase();
  for (const [k, v] of Object.entries(parsed.params)) {
    const text = String(v);
    params[k] = !decoded.has(k) && text.includes('=?') ? libmime.decodeWords(text) : text;
  }
  return { value, params };
}

const TYPE_VALUE = /^\s*([^\s;"]+)\s*/y;
const PARAM = /;\s*([A-Za-z0-9!#$%&'+.^_`|~-]+)\s*=\s*(?:"([^"\\]*)"|([^\s;"]+))\s*/y;

/**
 * The common case without libmime: `type/sub; key=value; key="value"` in
 * plain ASCII with no RFC 2231 or encoded words. Anything else: null.
 */
function plainStructured(value: string): Structured | null {
  if (/[*\x80-\xff]|=\?/.test(value)) return null;
  TYPE_VALUE.lastIndex = 0;
  const head = TYPE_VALUE.exec(value);
  if (!head) return null;
  const params: Record<string, string> = {};
  let pos = TYPE_VALUE.lastIndex;
  while (pos < value.length) {
    PARAM.lastIndex = pos;
    const m = PARAM.exec(value);
    if (!m) return /^[;\s]*$/.test(value.slice(pos)) ? { value: head[1]!.toLowerCase(), params } : null;
    params[m[1]!.toLowerCase()] = m[2] ?? m[3]!;
    pos = PARAM.lastIndex;
  }
  return { value: head[1]!.toLowerCase(), params };
}
