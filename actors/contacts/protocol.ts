/**
 * Public surface of the contacts actor (`contacts`), the writer of the
 * contact book's asserted side (runtime/store/contacts/book.ts; collection
 * is written by the derivation writer as it derives new mail): the record an owner states and
 * its validation, the messages the tools and the admin routes send, their
 * replies, the answer shape, and the child spec. Everything outside this
 * folder imports this file only. docs/contacts.md is the user's account.
 *
 * Reads (list, one, by address, export) are answered by the actor too: the
 * book is small beside the mailbox, its reads are single indexed lookups, and
 * one module keeps the record's rules.
 *
 * Refusals name the rule, never the value: no name, address or note ever
 * reaches a message, a log line or an error (docs/contacts.md "Privacy").
 */
import { z } from 'zod';
import { moduleUrl } from '../../runtime/module-url.ts';
import type { ActorId, ProtocolOf } from '../../runtime/ref.ts';
import { StoreSlice } from '../../runtime/store/store-slice.ts';
import type { ChildSpecInput } from '../../runtime/supervisor/child-spec.ts';

export const CONTACTS_ENTRY = moduleUrl('./actor.ts', import.meta.url);
export const CONTACTS_ID: ActorId<ContactsProtocol> = 'contacts';

/**
 * The child spec of the contacts actor, for service/system-children.ts (which
 * adds its never-give-up restart policy). Permanent, on the system actors'
 * thread like the replay guard: its work is single indexed statements, and
 * everything it holds is in the database, so a restart loses nothing.
 */
export function contactsChild(store: StoreSlice): ChildSpecInput {
  return {
    id: CONTACTS_ID,
    entry: CONTACTS_ENTRY,
    restart: 'permanent',
    shutdownMs: 2_000,
    placement: { kind: 'shared', group: 'system', actorsPerThread: 10 },
    config: store satisfies ContactsConfig,
  };
}

/** Permissions of the agent surface's contact tools (names ours: the spec leaves them open). */
export const CONTACTS_READ_PERMISSION = 'service.mail.contacts.read';
export const CONTACTS_WRITE_PERMISSION = 'service.mail.contacts.write';

/** Bounds of one record and of a page (docs/contacts.md "Bounds"). */
export const CONTACT_BOUNDS = {
  nameLength: 200,
  noteLength: 2_000,
  addresses: 20,
  addressLength: 254,
  prefixLength: 254,
  pageDefault: 50,
  pageMax: 200,
} as const;

/** A contact's identifier: `c` and a number. */
export const CONTACT_ID_PATTERN = /^c[1-9][0-9]{0,14}$/;
export const ContactId = z.string().regex(CONTACT_ID_PATTERN, { error: 'must be a contact identifier (c and a number)' });

