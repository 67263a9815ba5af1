/**
 * The contacts actor (`contacts`): writer of the contact book's asserted
 * side (creation, whole-record amendment, promotion, erasure) and the reader
 * the tools and admin routes ask (runtime/store/contacts/book.ts). Messages
 * are validated by protocol.ts before they arrive; a message failing them is
 * answered E_PROTOCOL_INVALID by the host and never reaches `handle`.
 *
 * Everything it holds is in the database, so a restart loses nothing.
 * It logs only identifiers and counts, at debug: never a name, an address or
 * a note (docs/contacts.md "Privacy").
 */
import { defineActor, type ActorContext } from '../../runtime/actor.ts';
import {
  type Contact,
  type ContactOrigin,
  contactById,
  contactsByAddress,
  createAsserted,
  erase,
  eraseCollected,
  listContacts,
  promote,
  replace,
} from '../../runtime/store/contacts/book.ts';
import type { Database } from '../../runtime/store/open.ts';
import { openSlice } from '../../runtime/store/open-slice.ts';
import { ContactsConfig, ContactsMessage, type ContactsProtocol, type ContactView } from './protocol.ts';

type State = { readonly db: Database };
type Replies = { [K in keyof ContactsProtocol]: ContactsProtocol[K]['reply'] };

const ORIGIN_VIEW: Record<ContactOrigin, ContactView['origin']> = { asserted: 'Asserted', collected: 'Collected' };
const ORIGIN_STORE: Record<ContactView['origin'], ContactOrigin> = { Asserted: 'asserted', Collected: 'collected' };

const iso = (ms: number): string => new Date(ms).toISOString();

/** The answer shape of both surfaces. */
export function viewOf(contact: Contact): ContactView {
  return {
    id: contact.id,
    name: contact.name,
    origin: ORIGIN_VIEW[contact.origin],
    addresses: contact.addresses.map((a) => ({ address: a.address, preferred: a.preferred })),
    note: contact.note,
    recordedAt: iso(contact.recordedAt),
    amendedAt: iso(contact.amendedAt),
  };
}

function answer(db: Database, msg: ContactsMessage, ctx: ActorContext<ContactsMessage>): Replies[keyof Replies] {
  switch (msg.type) {
    case 'contacts.create': {
      const contact = createAsserted(db, msg.record, Date.now());
      ctx.log.debug({ event: 'contacts.created', id: contact.id }, 'contacts.created');
      return { contact: viewOf(contact) } satisfies Replies['contacts.create'];
    }
    case 'contacts.replace': {
      const outcome = replace(db, msg.id, msg.record, Date.now());
      ctx.log.debug({ event: 'contacts.replace', id: msg.id, outcome: outcome.kind }, 'contacts.replace');
      return (outcome.kind === 'replaced' ? { kind: 'replaced', contact: viewOf(outcome.contact) } : outcome) satisfies Replies['contacts.replace'];
    }
    case 'contacts.promote': {
      const outcome = promote(db, msg.id, Date.now());
      ctx.log.debug({ event: 'contacts.promote', id: msg.id, outcome: outcome.kind }, 'contacts.promote');
      return (outcome.kind === 'absent' ? outcome : { kind: outcome.kind, contact: viewOf(outcome.contact) }) satisfies Replies['contacts.promote'];
    }
    case 'contacts.erase': {
      const erased = erase(db, msg.id);
      ctx.log.debug({ event: 'contacts.erased', id: msg.id, ...erased }, 'contacts.erased');
      return { id: msg.id, ...erased } satisfies Replies['contacts.erase'];
    }
    case 'contacts.erase-collected': {
      const erased = eraseCollected(db);
      ctx.log.debug({ event: 'contacts.erased-collected', ...erased }, 'contacts.erased-collected');
      return erased satisfies Replies['contacts.erase-collected'];
    }
    case 'contacts.list': {
      const page = listContacts(db, {
        limit: msg.pageSize,
        ...(msg.origin !== undefined ? { origin: ORIGIN_STORE[msg.origin] } : {}),
        ...(msg.prefix !== undefined ? { prefix: msg.prefix } : {}),
        ...(msg.after !== undefined ? { after: msg.after } : {}),
      });
      return { contacts: page.contacts.map(viewOf), next: page.next } satisfies Replies['contacts.list'];
    }
    case 'contacts.get': {
      const contact = contactById(db, msg.id);
      return { contact: contact === undefined ? null : viewOf(contact) } satisfies Replies['contacts.get'];
    }
    case 'contacts.by-address':
      return { contacts: contactsByAddress(db, msg.address).map(viewOf) } satisfies Replies['contacts.by-address'];
    case 'contacts.export': {
      // The instant is taken before the read, so the document holds nothing newer than it says.
      const exportedAt = iso(Date.now());
      const contact = contactById(db, msg.id);
      ctx.log.debug({ event: 'contacts.exported', id: msg.id, found: contact !== undefined }, 'contacts.exported');
      return { exportedAt, contact: contact === undefined ? null : viewOf(contact) } satisfies Replies['contacts.export'];
    }
  }
}

export default defineActor({
  name: 'contacts',
  config: ContactsConfig,
  messages: ContactsMessage,
  init(config, ctx): State {
    // Checkpoints are the store maintenance actor's, so an answer never waits on copying the WAL back.
    const db = openSlice(config, { checkpoints: 'background' });
    ctx.defer(() => {
      db.close();
    });
    return { db };
  },
  handle(state, msg, ctx) {
    return answer(state.db, msg, ctx);
  },
});
