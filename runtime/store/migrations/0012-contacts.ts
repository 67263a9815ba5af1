/**
 * Migration 12: the contact book (issue 29; docs/contacts.md). Never edit
 * once shipped; add the next one.
 *
 * - `contacts`: one person. `origin` is `asserted` (the owner entered or
 *   promoted it) or `collected` (the deployment recorded a correspondent).
 *   AUTOINCREMENT: an identifier is never reused, so an edit racing an
 *   erasure can never land on someone recorded later under the same number.
 *   `name_key` is the name's comparison form (listing order, prefix lookup).
 * - `contact_addresses`: the person's addresses as recorded, `address_key`
 *   their comparison form (lower case); exactly one `preferred` per contact
 *   (the store's writers keep that; the unique index below enforces "at most
 *   one"). A collected contact holds exactly one address, and no two
 *   collected contacts hold the same one (unique `collected_key`).
 *
 * Imported by `migrations/index.ts` only.
 */
export const sql = `
CREATE TABLE contacts (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  name_key TEXT NOT NULL,
  origin TEXT NOT NULL CHECK (origin IN ('asserted', 'collected')),
  note TEXT,
  recorded_at INTEGER NOT NULL,
  amended_at INTEGER NOT NULL,
  collected_key TEXT UNIQUE,
  CHECK ((origin = 'collected') = (collected_key IS NOT NULL))
);
CREATE INDEX contacts_by_name ON contacts (name_key, id);
CREATE INDEX contacts_by_origin_name ON contacts (origin, name_key, id);

CREATE TABLE contact_addresses (
  contact_id INTEGER NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  address TEXT NOT NULL,
  address_key TEXT NOT NULL,
  preferred INTEGER NOT NULL CHECK (preferred IN (0, 1)),
  PRIMARY KEY (contact_id, address_key)
) WITHOUT ROWID;
CREATE INDEX contact_addresses_by_address ON contact_addresses (address_key, contact_id);
CREATE UNIQUE INDEX contact_addresses_one_preferred ON contact_addresses (contact_id) WHERE preferred = 1;
`;
