/**
 * Contact routes (docs/admin-api.md "Contacts"; spec "Contact routes" 1–5):
 * a keyset page of the book, one contact, whoever uses one address, the
 * export of one person; recording, replacing and promoting a contact;
 * erasing one person, or every collected contact. Shapes: this file and the
 * contract (actors/contacts/protocol.ts), which the reference section of
 * docs/admin-api.md is generated from.
 *
 * `/contacts/collected` and `/contacts/by-address` are paths written out, so
 * they win over `/contacts/{id}` (identifiers are `c<number>`); another
 * method there is a 405, never a contact named `collected`.
 */
import { z } from 'zod';
import { CONTACT_BOUNDS, ContactAddressText, ContactRecordInput, ContactView } from '../../../actors/contacts/protocol.ts';
import { CursorField, pageSizeField } from '../query-fields.ts';
import { defineRoute, WRITE_BODY_BYTES } from '../route.ts';
import {
  CONTACTS_PATH,
  contactsByAddress,
  createContact,
  eraseCollectedContacts,
  eraseContact,
  exportContact,
  listContacts,
  promoteContact,
  replaceContact,
  showContact,
} from '../use-cases/contacts.ts';

/**
 * The body limit of a whole record (creation, replacement): 16 KB, the
 * larger of the spec's two, since a record at every bound (a 200-character
 * name, a 2,000-character note, 20 addresses of 254) is past 4 KB and still
 * well inside 16 KB. Every other contact write takes no body (4 KB).
 */
export const CONTACT_RECORD_BODY_BYTES = 16 * 1024;

const ORIGIN_SENTENCE = 'Send origin as Asserted or Collected, or leave it out.';

export const ContactsQuery = z.strictObject({
  origin: z.enum(['Asserted', 'Collected'], { error: ORIGIN_SENTENCE }).optional().describe('Only contacts of this origin'),
  pageSize: pageSizeField(CONTACT_BOUNDS.pageMax, CONTACT_BOUNDS.pageDefault),
  cursor: CursorField,
});

export const ContactsAnswer = z.strictObject({
  contacts: z.array(ContactView).describe("Ordered by the name's comparison form (case-folded, spaces collapsed), then identifier"),
  nextCursor: z.string().optional().describe('Present while more remain: send it as cursor, with the same origin, for the next page'),
});

export const ByAddressQuery = z.strictObject({
  address: ContactAddressText.describe('One mailbox address, compared case-insensitively'),
});

export const ByAddressAnswer = z.strictObject({
  contacts: z.array(ContactView).describe('Every contact, asserted or collected, holding the address; none is an empty list'),
});

export const ContactParams = z.strictObject({
  id: z.string().describe('A contact as the listing names it, such as `c12`; any other text, or a contact the book does not hold, is answered 404'),
});

export const ErasureParams = z.strictObject({
  id: z
    .string()
    .describe('A contact as the listing names it, such as `c12`; other text is answered 404, a contact the book does not hold 200 with zero counts'),
});

const Count = z.number().int().nonnegative();

export const ContactErasureAnswer = z.strictObject({
  id: z.string().describe('The contact named'),
  found: z.boolean().describe('Whether the book held it; false: nothing was removed, and the counts are zero'),
  contacts: Count.describe('Contacts removed: the one named and every collected contact of one of its addresses'),
  addresses: Count.describe('Addresses removed with them'),
});

export const CollectedErasureAnswer = z.strictObject({
  contacts: Count.describe('Collected contacts removed'),
  addresses: Count.describe('Their addresses removed'),
});

export const ContactExportAnswer = z.strictObject({
  exportedAt: z.string().describe('The instant the export was taken (ISO 8601)'),
  contact: ContactView.describe('Everything the book holds about the person'),
});

const NoInput = z.strictObject({}).describe('Nothing: send `{}` or no body');

