/**
 * The `contacts` tools: look people up in the contact book
 * (`service.mail.contacts.read`) and keep it (`service.mail.contacts.write`).
 * Every call asks the contacts actor, which answers the book's reads too;
 * the record's rules are the protocol's (`ContactRecordInput`), so a tool
 * refuses exactly what the admin routes refuse, naming the rule and never
 * the value (51001). A contact the book does not hold is 53001 naming only
 * its identifier — an edit racing an erasure included; amending a collected
 * contact is 58002 saying to promote it first. docs/contacts.md "Tools".
 */
import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import {
  CONTACT_BOUNDS,
  ContactId,
  ContactRecordInput,
  ContactReply,
  CONTACTS_READ_PERMISSION,
  CONTACTS_WRITE_PERMISSION,
  EraseReply,
  ListReply,
  MaybeContactReply,
  PROMOTE_FIRST,
  PromoteReply,
  recordOf,
  ReplaceReply,
  type ContactRecord,
} from '../../../actors/contacts/protocol.ts';
import { AppError } from '../../../runtime/errors.ts';
import { decodeContactCursor, encodeContactCursor } from '../contact-cursor.ts';
import { defineTool, type Tool } from '../tool.ts';

/** A page an agent reads by default: a lookup wants a few names, not the book's 50 (the admin default). */
export const CONTACT_PAGE_DEFAULT = 20;

const readOnly: ToolAnnotations = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };

const ContactIdInput = ContactId.describe('As a contact tool answered it (c and a number)');

const recordShape = ContactRecordInput.shape;
const recordFields = {
  name: recordShape.name.describe(`The person's name (at most ${CONTACT_BOUNDS.nameLength} characters)`),
  addresses: recordShape.addresses.describe(
    `1 to ${CONTACT_BOUNDS.addresses} plain addresses (local@domain), no two the same; with several, exactly one has preferred true`,
  ),
  note: recordShape.note.describe(`Optional text (at most ${CONTACT_BOUNDS.noteLength} characters); absent or null: none`),
};

/** The whole record checked by the protocol's rules (preferred marker, duplicates), each refusal at its member. */
function wholeRecord(fields: z.input<typeof ContactRecordInput>, ctx: z.RefinementCtx): ContactRecord {
  const parsed = ContactRecordInput.safeParse(fields);
  if (parsed.success) return recordOf(parsed.data);
  for (const issue of parsed.error.issues) ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path });
  return z.NEVER;
}

export const ListContactsInput = z.strictObject({
  query: z
    .string()
    .trim()
    .min(1)
    .max(CONTACT_BOUNDS.prefixLength)
    .optional()
    .describe('Names or addresses starting with this, case-insensitive (e.g. "sato", "sato@example")'),
  origin: z.enum(['Asserted', 'Collected']).optional().describe('Asserted: entered by the owner; Collected: gathered from mail'),
  pageSize: z.number().int().min(1).max(CONTACT_BOUNDS.pageMax).default(CONTACT_PAGE_DEFAULT).describe(`1-${CONTACT_BOUNDS.pageMax}`),
  cursor: z.string().min(1).max(2_000).optional().describe('nextCursor of the previous page; keep the same query and origin'),
});
export const ContactIdOnly = z.strictObject({ contactId: ContactIdInput });
export const CreateContactInput = z.strictObject(recordFields).transform(wholeRecord);
export const UpdateContactInput = z
  .strictObject({ contactId: ContactIdInput, ...recordFields })
  .transform(({ contactId, ...fields }, ctx) => ({ contactId, record: wholeRecord(fields, ctx) }));

/** A contact the book does not hold (never held, erased, or erased while an edit ran): 53001 naming the identifier only. */
const notHeld = (contactId: string): AppError => new AppError('E_NOT_FOUND', { message: `The contact book holds no contact ${contactId}` });

