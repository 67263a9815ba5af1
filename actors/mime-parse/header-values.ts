/**
 * Header values as agents need them: message ids normalised to `<id>`, the
 * subject decoded, addresses as {name, address}, and
 * Content-Type / Content-Disposition as a value plus parameters (RFC 2231
 * continuations and encoded words decoded). Every function takes the raw
 * latin1 value from header-block.ts and never throws on garbage.
 *
 * Private to actors/mime-parse/.
 */
import libmime from 'libmime';
import addressparser, { type Address as ParsedAddress } from 'nodemailer/lib/addressparser';
import type { Address } from './protocol.ts';
import { headerText } from './charsets.ts';

/** Longest message id kept; a longer one is garbage (fuzzers) and dropped. */
const MAX_ID_CHARS = 998;
/** References kept: the first (the root) and the last 99. */
const MAX_REFERENCES = 100;
const MAX_SUBJECT_CHARS = 2_000;
const MAX_ADDRESSES = 1_000;
const MAX_NAME_CHARS = 500;
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

function flatten(list: ParsedAddress[], out: ParsedAddress[]): void {
  for (const entry of list) {
    if (out.length >= MAX_ADDRESSES) return;
    if (entry.group) flatten(entry.group, out);
    else out.push(entry);
  }
}

/** Mailboxes of one or more address headers (groups flattened, names decoded). */
export function addresses(values: string[] | undefined, hint: string | null): Address[] {
  if (!values) return [];
  const text = values.map((v) => headerText(v, hint)).join(', ');
  const mailboxes: ParsedAddress[] = [];
  flatten(addressparser(text), mailboxes);
  const out: Address[] = [];
  for (const entry of mailboxes) {
    let name = (entry.name ?? '').includes('=?') ? libmime.decodeWords(entry.name ?? '') : (entry.name ?? '');
    name = name.replace(CONTROL, ' ').replace(/\s+/g, ' ').trim().slice(0, MAX_NAME_CHARS);
    let address = (entry.address ?? '').replace(CONTROL, '').trim();
    // A lone token with no address ("MAILER-DAEMON") is a local address, not a name.
    if (!address && name && !/\s/.test(name)) [address, name] = [name, ''];
    if (!address && !name) continue;
    const at = address.lastIndexOf('@');
    if (at > 0) address = address.slice(0, at) + address.slice(at).toLowerCase();
    out.push({ name, address: address.slice(0, MAX_ID_CHARS) });
  }
  return out;
}

export type Structured = { value: string; params: Record<string, string> };

/**
 * Content-Type or Content-Disposition: lower-cased value and parameters, with
 * RFC 2231 and encoded words decoded. `application/pdf name="x.pdf"` (a
 * missing semicolon) is repaired.
 */
export function structured(latin1: string | null, hint: string | null): Structured {
  if (!latin1) return { value: '', params: {} };
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
