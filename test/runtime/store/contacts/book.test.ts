/**
 * The contact book's store (runtime/store/contacts/book.ts) on a scratch
 * database: asserted contacts recorded, replaced whole and listed in name
 * order by keyset; collection records one collected contact per address,
 * never touches an address an asserted contact holds, and fills in a name
 * only where the address stood in for one; a collected contact is amended
 * only after promotion; erasure takes the person and the collected records
 * of their addresses, and nothing else; identifiers are never reused.
 */
import t from 'tap';
import {
  collect,
  contactById,
  contactsByAddress,
  createAsserted,
  erase,
  eraseCollected,
  listContacts,
  promote,
  replace,
} from '../../../../runtime/store/contacts/book.ts';
import { many } from '../../../../runtime/store/rows.ts';
import { freshStore } from '../mailbox/helpers.ts';

const NOW = Date.parse('2026-11-28T08:00:00Z');

t.test('asserted contacts: recorded, read, replaced whole, listed by name then identity', async (t) => {
  const db = freshStore(t);
  const sato = createAsserted(db, { name: 'Sato Haruki', addresses: [{ address: 'Haruki@Example.jp', preferred: true }], note: 'Friday meetings' }, NOW);
  t.match(sato, { id: /^c\d+$/, origin: 'asserted', name: 'Sato Haruki', note: 'Friday meetings', recordedAt: NOW, amendedAt: NOW });
  t.same(contactById(db, sato.id)?.addresses, [{ address: 'Haruki@Example.jp', preferred: true }], 'the address as recorded');
  t.equal(contactsByAddress(db, 'haruki@example.JP')[0]?.id, sato.id, 'found case-insensitively');

  const replaced = replace(
    db,
    sato.id,
    {
      name: 'Haruki Sato',
      addresses: [
        { address: 'haruki@example.jp', preferred: false },
        { address: 'h.sato@work.example', preferred: true },
      ],
      note: null,
    },
    NOW + 1000,
  );
  t.equal(replaced.kind, 'replaced');
  const after = contactById(db, sato.id)!;
  t.same(after.addresses, [
    { address: 'haruki@example.jp', preferred: false },
    { address: 'h.sato@work.example', preferred: true },
  ]);
  t.equal(after.note, null, 'the whole record: an absent note clears it');
  t.equal(after.amendedAt, NOW + 1000);
  t.equal(after.recordedAt, NOW);

  for (const name of ['ada', 'Zoe', 'bob', 'Ada'])
    createAsserted(db, { name, addresses: [{ address: `${name}@x.example`, preferred: true }], note: null }, NOW);
  const seen: string[] = [];
  let after2: Parameters<typeof listContacts>[1]['after'];
  for (;;) {
    const page = listContacts(db, { limit: 2, ...(after2 ? { after: after2 } : {}) });
    seen.push(...page.contacts.map((c) => c.name));
    if (page.next === null) break;
    after2 = page.next;
  }
  t.same(seen, ['ada', 'Ada', 'bob', 'Haruki Sato', 'Zoe'], 'name comparison form, then identity; every contact once');
  t.same(
    listContacts(db, { limit: 10, prefix: 'h.SAT' }).contacts.map((c) => c.name),
    ['Haruki Sato'],
    'an address prefix finds its contact',
  );
  t.same(
    listContacts(db, { limit: 10, prefix: 'hAr' }).contacts.map((c) => c.name),
    ['Haruki Sato'],
    'a name prefix too',
  );
  t.equal(replace(db, 'c999', { name: 'x', addresses: [], note: null }, NOW).kind, 'absent');
  t.equal(replace(db, 'not-an-id', { name: 'x', addresses: [], note: null }, NOW).kind, 'absent');
});

