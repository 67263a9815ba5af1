/**
 * The contact book (migration 12; docs/contacts.md): asserted contacts the
 * owner entered or promoted, collected contacts the deployment recorded from
 * arriving and sent mail. Writers: the contacts actor (asserted contacts,
 * promotion, erasure) and the derivation writer (collection, through
 * `collect`, in the transaction that first derives a message:
 * mailbox/underived.ts). Readers: the query pool.
 *
 * Rules kept here, for every writer:
 * - exactly one preferred address per contact (`Addresses` is validated
 *   before it reaches the store: contact-record.ts);
 * - a collected contact holds one address, and one collected contact per
 *   address; collection never touches an asserted contact, and a display
 *   name fills in a collected contact's name only while it has none better
 *   (never replaces a name it already has);
 * - an amendment states the whole record and applies only to an asserted
 *   contact that still exists (`replace` answers which it was).
 *
 * Nothing here logs. Importable by the contacts actor, the derivation
 * writer's store modules and the query pool.
 */
import type { Database } from '../open.ts';
import { many, one, run } from '../rows.ts';
import { perConnection } from '../mailbox/prepared.ts';
import { rowIdCodec } from '../row-id.ts';

export type ContactOrigin = 'asserted' | 'collected';

export type ContactAddress = { readonly address: string; readonly preferred: boolean };

export type Contact = {
  readonly id: string;
  readonly name: string;
  readonly origin: ContactOrigin;
  readonly addresses: readonly ContactAddress[];
  readonly note: string | null;
  readonly recordedAt: number;
  readonly amendedAt: number;
};

/** What the owner states: the whole record (validated: contact-record.ts). */
export type ContactRecord = {
  readonly name: string;
  readonly addresses: readonly ContactAddress[];
  readonly note: string | null;
};

/** A contact's identity on every surface: `c` and its row id. */
export const contactIds = rowIdCodec('c');

/**
 * Longest comparison form kept, in UTF-16 units. NFKC can expand a character
 * eighteenfold (U+FDFA), and the form travels inside listing cursors, whose
 * length is bounded: collected names come from mail, so a sender could
 * otherwise make a page unreachable. Order past this many units is by identity.
 */
const NAME_KEY_UNITS = 256;

/** The comparison form of a name (listing order, prefix lookup): NFKC, case-folded, spaces collapsed, at most NAME_KEY_UNITS. */
export function nameKeyOf(name: string): string {
  const key = name.normalize('NFKC').toLowerCase().replace(/\s+/g, ' ').trim();
  return key.length <= NAME_KEY_UNITS ? key : key.slice(0, NAME_KEY_UNITS).replace(/[\ud800-\udbff]$/, '');
}

/** The comparison form of an address: as recorded, lower-cased (docs/contacts.md "Addresses"). */
export function addressKeyOf(address: string): string {
  return address.toLowerCase();
}

type ContactRow = { id: number; name: string; origin: ContactOrigin; note: string | null; recorded_at: number; amended_at: number };
type AddressRow = { contact_id: number; address: string; preferred: number };

const statements = perConnection((db: Database) => ({
  byId: db.prepare('SELECT id, name, origin, note, recorded_at, amended_at FROM contacts WHERE id = ?'),
  addressesOf: db.prepare('SELECT contact_id, address, preferred FROM contact_addresses WHERE contact_id = ? ORDER BY position'),
  insert: db.prepare('INSERT INTO contacts (name, name_key, origin, note, recorded_at, amended_at, collected_key) VALUES (?, ?, ?, ?, ?, ?, ?)'),
  insertAddress: db.prepare('INSERT INTO contact_addresses (contact_id, position, address, address_key, preferred) VALUES (?, ?, ?, ?, ?)'),
  deleteAddresses: db.prepare('DELETE FROM contact_addresses WHERE contact_id = ?'),
  amend: db.prepare("UPDATE contacts SET name = ?, name_key = ?, note = ?, amended_at = ? WHERE id = ? AND origin = 'asserted'"),
  promote: db.prepare("UPDATE contacts SET origin = 'asserted', collected_key = NULL, amended_at = ? WHERE id = ? AND origin = 'collected'"),
  remove: db.prepare('DELETE FROM contacts WHERE id = ?'),
  collectedByKey: db.prepare("SELECT id, name FROM contacts WHERE collected_key = ? AND origin = 'collected'"),
  nameCollected: db.prepare("UPDATE contacts SET name = ?, name_key = ?, amended_at = ? WHERE id = ? AND origin = 'collected'"),
  assertedHolds: db.prepare(
    "SELECT 1 AS held FROM contact_addresses a JOIN contacts c ON c.id = a.contact_id WHERE a.address_key = ? AND c.origin = 'asserted' LIMIT 1",
  ),
  byAddress: db.prepare(
    'SELECT c.id, c.name, c.origin, c.note, c.recorded_at, c.amended_at FROM contact_addresses a JOIN contacts c ON c.id = a.contact_id WHERE a.address_key = ? ORDER BY c.name_key, c.id',
  ),
  countCollected: db.prepare("SELECT count(*) AS n FROM contacts WHERE origin = 'collected'"),
  countCollectedAddresses: db.prepare("SELECT count(*) AS n FROM contact_addresses a JOIN contacts c ON c.id = a.contact_id WHERE c.origin = 'collected'"),
  removeCollected: db.prepare("DELETE FROM contacts WHERE origin = 'collected'"),
}));

