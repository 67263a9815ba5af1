/**
 * Who a derived message makes a collected contact (docs/contacts.md
 * "Collection"): pure, no I/O. The derivation writer asks it for every
 * message it derives for the first time and hands the answer to the store's
 * `collect` (runtime/store/contacts/book.ts), in the transaction that writes
 * the message's derived rows.
 *
 * - Mail that reached the owner (any mirrored folder but the sent folder and
 *   the drafts, junk and trash folders): its From addresses. Reply-To is not
 *   read: it often names a list, a ticket queue or a role address rather
 *   than the person writing.
 * - Mail the owner sent (the folder under the alias `sent`): its To, Cc and
 *   Bcc addresses.
 * - Never: mailing-list and machine mail (`bulk`: List-Id, List-Unsubscribe,
 *   Precedence bulk/list/junk, Auto-Submitted), no-reply and role addresses
 *   (`noreply`, `donotreply`, `mailer-daemon`, `postmaster`, `bounce…`), the
 *   owner's own addresses, and addresses an owner could not state themselves
 *   (the contact record's address rule, actors/contacts/protocol.ts).
 *
 * The store adds the rest: an address an asserted contact holds is left
 * alone, and a display name never replaces a name a contact already has.
 */
import type { Correspondent } from '../../runtime/store/contacts/book.ts';
import type { DerivedMessage, StoredAddress } from '../../runtime/store/mailbox/derived-message.ts';
import { CONTACT_BOUNDS, ContactAddressText } from '../contacts/protocol.ts';
import { type FolderRole, folderRoleOf } from './protocol.ts';

export { type FolderRole, folderRoleOf };

/** What of a parse collection reads. */
export type CorrespondentHeaders = Pick<DerivedMessage, 'from' | 'to' | 'cc' | 'bcc' | 'bulk'>;

/** The owner's own addresses, compared case-insensitively. */
export type OwnAddresses = ReadonlySet<string>;

export function ownAddressesOf(addresses: readonly string[]): OwnAddresses {
  return new Set(addresses.map((a) => a.toLowerCase()));
}

/** Local parts of no-reply and role addresses: nobody answers there. */
const NO_REPLY = /no[-_.]?reply|do[-_.]?not[-_.]?reply/;
const ROLE = /^(?:mailer-daemon|postmaster)(?:\+|$)/;
const BOUNCE = /(?:^|[-_.+])bounces?(?:[-_.+=]|$)/;

/** Whether nobody reads mail sent to this address (its local part says so). */
export function isNoReply(address: string): boolean {
  const local = address.slice(0, address.lastIndexOf('@')).toLowerCase();
  return NO_REPLY.test(local) || ROLE.test(local) || BOUNCE.test(local);
}

/** An address an owner could state for a contact (the record's own rule). */
function wellFormed(address: string): boolean {
  return ContactAddressText.safeParse(address).success;
}

/** The display name worth keeping: trimmed, bounded, and not an address itself. */
function nameOf(name: string): string | null {
  const trimmed = name
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^['"]+|['"]+$/g, '');
  if (trimmed === '' || trimmed.includes('@')) return null;
  return trimmed.slice(0, CONTACT_BOUNDS.nameLength).trim();
}

/**
 * The correspondents a message makes collected contacts, each address once
 * (case-insensitively, as first written; its first display name), in
 * header order.
 */
export function correspondentsOf(message: CorrespondentHeaders, role: FolderRole, own: OwnAddresses): Correspondent[] {
  if (role === 'none' || message.bulk) return [];
  const candidates: readonly StoredAddress[] = role === 'sent' ? [...message.to, ...message.cc, ...message.bcc] : message.from;
  const found = new Map<string, Correspondent>();
  for (const candidate of candidates) {
    const address = candidate.address.trim();
    const key = address.toLowerCase();
    if (own.has(key) || !wellFormed(address) || isNoReply(address)) continue;
    const name = nameOf(candidate.name);
    const seen = found.get(key);
    if (seen === undefined) found.set(key, { address, name });
    else if (seen.name === null && name !== null) found.set(key, { address: seen.address, name });
  }
  return [...found.values()];
}
