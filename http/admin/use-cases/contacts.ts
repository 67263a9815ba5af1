/**
 * The contact book on the administrative surface (docs/admin-api.md
 * "Contacts", docs/contacts.md): every read and write is answered by the
 * contacts actor (actors/contacts/protocol.ts), which keeps the record's rules.
 *
 * A contact is named `c<number>` on every surface. On a route naming a
 * contact in its path, any other text is the same 404 problem document as a
 * contact the book does not hold: the path names a record, and there is none
 * by that name. Deletion of a well-formed identifier is the exception the
 * spec makes (rule 4): deleting what the book does not hold succeeds having
 * removed nothing; text that could name no contact is still the 404.
 *
 * Privacy (spec "Contact routes" rule 5): no sentence here carries a name,
 * an address or a note; a refusal may name the contact identifier, which
 * the caller wrote and which says nothing about the person.
 */
import {
  ByAddressReply,
  CONTACT_ID_PATTERN,
  CONTACTS_ID,
  ContactReply,
  EraseCollectedReply,
  EraseReply,
  ExportReply,
  ListReply,
  MaybeContactReply,
  PROMOTE_FIRST,
  PromoteReply,
  recordOf,
  ReplaceReply,
  type ContactPosition,
  type ContactRecordInput,
  type ContactView,
} from '../../../actors/contacts/protocol.ts';
import type { z } from 'zod';
import { AppError } from '../../../runtime/errors.ts';
import type { Principal } from '../../auth/principal.ts';
import { NOT_ISSUED_HERE } from '../cursor.ts';
import type { AdminDeps } from '../route.ts';
import { ADMIN_PREFIX } from '../routes/prefix.ts';
import { invalidRequest, notFound, requirePrincipal } from './guard.ts';

/** The listing's path, which its cursors are bound to. */
export const CONTACTS_PATH = `${ADMIN_PREFIX}/contacts`;

export const CONTACT_NOT_FOUND = 'The book holds no contact by that identifier; name one as the contact listing gives it: c followed by digits, such as c12.';

export type ContactOrigin = ContactView['origin'];
export type ContactsQuery = { origin?: ContactOrigin | undefined; pageSize: number; cursor?: string | undefined };
export type ContactsPage = { contacts: ContactView[]; nextCursor?: string };
export type ContactExport = z.infer<typeof ExportReply> & { contact: ContactView };
export type ContactErasure = z.infer<typeof EraseReply>;
export type CollectedErasure = z.infer<typeof EraseCollectedReply>;
/** A record as the route's body schema (ContactRecordInput) let it through. */
export type ValidRecord = z.output<typeof ContactRecordInput>;

type Deps = Pick<AdminDeps, 'actor'>;

const book = (deps: Deps) => deps.actor(CONTACTS_ID);

/** A keyset page in the name's comparison order, then identity; `nextCursor` while more remain, bound to `origin`. */
export async function listContacts(
  deps: Deps & Pick<AdminDeps, 'cursors'>,
  principal: Principal | null,
  query: ContactsQuery,
  deadlineMs: number,
): Promise<ContactsPage> {
  requirePrincipal(principal, 'service.admin.audit.read');
  const filters = { origin: query.origin };
  const after = query.cursor === undefined ? undefined : positionOf(deps.cursors.read(CONTACTS_PATH, filters, query.cursor));
  const message = {
    type: 'contacts.list',
    pageSize: query.pageSize,
    ...(query.origin !== undefined ? { origin: query.origin } : {}),
    ...(after !== undefined ? { after } : {}),
  } as const;
  const page = await book(deps).ask(message, { reply: ListReply, deadlineMs });
  const next = page.next === null ? {} : { nextCursor: deps.cursors.issue(CONTACTS_PATH, filters, [page.next.nameKey, page.next.row]) };
  return { contacts: page.contacts, ...next };
}

/** Records an asserted contact; answers it (the route's 201). */
export async function createContact(deps: Deps, principal: Principal | null, record: ValidRecord, deadlineMs: number): Promise<ContactView> {
  requirePrincipal(principal, 'service.admin.operate');
  const { contact } = await book(deps).ask({ type: 'contacts.create', record: recordOf(record) }, { reply: ContactReply, deadlineMs });
  return contact;
}

/** Everyone who uses one address, compared case-insensitively; none is an empty list, not a 404. */
export async function contactsByAddress(deps: Deps, principal: Principal | null, address: string, deadlineMs: number): Promise<{ contacts: ContactView[] }> {
  requirePrincipal(principal, 'service.admin.audit.read');
  return book(deps).ask({ type: 'contacts.by-address', address }, { reply: ByAddressReply, deadlineMs });
}