function addressesOf(db: Database, row: number): ContactAddress[] {
  return many<AddressRow>(statements(db).addressesOf, [row]).map((a) => ({ address: a.address, preferred: a.preferred === 1 }));
}

function contactOf(db: Database, row: ContactRow): Contact {
  return {
    id: contactIds.idOf(row.id),
    name: row.name,
    origin: row.origin,
    addresses: addressesOf(db, row.id),
    note: row.note,
    recordedAt: row.recorded_at,
    amendedAt: row.amended_at,
  };
}

function writeAddresses(db: Database, row: number, addresses: readonly ContactAddress[]): void {
  addresses.forEach((a, position) => {
    run(statements(db).insertAddress, [row, position, a.address, addressKeyOf(a.address), a.preferred ? 1 : 0]);
  });
}

/** One contact, or undefined when the book does not hold it (a malformed identifier included). */
export function contactById(db: Database, id: string): Contact | undefined {
  const row = contactIds.rowOf(id);
  if (row === null) return undefined;
  const found = one<ContactRow>(statements(db).byId, [row]);
  return found === undefined ? undefined : contactOf(db, found);
}

/** Records an asserted contact; answers it. */
export function createAsserted(db: Database, record: ContactRecord, now: number): Contact {
  return db
    .transaction(() => {
      const inserted = run(statements(db).insert, [record.name, nameKeyOf(record.name), 'asserted', record.note, now, now, null]);
      const row = Number(inserted.lastInsertRowid);
      writeAddresses(db, row, record.addresses);
      return contactOf(db, one<ContactRow>(statements(db).byId, [row])!);
    })
    .immediate();
}

export type Replaced = { readonly kind: 'replaced'; readonly contact: Contact } | { readonly kind: 'absent' } | { readonly kind: 'collected' };

/** The whole record replaces an asserted contact (last writer wins); a collected one must be promoted first. */
export function replace(db: Database, id: string, record: ContactRecord, now: number): Replaced {
  const row = contactIds.rowOf(id);
  if (row === null) return { kind: 'absent' };
  return db
    .transaction((): Replaced => {
      const found = one<ContactRow>(statements(db).byId, [row]);
      if (found === undefined) return { kind: 'absent' };
      if (found.origin === 'collected') return { kind: 'collected' };
      run(statements(db).amend, [record.name, nameKeyOf(record.name), record.note, now, row]);
      run(statements(db).deleteAddresses, [row]);
      writeAddresses(db, row, record.addresses);
      return { kind: 'replaced', contact: contactOf(db, one<ContactRow>(statements(db).byId, [row])!) };
    })
    .immediate();
}

export type Promoted =
  | { readonly kind: 'promoted'; readonly contact: Contact }
  | { readonly kind: 'absent' }
  | { readonly kind: 'already-asserted'; readonly contact: Contact };

/** A collected contact becomes asserted (its name and address kept); promoting an asserted one changes nothing. */
export function promote(db: Database, id: string, now: number): Promoted {
  const row = contactIds.rowOf(id);
  if (row === null) return { kind: 'absent' };
  return db
    .transaction((): Promoted => {
      const found = one<ContactRow>(statements(db).byId, [row]);
      if (found === undefined) return { kind: 'absent' };
      if (found.origin === 'asserted') return { kind: 'already-asserted', contact: contactOf(db, found) };
      run(statements(db).promote, [now, row]);
      return { kind: 'promoted', contact: contactOf(db, one<ContactRow>(statements(db).byId, [row])!) };
    })
    .immediate();
}

/** Everyone who uses one address (compared case-insensitively), asserted and collected. */
export function contactsByAddress(db: Database, address: string): Contact[] {
  return many<ContactRow>(statements(db).byAddress, [addressKeyOf(address)]).map((row) => contactOf(db, row));
}

export type Erased = {
  /** The contact named, if the book held it. */
  readonly found: boolean;
  /** Contacts removed: the one named and the collected records of its addresses. */
  readonly contacts: number;
  /** Addresses removed with them. */
  readonly addresses: number;
};

/**
 * Erases one person and what the book derived from them: the contact, its
 * addresses, and every collected contact holding one of its addresses (the
 * deployment's own record of the same correspondent). What else the
 * deployment holds about the person (their mail) is the mailbox's, not the
 * book's: docs/contacts.md "Erasure".
 */