t.test('collection: one collected contact per address, asserted ones untouched, names filled in once', async (t) => {
  const db = freshStore(t);
  const owner = createAsserted(db, { name: 'Mother', addresses: [{ address: 'mum@home.example', preferred: true }], note: null }, NOW);
  const recorded = collect(
    db,
    [
      { address: 'Mum@Home.example', name: 'Jane Q. Public' },
      { address: 'news@shop.example', name: null },
      { address: 'NEWS@shop.example', name: 'Shop News' },
      { address: 'kim@corp.example', name: 'Kim' },
    ],
    NOW,
  );
  t.equal(recorded, 2, 'the asserted address is not collected; the same address twice is one contact');
  t.equal(contactById(db, owner.id)?.name, 'Mother', 'a display name never overrides an asserted name');
  const news = contactsByAddress(db, 'news@shop.example');
  t.equal(news.length, 1);
  t.equal(news[0]?.name, 'Shop News', 'a display name fills in where the address stood in');
  t.equal(news[0]?.origin, 'collected');
  collect(db, [{ address: 'kim@corp.example', name: 'Kimberly' }], NOW + 1);
  t.equal(contactsByAddress(db, 'kim@corp.example')[0]?.name, 'Kim', 'a collected name is not replaced by a later one');

  const kim = contactsByAddress(db, 'kim@corp.example')[0]!;
  t.equal(
    replace(db, kim.id, { name: 'K', addresses: [{ address: 'kim@corp.example', preferred: true }], note: null }, NOW).kind,
    'collected',
    'amending a collected contact is refused',
  );
  t.equal(promote(db, kim.id, NOW + 2).kind, 'promoted');
  t.equal(contactById(db, kim.id)?.origin, 'asserted');
  t.equal(promote(db, kim.id, NOW + 3).kind, 'already-asserted');
  t.equal(
    replace(db, kim.id, { name: 'K', addresses: [{ address: 'kim@corp.example', preferred: true }], note: null }, NOW).kind,
    'replaced',
    'once promoted it can be amended',
  );
  t.equal(collect(db, [{ address: 'kim@corp.example', name: 'Kim' }], NOW + 4), 0, 'a promoted address is not collected again');
  t.same(
    listContacts(db, { limit: 10, origin: 'collected' }).contacts.map((c) => c.name),
    ['Shop News'],
  );
});

t.test('erasure: the person and the collected records of their addresses, counted; nothing else; ids never reused', async (t) => {
  const db = freshStore(t);
  collect(
    db,
    [
      { address: 'sato@old.example', name: 'Sato' },
      { address: 'other@x.example', name: 'Other' },
    ],
    NOW,
  );
  const sato = createAsserted(
    db,
    {
      name: 'Sato',
      addresses: [
        { address: 'sato@new.example', preferred: true },
        { address: 'sato@old.example', preferred: false },
      ],
      note: 'n',
    },
    NOW,
  );
  t.same(erase(db, sato.id), { found: true, contacts: 2, addresses: 3 }, 'the asserted contact and the collected record of its old address');
  t.same(erase(db, sato.id), { found: false, contacts: 0, addresses: 0 }, 'erasing what the book does not hold removes nothing');
  const left = many<{ address_key: string }>(db.prepare('SELECT address_key FROM contact_addresses'));
  t.same(left, [{ address_key: 'other@x.example' }], 'no row of the person is left');
  t.equal(contactsByAddress(db, 'sato@old.example').length, 0);
  const next = createAsserted(db, { name: 'Next', addresses: [{ address: 'n@x.example', preferred: true }], note: null }, NOW);
  t.not(next.id, sato.id, 'an erased identifier is never given again');
  t.same(eraseCollected(db), { contacts: 1, addresses: 1 });
  t.equal(contactById(db, next.id)?.name, 'Next', 'asserted contacts stay');
});

t.test('erasure reach: after it, no table of the store holds the person (the book keeps no trace, no audit of names)', async (t) => {
  const db = freshStore(t);
  collect(db, [{ address: 'Reiko.Tanaka@old.example', name: 'Reiko Tanaka' }], NOW);
  const person = createAsserted(
    db,
    {
      name: 'Reiko Tanaka',
      addresses: [
        { address: 'reiko@new.example', preferred: true },
        { address: 'reiko.tanaka@OLD.example', preferred: false },
      ],
      note: 'Prefers mornings',
    },
    NOW,
  );
  erase(db, person.id);
  const tables = many<{ name: string }>(db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"));
  t.ok(tables.length > 10, `every table of the schema is read (${tables.length})`);
  for (const { name } of tables) {
    const text = JSON.stringify(many(db.prepare(`SELECT * FROM "${name}"`))).toLowerCase();
    t.notOk(/reiko|tanaka|mornings|new\.example|old\.example/.test(text), `${name} holds nothing of the person`);
  }
});

t.test('a name whose comparison form would expand enormously is cut, so a listing cursor stays small', async (t) => {
  const db = freshStore(t);
  const long = '\ufdfa'.repeat(200); // NFKC: 18 characters each
  for (let i = 0; i < 3; i += 1) createAsserted(db, { name: long, addresses: [{ address: `p${i}@x.example`, preferred: true }], note: null }, NOW);
  const first = listContacts(db, { limit: 2 });
  t.ok(first.next !== null && first.next.nameKey.length <= 256, `the position carries at most 256 units (${first.next?.nameKey.length})`);
  const rest = listContacts(db, { limit: 2, after: first.next! });
  t.equal(first.contacts.length + rest.contacts.length, 3, 'every contact is reached, ordered by identity among equal forms');
  t.equal(rest.contacts[0]?.name, long, 'the name itself is kept whole');
});
