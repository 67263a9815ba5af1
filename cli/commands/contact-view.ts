/**
 * What the `contact` commands share (docs/cli.md "Contacts"): the answers
 * of the contact routes as this client reads them (loosely, as
 * cli/answers.ts does: the members printed must be there, later members
 * pass through), the options naming a contact or its addresses, and the
 * human rendering of a contact.
 *
 * Privacy (admin-surface.md "Contact routes" 5): a name, address or note
 * is printed only on standard output, only by a command whose purpose is to
 * show the contact. No failure sentence here quotes one: they name the
 * option and the rule.
 */
import { z } from 'zod';
import { read } from '../answers.ts';
import type { Context } from '../context.ts';
import { usage } from '../failure.ts';
import { optionalText, requiredText, type Options } from '../options.ts';

export const CONTACTS = '/api/admin/contacts';
export const BY_ADDRESS = `${CONTACTS}/by-address`;
export const COLLECTED = `${CONTACTS}/collected`;
export const contactPath = (id: string, tail = ''): string => `${CONTACTS}/${encodeURIComponent(id)}${tail}`;

const Instant = z.string();
const Count = z.number().int().nonnegative();

export const ContactAnswer = z.looseObject({
  id: z.string(),
  name: z.string(),
  origin: z.string(),
  addresses: z.array(z.looseObject({ address: z.string(), preferred: z.boolean() })),
  note: z.string().nullable(),
  recordedAt: Instant,
  amendedAt: Instant,
});
export type ContactAnswer = z.infer<typeof ContactAnswer>;

export const ContactListingAnswer = z.looseObject({ contacts: z.array(ContactAnswer), nextCursor: z.string().nullable().optional() });
export const ByAddressAnswer = z.looseObject({ contacts: z.array(ContactAnswer) });
export const EraseAnswer = z.looseObject({ id: z.string(), found: z.boolean().optional(), contacts: Count, addresses: Count });
export const EraseCollectedAnswer = z.looseObject({ contacts: Count, addresses: Count });
export const ExportAnswer = z.looseObject({ exportedAt: Instant, contact: ContactAnswer.nullable() });

/** A contact answered by a route (one contact's routes answer the contact itself). */
export function readContact(value: unknown, endpoint: string, route: string): ContactAnswer {
  return read(ContactAnswer, value, endpoint, route);
}

// Options.

const ID = /^c[1-9][0-9]{0,14}$/;

/** `--id`: a contact identifier, `c` and a number, as `contact list` prints it. */
export function contactIdOf(options: Options): string {
  const id = requiredText(options, 'id', 'contact identifier, such as c12');
  if (!ID.test(id)) throw usage('--id takes a contact identifier: c and a number, such as c12 (contact list prints them).');
  return id;
}

/** Every `--address` given (the option repeats); blanks and doubles are usage errors that quote nothing. */
export function addressesOf(options: Options): string[] {
  const value = options.address;
  if (value === undefined || value === false) return [];
  const values = Array.isArray(value) ? value : [value];
  if (values.some((v) => typeof v !== 'string' || v.trim() === '')) throw usage('--address needs a value each time it is given.');
  const addresses = (values as string[]).map((v) => v.trim());
  if (new Set(addresses.map(addressKey)).size !== addresses.length)
    throw usage('--address names the same address twice (addresses compare case-insensitively).');
  return addresses;
}

/** Addresses compare case-insensitively (admin-surface.md "Contact"). */
export function addressKey(address: string): string {
  return address.toLowerCase();
}

/** `--preferred`: one address, compared case-insensitively. */
export function preferredOf(options: Options): string | undefined {
  return optionalText(options, 'preferred')?.trim();
}

/** `--note` or `--clear-note`, never both: the new note, null to clear it, undefined to leave it. */
export function noteChangeOf(options: Options): string | null | undefined {
  const note = optionalText(options, 'note');
  const clear = options['clear-note'] === true;
  if (note !== undefined && clear) throw usage('--note and --clear-note contradict each other; give one.');
  return clear ? null : note;
}

// Rendering.

/**
 * Control characters shown as escapes: a collected name comes from a
 * message's header, and must not drive the operator's terminal or forge
 * a line of a table. A note keeps its line breaks (`lines`).
 */
export function printable(text: string, options: { lines?: boolean } = {}): string {
  const controls = options.lines ? /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029]/g : /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;
  return text.replace(controls, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function addressLines(c: ContactAnswer): string[] {
  return c.addresses.map((a) => `${printable(a.address)}${a.preferred ? ' (preferred)' : ''}`);
}

export function preferredAddress(c: ContactAnswer): string {
  const preferred = c.addresses.find((a) => a.preferred) ?? c.addresses[0];
  return preferred === undefined ? '-' : printable(preferred.address);
}

/** One contact as name/value lines; every address on its own line. */
export function contactLines(ctx: Context, c: ContactAnswer): string {
  const [first = '-', ...rest] = addressLines(c);
  return ctx.out.pairs([
    ['Contact', c.id],
    ['Name', printable(c.name)],
    ['Origin', c.origin],
    ['Addresses', first],
    ...rest.map((line): [string, string] => ['', line]),
    ['Note', c.note === null ? '-' : printable(c.note, { lines: true })],
    ['Recorded at', c.recordedAt],
    ['Amended at', c.amendedAt],
  ]);
}

/** Several contacts, one block each, a blank line between. */
export function contactsLines(ctx: Context, contacts: readonly ContactAnswer[]): string {
  return contacts.map((c) => contactLines(ctx, c)).join('\n\n');
}
