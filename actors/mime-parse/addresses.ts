/**
 * Address headers (From, Sender, Reply-To, To, Cc) as {name, address}:
 * groups flattened, names decoded (encoded words, raw 8-bit), domains
 * lower-cased, at most MAX_ADDRESSES per field. Lists of plain mailboxes
 * (`a@x`, `Name <a@x>`, `"Name, Jr" <a@x>`) are read here directly, which is
 * most mail; anything else goes to nodemailer's addressparser, which
 * tolerates garbage.
 *
 * Private to actors/mime-parse/.
 */
import libmime from 'libmime';
import addressparser, { type Address as ParsedAddress } from 'nodemailer/lib/addressparser';
import { headerText } from './charsets.ts';
import { MAX_ID_CHARS } from './header-values.ts';
import type { Address } from './protocol.ts';

const MAX_ADDRESSES = 1_000;
const MAX_NAME_CHARS = 500;
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f]/g;
const ADDR = String.raw`[^<>\s,;:"()\\\[\]@]+@[^<>\s,;:"()\\\[\]@]+`;
const BARE = new RegExp(`^\\s*(${ADDR})\\s*$`);
const NAMED = new RegExp(`^\\s*(?:"([^"\\\\]*)"|([^"<>,;:@()\\\\]*?))\\s*<(${ADDR})>\\s*$`);

/** One plain mailbox, or null when it needs the full parser. */
function plain(item: string): ParsedAddress | null {
  const bare = BARE.exec(item);
  if (bare) return { name: '', address: bare[1]! };
  const named = NAMED.exec(item);
  return named ? { name: named[1] ?? named[2] ?? '', address: named[3]! } : null;
}

/** Plain mailboxes split at commas outside quotes, or null when any item is not plain. */
function plainList(text: string): ParsedAddress[] | null {
  if (/[():\\]/.test(text)) return null;
  const items = text.match(/(?:"[^"]*"|[^,"])+/g) ?? [];
  const out: ParsedAddress[] = [];
  for (const item of items) {
    if (item.trim() === '') continue;
    const one = plain(item);
    if (!one) return null;
    out.push(one);
  }
  return out;
}

function flatten(list: ParsedAddress[], out: ParsedAddress[]): void {
  for (const entry of list) {
    if (out.length >= MAX_ADDRESSES) return;
    if (entry.group) flatten(entry.group, out);
    else out.push(entry);
  }
}

export function addresses(values: string[] | undefined, hint: string | null): Address[] {
  if (!values) return [];
  const text = values.map((v) => headerText(v, hint)).join(', ');
  let mailboxes = plainList(text);
  if (mailboxes === null) {
    mailboxes = [];
    flatten(addressparser(text), mailboxes);
  }
  const out: Address[] = [];
  for (const entry of mailboxes.slice(0, MAX_ADDRESSES)) {
    let name = entry.name ?? '';
    if (name.includes('=?')) name = libmime.decodeWords(name);
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