export function erase(db: Database, id: string): Erased {
  const row = contactIds.rowOf(id);
  if (row === null) return { found: false, contacts: 0, addresses: 0 };
  return db
    .transaction((): Erased => {
      const found = one<ContactRow>(statements(db).byId, [row]);
      if (found === undefined) return { found: false, contacts: 0, addresses: 0 };
      const keys = addressesOf(db, row).map((a) => addressKeyOf(a.address));
      const derived = keys.flatMap((key) => {
        const collected = one<{ id: number }>(statements(db).collectedByKey, [key]);
        return collected === undefined || collected.id === row ? [] : [collected.id];
      });
      for (const other of derived) run(statements(db).remove, [other]);
      run(statements(db).remove, [row]);
      // A collected contact holds exactly one address.
      return { found: true, contacts: 1 + derived.length, addresses: keys.length + derived.length };
    })
    .immediate();
}

/** Erases every collected contact, keeps asserted ones; answers the two counts. */
export function eraseCollected(db: Database): { contacts: number; addresses: number } {
  return db
    .transaction(() => {
      const contacts = one<{ n: number }>(statements(db).countCollected)!.n;
      const addresses = one<{ n: number }>(statements(db).countCollectedAddresses)!.n;
      run(statements(db).removeCollected);
      return { contacts, addresses };
    })
    .immediate();
}

/** A correspondent seen in mail: an address and the display name that came with it, if any. */
export type Correspondent = { readonly address: string; readonly name: string | null };

/**
 * Records correspondents as collected contacts, in the caller's transaction
 * (the derivation writer's segment). An address an asserted contact holds is not
 * collected; an address already collected gains a display name only if its
 * contact has none (the address itself stands in for a name). Answers how
 * many contacts were recorded.
 */
export function collect(db: Database, correspondents: readonly Correspondent[], now: number): number {
  let recorded = 0;
  const s = statements(db);
  for (const c of correspondents) {
    const key = addressKeyOf(c.address);
    if (one(s.assertedHolds, [key]) !== undefined) continue;
    const existing = one<{ id: number; name: string }>(s.collectedByKey, [key]);
    const name = c.name?.trim() || null;
    if (existing !== undefined) {
      if (name !== null && addressKeyOf(existing.name) === key) run(s.nameCollected, [name, nameKeyOf(name), now, existing.id]);
      continue;
    }
    const shown = name ?? c.address;
    const inserted = run(s.insert, [shown, nameKeyOf(shown), 'collected', null, now, now, key]);
    run(s.insertAddress, [Number(inserted.lastInsertRowid), 0, c.address, key, 1]);
    recorded += 1;
  }
  return recorded;
}

/** The listing's statements, one per shape of filter (eight at most), prepared once per connection. */
const listings = perConnection(() => new Map<string, ReturnType<Database['prepare']>>());

function listingStatement(db: Database, sql: string): ReturnType<Database['prepare']> {
  const cache = listings(db);
  let statement = cache.get(sql);
  if (statement === undefined) {
    statement = db.prepare(sql);
    cache.set(sql, statement);
  }
  return statement;
}

export type ContactCursor = { readonly nameKey: string; readonly row: number };

export type ContactPage = { readonly contacts: Contact[]; readonly next: ContactCursor | null };

/**
 * A keyset page ordered by the name's comparison form, then identity (a
 * total order), optionally narrowed to one origin and to names or addresses
 * starting with `prefix` (compared in their comparison forms).
 */
export function listContacts(db: Database, options: { origin?: ContactOrigin; after?: ContactCursor; limit: number; prefix?: string }): ContactPage {
  const where: string[] = [];
  const params: (string | number)[] = [];
  if (options.origin !== undefined) {
    where.push('c.origin = ?');
    params.push(options.origin);
  }
  if (options.after !== undefined) {
    where.push('(c.name_key > ? OR (c.name_key = ? AND c.id > ?))');
    params.push(options.after.nameKey, options.after.nameKey, options.after.row);
  }
  if (options.prefix !== undefined && options.prefix !== '') {
    const name = nameKeyOf(options.prefix);
    const address = addressKeyOf(options.prefix);
    // Range scans on both indexes: `>= prefix AND < prefix + U+FFFF` is a prefix match in byte order.
    where.push('((c.name_key >= ? AND c.name_key < ?) OR c.id IN (SELECT contact_id FROM contact_addresses WHERE address_key >= ? AND address_key < ?))');
    params.push(name, `${name}\uffff`, address, `${address}\uffff`);
  }
  const sql = `SELECT c.id, c.name, c.origin, c.note, c.recorded_at, c.amended_at, c.name_key FROM contacts c ${
    where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''
  } ORDER BY c.name_key, c.id LIMIT ?`;
  const rows = many<ContactRow & { name_key: string }>(listingStatement(db, sql), [...params, options.limit + 1]);
  const page = rows.slice(0, options.limit);
  const last = page.at(-1);
  return {
    contacts: page.map((row) => contactOf(db, row)),
    next: rows.length > options.limit && last !== undefined ? { nameKey: last.name_key, row: last.id } : null,
  };
}

/** Whether an asserted contact holds the address (the outbox's recipient policy). */
export function assertedHolds(db: Database, address: string): boolean {
  return one(statements(db).assertedHolds, [addressKeyOf(address)]) !== undefined;
}

/** Whether any contact, asserted or collected, holds the address. */
export function anyHolds(db: Database, address: string): boolean {
  return many(statements(db).byAddress, [addressKeyOf(address)]).length > 0;
}