export async function showContact(deps: Deps, principal: Principal | null, id: string, deadlineMs: number): Promise<ContactView> {
  requirePrincipal(principal, 'service.admin.audit.read');
  const { contact } = await book(deps).ask({ type: 'contacts.get', id: heldId(id) }, { reply: MaybeContactReply, deadlineMs });
  if (contact === null) throw notFound(CONTACT_NOT_FOUND);
  return contact;
}

/**
 * Replaces the whole record (last writer wins). A contact the book does not
 * hold — one erased while the edit was on its way included — is the 404; a
 * collected one is refused until promoted (409, PROMOTE_FIRST).
 */
export async function replaceContact(deps: Deps, principal: Principal | null, id: string, record: ValidRecord, deadlineMs: number): Promise<ContactView> {
  requirePrincipal(principal, 'service.admin.operate');
  const named = heldId(id);
  const reply = await book(deps).ask({ type: 'contacts.replace', id: named, record: recordOf(record) }, { reply: ReplaceReply, deadlineMs });
  switch (reply.kind) {
    case 'replaced':
      return reply.contact;
    case 'absent':
      throw notFound(CONTACT_NOT_FOUND);
    case 'collected':
      throw promoteFirst(named);
  }
}

/** Makes a collected contact asserted; one already asserted is answered as it stands (the same 200: promotion is idempotent). */
export async function promoteContact(deps: Deps, principal: Principal | null, id: string, deadlineMs: number): Promise<ContactView> {
  requirePrincipal(principal, 'service.admin.operate');
  const reply = await book(deps).ask({ type: 'contacts.promote', id: heldId(id) }, { reply: PromoteReply, deadlineMs });
  if (reply.kind === 'absent') throw notFound(CONTACT_NOT_FOUND);
  return reply.contact;
}

/**
 * Erases one person with what the book derived from them; answers the
 * identity and counts, never the person. A contact the book does not hold
 * has removed nothing: a success with zeros (deleting twice succeeds twice).
 */
export async function eraseContact(deps: Deps, principal: Principal | null, id: string, deadlineMs: number): Promise<ContactErasure> {
  requirePrincipal(principal, 'service.admin.erase');
  return book(deps).ask({ type: 'contacts.erase', id: heldId(id) }, { reply: EraseReply, deadlineMs });
}

export async function eraseCollectedContacts(deps: Deps, principal: Principal | null, deadlineMs: number): Promise<CollectedErasure> {
  requirePrincipal(principal, 'service.admin.erase');
  return book(deps).ask({ type: 'contacts.erase-collected' }, { reply: EraseCollectedReply, deadlineMs });
}

/** Everything the book holds about one person, with the instant the export was taken. */
export async function exportContact(deps: Deps, principal: Principal | null, id: string, deadlineMs: number): Promise<ContactExport> {
  requirePrincipal(principal, 'service.admin.audit.read');
  const reply = await book(deps).ask({ type: 'contacts.export', id: heldId(id) }, { reply: ExportReply, deadlineMs });
  if (reply.contact === null) throw notFound(CONTACT_NOT_FOUND);
  return { exportedAt: reply.exportedAt, contact: reply.contact };
}

/** The 409 of an amendment to a collected contact: the rule, what to do, and the identifier (never the person). */
export function promoteFirst(id: string): AppError {
  const sentence = PROMOTE_FIRST.charAt(0).toUpperCase() + PROMOTE_FIRST.slice(1);
  return new AppError('E_CONTACT_COLLECTED', {
    message: `${sentence}. Promote ${id} with POST ${CONTACTS_PATH}/${id}/promotion, then send the whole record again.`,
  });
}

/** A well-formed identifier; any other text names no contact the book holds (the 404). */
function heldId(id: string): string {
  if (!CONTACT_ID_PATTERN.test(id)) throw notFound(CONTACT_NOT_FOUND);
  return id;
}

/** Our own seal vouches for the cursor; its position is still checked before it reaches the actor. */
function positionOf(position: ReadonlyArray<string | number>): ContactPosition {
  const [nameKey, row] = position;
  if (position.length !== 2 || typeof nameKey !== 'string' || !Number.isSafeInteger(row) || (row as number) < 1) throw invalidRequest(NOT_ISSUED_HERE);
  return { nameKey, row: row as number };
}