export const contactsTools: readonly Tool[] = [
  defineTool({
    name: 'list_contacts',
    title: 'List contacts',
    description: 'Contacts in name order, optionally those whose name or an address starts with query; pages with nextCursor.',
    category: 'contacts',
    permission: CONTACTS_READ_PERMISSION,
    annotations: { title: 'List contacts', ...readOnly },
    input: ListContactsInput,
    async run({ query, origin, pageSize, cursor }, ctx) {
      const filters = { query, origin };
      const after = cursor === undefined ? undefined : decodeContactCursor(cursor, filters);
      const page = await ctx.contacts.ask(
        {
          type: 'contacts.list',
          pageSize,
          ...(origin !== undefined ? { origin } : {}),
          ...(query !== undefined ? { prefix: query } : {}),
          ...(after !== undefined ? { after } : {}),
        },
        { reply: ListReply, deadlineMs: ctx.deadlineMs },
      );
      return { contacts: page.contacts, nextCursor: page.next === null ? null : encodeContactCursor(page.next, filters) };
    },
  }),
  defineTool({
    name: 'get_contact',
    title: 'Read a contact',
    description: 'One contact by contactId: name, origin, addresses (one preferred), note.',
    category: 'contacts',
    permission: CONTACTS_READ_PERMISSION,
    annotations: { title: 'Read a contact', ...readOnly },
    input: ContactIdOnly,
    async run({ contactId }, ctx) {
      const { contact } = await ctx.contacts.ask({ type: 'contacts.get', id: contactId }, { reply: MaybeContactReply, deadlineMs: ctx.deadlineMs });
      if (contact === null) throw notHeld(contactId);
      return { contact };
    },
  }),
  defineTool({
    name: 'create_contact',
    title: 'Create a contact',
    description: 'Record a person the owner vouches for (origin Asserted). Answers the contact with its id.',
    category: 'contacts',
    permission: CONTACTS_WRITE_PERMISSION,
    annotations: { title: 'Create a contact', readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    input: CreateContactInput,
    async run(record, ctx) {
      const { contact } = await ctx.contacts.ask({ type: 'contacts.create', record }, { reply: ContactReply, deadlineMs: ctx.deadlineMs });
      return { contact };
    },
  }),
  defineTool({
    name: 'update_contact',
    title: 'Update a contact',
    description: 'Replace an asserted contact with the whole record stated again (omitted note: none). A collected one must be promoted first.',
    category: 'contacts',
    permission: CONTACTS_WRITE_PERMISSION,
    annotations: { title: 'Update a contact', readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    input: UpdateContactInput,
    async run({ contactId, record }, ctx) {
      const reply = await ctx.contacts.ask({ type: 'contacts.replace', id: contactId, record }, { reply: ReplaceReply, deadlineMs: ctx.deadlineMs });
      if (reply.kind === 'absent') throw notHeld(contactId);
      if (reply.kind === 'collected') throw new AppError('E_CONTACT_COLLECTED', { message: `Contact ${contactId}: ${PROMOTE_FIRST}` });
      return { contact: reply.contact };
    },
  }),
  defineTool({
    name: 'delete_contact',
    title: 'Delete a contact',
    description: 'Erase a person: the contact and the collected contacts of its addresses. Irreversible. Answers how many went; none held is no error.',
    category: 'contacts',
    permission: CONTACTS_WRITE_PERMISSION,
    annotations: { title: 'Delete a contact', readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    input: ContactIdOnly,
    async run({ contactId }, ctx) {
      const erased = await ctx.contacts.ask({ type: 'contacts.erase', id: contactId }, { reply: EraseReply, deadlineMs: ctx.deadlineMs });
      // The identity and counts, never the person (admin-surface.md "Contact routes" 4).
      return { id: erased.id, removed: { contacts: erased.contacts, addresses: erased.addresses } };
    },
  }),
  defineTool({
    name: 'promote_contact',
    title: 'Promote a contact',
    description: 'Make a collected contact an asserted one, so it can be updated. An asserted one answers promoted false.',
    category: 'contacts',
    permission: CONTACTS_WRITE_PERMISSION,
    annotations: { title: 'Promote a contact', readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    input: ContactIdOnly,
    async run({ contactId }, ctx) {
      const reply = await ctx.contacts.ask({ type: 'contacts.promote', id: contactId }, { reply: PromoteReply, deadlineMs: ctx.deadlineMs });
      if (reply.kind === 'absent') throw notHeld(contactId);
      return { contact: reply.contact, promoted: reply.kind === 'promoted' };
    },
  }),
];