/** One mailbox address: local part, @, domain; no spaces, no display name, no angle brackets. */
export const ContactAddressText = z
  .string()
  .min(3)
  .max(CONTACT_BOUNDS.addressLength)
  .regex(/^[^\s@<>,;"]+@[^\s@<>,;"]+\.[^\s@<>,;"]+$/, { error: 'must be one mailbox address (local@domain), without a display name' });

const AddressInput = z.strictObject({ address: ContactAddressText, preferred: z.boolean().optional() });

/**
 * The whole record, as an owner states it (creation and amendment alike):
 * a name, one to twenty addresses (compared case-insensitively: no two the
 * same), exactly one preferred — which must be stated whenever there are
 * several (one address alone is preferred) — and an optional note.
 */
export const ContactRecordInput = z
  .strictObject({
    name: z.string().trim().min(1, { error: 'must not be empty' }).max(CONTACT_BOUNDS.nameLength),
    addresses: z.array(AddressInput).min(1, { error: 'must hold at least one address' }).max(CONTACT_BOUNDS.addresses),
    note: z.string().max(CONTACT_BOUNDS.noteLength).nullable().optional(),
  })
  .superRefine((record, ctx) => {
    const keys = record.addresses.map((a) => a.address.toLowerCase());
    if (new Set(keys).size !== keys.length) ctx.addIssue({ code: 'custom', path: ['addresses'], message: 'must not name the same address twice' });
    const preferred = record.addresses.filter((a) => a.preferred === true).length;
    if (record.addresses.length > 1 && preferred !== 1) {
      ctx.addIssue({ code: 'custom', path: ['addresses'], message: 'must mark exactly one address preferred when there are several' });
    }
    if (record.addresses.length === 1 && record.addresses[0]?.preferred === false) {
      ctx.addIssue({ code: 'custom', path: ['addresses'], message: 'a single address is the preferred one' });
    }
  });
export type ContactRecordInput = z.input<typeof ContactRecordInput>;

/** The record as the store takes it: every address's preferred marker stated, the note null when absent. */
export const ContactRecord = z.strictObject({
  name: z.string(),
  addresses: z.array(z.strictObject({ address: z.string(), preferred: z.boolean() })),
  note: z.string().nullable(),
});
export type ContactRecord = z.infer<typeof ContactRecord>;

/** A validated input as the store's record. */
export function recordOf(input: z.output<typeof ContactRecordInput>): ContactRecord {
  const single = input.addresses.length === 1;
  return {
    name: input.name,
    addresses: input.addresses.map((a) => ({ address: a.address, preferred: single ? true : a.preferred === true })),
    note: input.note ?? null,
  };
}

/** The answer shape of one contact on both surfaces (instants as ISO 8601; origin `Asserted` or `Collected`). */
export const ContactView = z.strictObject({
  id: z.string(),
  name: z.string(),
  origin: z.enum(['Asserted', 'Collected']),
  addresses: z.array(z.strictObject({ address: z.string(), preferred: z.boolean() })),
  note: z.string().nullable(),
  recordedAt: z.string(),
  amendedAt: z.string(),
});
export type ContactView = z.infer<typeof ContactView>;

/** Where a listing resumes (the surfaces seal it into an opaque cursor). */
export const ContactPosition = z.strictObject({ nameKey: z.string(), row: z.number().int().positive() });
export type ContactPosition = z.infer<typeof ContactPosition>;

export const ContactsConfig = StoreSlice;
export type ContactsConfig = z.infer<typeof ContactsConfig>;

/**
 * The record as a message carries it: the store's shape, held to the owner's
 * rules too, so a sender that skipped `ContactRecordInput` is refused
 * (E_PROTOCOL_INVALID) rather than breaking the store's invariants.
 */
const MessageRecord = ContactRecord.refine((record) => ContactRecordInput.safeParse(record).success, {
  error: 'must follow the contact record rules',
});

// Messages. Writes:
export const CreateContact = z.strictObject({ type: z.literal('contacts.create'), record: MessageRecord });
export const ReplaceContact = z.strictObject({ type: z.literal('contacts.replace'), id: ContactId, record: MessageRecord });
export const PromoteContact = z.strictObject({ type: z.literal('contacts.promote'), id: ContactId });
export const EraseContact = z.strictObject({ type: z.literal('contacts.erase'), id: ContactId });
export const EraseCollected = z.strictObject({ type: z.literal('contacts.erase-collected') });
// Reads:
export const ListContacts = z.strictObject({
  type: z.literal('contacts.list'),
  origin: z.enum(['Asserted', 'Collected']).optional(),
  /** Names or addresses starting with this, compared in their comparison forms. */
  prefix: z.string().max(CONTACT_BOUNDS.prefixLength).optional(),
  pageSize: z.number().int().min(1).max(CONTACT_BOUNDS.pageMax),
  after: ContactPosition.optional(),
});
export const GetContact = z.strictObject({ type: z.literal('contacts.get'), id: ContactId });
export const ContactsByAddress = z.strictObject({ type: z.literal('contacts.by-address'), address: ContactAddressText });
export const ExportContact = z.strictObject({ type: z.literal('contacts.export'), id: ContactId });

export const ContactsMessage = z.discriminatedUnion('type', [
  CreateContact,
  ReplaceContact,
  PromoteContact,
  EraseContact,
  EraseCollected,
  ListContacts,
  GetContact,
  ContactsByAddress,
  ExportContact,
]);
export type ContactsMessage = z.infer<typeof ContactsMessage>;

// Replies.
export const ContactReply = z.strictObject({ contact: ContactView });
export const MaybeContactReply = z.strictObject({ contact: ContactView.nullable() });
/** `collected`: amending a collected contact is refused until it is promoted. `absent`: the book does not hold it (an edit racing an erasure too). */
export const ReplaceReply = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('replaced'), contact: ContactView }),
  z.strictObject({ kind: z.literal('absent') }),
  z.strictObject({ kind: z.literal('collected') }),
]);
export const PromoteReply = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('promoted'), contact: ContactView }),
  z.strictObject({ kind: z.literal('already-asserted'), contact: ContactView }),
  z.strictObject({ kind: z.literal('absent') }),
]);
/** Deleting answers the identity and counts, never the person; nothing held: zero counts, still a success. */
export const EraseReply = z.strictObject({ id: z.string(), found: z.boolean(), contacts: z.number().int(), addresses: z.number().int() });
export const EraseCollectedReply = z.strictObject({ contacts: z.number().int(), addresses: z.number().int() });
export const ListReply = z.strictObject({ contacts: z.array(ContactView), next: ContactPosition.nullable() });
export const ByAddressReply = z.strictObject({ contacts: z.array(ContactView) });
/** Everything held about one person at the instant of export. */
export const ExportReply = z.strictObject({ exportedAt: z.string(), contact: ContactView.nullable() });

export type ContactsProtocol = ProtocolOf<
  z.input<typeof ContactsMessage>,
  {
    'contacts.create': z.infer<typeof ContactReply>;
    'contacts.replace': z.infer<typeof ReplaceReply>;
    'contacts.promote': z.infer<typeof PromoteReply>;
    'contacts.erase': z.infer<typeof EraseReply>;
    'contacts.erase-collected': z.infer<typeof EraseCollectedReply>;
    'contacts.list': z.infer<typeof ListReply>;
    'contacts.get': z.infer<typeof MaybeContactReply>;
    'contacts.by-address': z.infer<typeof ByAddressReply>;
    'contacts.export': z.infer<typeof ExportReply>;
  }
>;

/** The sentence of the refusal to amend a collected contact in place (both surfaces). */
export const PROMOTE_FIRST = 'a collected contact cannot be amended in place: promote it first (it then becomes an asserted contact)';