export const contactRoutes = [
  defineRoute({
    method: 'GET',
    path: CONTACTS_PATH,
    permission: 'service.admin.audit.read',
    summary: `A keyset page of contacts in name order (${CONTACT_BOUNDS.pageDefault} unless asked, ${CONTACT_BOUNDS.pageMax} at most), optionally narrowed to one origin`,
    query: ContactsQuery,
    answer: ContactsAnswer,
    async handle({ principal, deadlineMs, query }, deps) {
      return { status: 200, json: await listContacts(deps, principal, query, deadlineMs) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: CONTACTS_PATH,
    permission: 'service.admin.operate',
    summary: 'Records a contact as owner-asserted from the whole record in the body; answers 201 with the contact',
    body: ContactRecordInput,
    bodyLimit: CONTACT_RECORD_BODY_BYTES,
    answer: ContactView,
    answerStatus: 201,
    async handle({ principal, deadlineMs, body }, deps) {
      return { status: 201, json: await createContact(deps, principal, body, deadlineMs) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: `${CONTACTS_PATH}/by-address`,
    permission: 'service.admin.audit.read',
    summary: 'Whoever uses one address, asserted or collected, compared case-insensitively',
    query: ByAddressQuery,
    answer: ByAddressAnswer,
    async handle({ principal, deadlineMs, query }, deps) {
      return { status: 200, json: await contactsByAddress(deps, principal, query.address, deadlineMs) };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: `${CONTACTS_PATH}/collected`,
    permission: 'service.admin.erase',
    summary: 'Erases every collected contact and keeps the asserted ones; answers the two counts; irreversible',
    answer: CollectedErasureAnswer,
    async handle({ principal, deadlineMs }, deps) {
      return { status: 200, json: await eraseCollectedContacts(deps, principal, deadlineMs) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: `${CONTACTS_PATH}/{id}`,
    permission: 'service.admin.audit.read',
    summary: 'One contact; 404 (a problem document) when the book holds none by that identifier',
    params: ContactParams,
    answer: ContactView,
    async handle({ principal, deadlineMs, params }, deps) {
      return { status: 200, json: await showContact(deps, principal, params.id ?? '', deadlineMs) };
    },
  }),
  defineRoute({
    method: 'PUT',
    path: `${CONTACTS_PATH}/{id}`,
    permission: 'service.admin.operate',
    summary:
      'Replaces one asserted contact with the whole record in the body (last writer wins); 404 when the book does not hold it (an edit racing an erasure too), 409 for a collected contact, which must be promoted first',
    params: ContactParams,
    body: ContactRecordInput,
    bodyLimit: CONTACT_RECORD_BODY_BYTES,
    answer: ContactView,
    async handle({ principal, deadlineMs, params, body }, deps) {
      return { status: 200, json: await replaceContact(deps, principal, params.id ?? '', body, deadlineMs) };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: `${CONTACTS_PATH}/{id}`,
    permission: 'service.admin.erase',
    summary:
      'Erases one person and what the book derived from them (their collected records); answers the identifier and counts, never the person, and zero counts for a contact the book does not hold; irreversible',
    params: ErasureParams,
    answer: ContactErasureAnswer,
    async handle({ principal, deadlineMs, params }, deps) {
      return { status: 200, json: await eraseContact(deps, principal, params.id ?? '', deadlineMs) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: `${CONTACTS_PATH}/{id}/promotion`,
    permission: 'service.admin.operate',
    summary: 'Makes a collected contact an asserted one and answers it; one already asserted is answered as it stands; 404 when the book does not hold it',
    params: ContactParams,
    body: NoInput,
    bodyOptional: true,
    bodyLimit: WRITE_BODY_BYTES,
    answer: ContactView,
    async handle({ principal, deadlineMs, params }, deps) {
      return { status: 200, json: await promoteContact(deps, principal, params.id ?? '', deadlineMs) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: `${CONTACTS_PATH}/{id}/export`,
    permission: 'service.admin.audit.read',
    summary: 'Everything the book holds about one person, with the instant the export was taken; 404 when it holds none by that identifier',
    params: ContactParams,
    answer: ContactExportAnswer,
    async handle({ principal, deadlineMs, params }, deps) {
      return { status: 200, json: await exportContact(deps, principal, params.id ?? '', deadlineMs) };
    },
  }),
];
