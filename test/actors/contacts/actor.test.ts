/**
 * The contacts actor on a real host thread under the supervisor, started
 * from the child spec service/system-children.ts uses: every message and
 * its reply, the protocol's refusals (answered E_PROTOCOL_INVALID, the actor
 * keeps running), a restart of the whole tree on the same database file
 * keeping the book, and no name, address or note in any log line (debug
 * included).
 */
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { CONTACT_BOUNDS, CONTACTS_ID, type ContactsProtocol, contactsChild, type ContactView } from '../../../actors/contacts/protocol.ts';
import { loadConfig } from '../../../config/load.ts';
import { AppError } from '../../../runtime/errors.ts';
import type { ActorRef } from '../../../runtime/ref.ts';
import { collect } from '../../../runtime/store/contacts/book.ts';
import { migrate } from '../../../runtime/store/migrate.ts';
import { openStore, type Database } from '../../../runtime/store/open.ts';
import { many } from '../../../runtime/store/rows.ts';
import type { StoreSlice } from '../../../runtime/store/store-slice.ts';
import { Supervisor } from '../../../runtime/supervisor/supervisor.ts';
import { systemChildren } from '../../../service/system-children.ts';
import { tempDir, writeConfig } from '../../helpers/daemon.ts';
import { captureLog, until } from '../../helpers/log-capture.ts';

/** Strings that must never reach a log line. */
const PERSONAL = ['Sato Haruki', 'Haruki Sato', 'haruki@example.jp', 'h.sato@work.example', 'Friday meetings', 'Kimura', 'kimura@shop.example'];

function database(t: Test): { slice: StoreSlice; open: () => Database } {
  const slice: StoreSlice = { database: join(tempDir(t), 'mailcairn.db'), busyTimeoutMs: 5_000, synchronous: 'Normal' };
  const open = (): Database => {
    const db = openStore(slice);
    t.teardown(() => db.close());
    return db;
  };
  migrate(open());
  return { slice, open };
}

type Book = ActorRef<ContactsProtocol>;

async function started(t: Test, slice: StoreSlice): Promise<{ book: Book; supervisor: Supervisor; capture: ReturnType<typeof captureLog> }> {
  const capture = captureLog();
  const supervisor = new Supervisor({ log: capture.log, hostLogSink: capture.write, hostLogLevel: 'debug' });
  t.teardown(() => supervisor.stop(5_000));
  await supervisor.start([contactsChild(slice)]);
  return { book: supervisor.ref(CONTACTS_ID), supervisor, capture };
}

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const one = (address: string) => [{ address, preferred: true }];

async function refusal(promise: Promise<unknown>): Promise<string | undefined> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  return err instanceof AppError ? err.code : err === undefined ? 'answered' : String(err);
}

t.test('every message and its reply', async (t) => {
  const { slice, open } = database(t);
  const { book, capture } = await started(t, slice);
  const before = Date.now();

  // create: asserted, ISO instants, the record as stated
  const { contact: sato } = await book.ask({
    type: 'contacts.create',
    record: { name: 'Sato Haruki', addresses: one('Haruki@Example.jp'), note: 'Friday meetings' },
  });
  t.match(sato, { id: /^c\d+$/, name: 'Sato Haruki', origin: 'Asserted', note: 'Friday meetings', recordedAt: ISO, amendedAt: ISO });
  t.same(sato.addresses, [{ address: 'Haruki@Example.jp', preferred: true }], 'the address as recorded');
  t.ok(Date.parse(sato.recordedAt) >= before - 1);

  // get
  t.same((await book.ask({ type: 'contacts.get', id: sato.id })).contact, sato);
  t.same(await book.ask({ type: 'contacts.get', id: 'c999999' }), { contact: null }, 'an identifier the book does not hold');

  // collected contacts, written as an account's sync thread writes them
  const db = open();
  collect(
    db,
    [
      { address: 'kimura@shop.example', name: 'Kimura' },
      { address: 'HARUKI@example.jp', name: 'Someone Else' },
      { address: 'zed@list.example', name: null },
    ],
    Date.now(),
  );

  // by-address: case-insensitive; an address an asserted contact holds was not collected
  const byAddress = await book.ask({ type: 'contacts.by-address', address: 'haruki@EXAMPLE.jp' });
  t.same(
    byAddress.contacts.map((c) => c.id),
    [sato.id],
  );
  const kimura = (await book.ask({ type: 'contacts.by-address', address: 'Kimura@Shop.Example' })).contacts[0] as ContactView;
  t.match(kimura, { name: 'Kimura', origin: 'Collected', note: null, addresses: [{ address: 'kimura@shop.example', preferred: true }] });
  t.same(await book.ask({ type: 'contacts.by-address', address: 'nobody@nowhere.example' }), { contacts: [] });

  // list: name order, origin narrowing, prefix over names and addresses, pages
  const all = await book.ask({ type: 'contacts.list', pageSize: 50 });
  t.same(
    all.contacts.map((c) => c.name),
    ['Kimura', 'Sato Haruki', 'zed@list.example'],
    'by name comparison form (the address stands in for a missing name)',
  );
  t.equal(all.next, null);
  t.same(
    (await book.ask({ type: 'contacts.list', pageSize: 50, origin: 'Collected' })).contacts.map((c) => c.id),
    [kimura.id, all.contacts[2]?.id],
  );
  t.same(
    (await book.ask({ type: 'contacts.list', pageSize: 50, origin: 'Asserted' })).contacts.map((c) => c.id),
    [sato.id],
  );
  t.same(
    (await book.ask({ type: 'contacts.list', pageSize: 50, prefix: 'sAT' })).contacts.map((c) => c.id),
    [sato.id],
    'name prefix',
  );
  t.same(
    (await book.ask({ type: 'contacts.list', pageSize: 50, prefix: 'HARUKI@' })).contacts.map((c) => c.id),
    [sato.id],
    'address prefix',
  );
  const first = await book.ask({ type: 'contacts.list', pageSize: 2 });
  t.equal(first.contacts.length, 2);
  t.ok(first.next, 'a further page');
  const second = await book.ask({ type: 'contacts.list', pageSize: 2, ...(first.next ? { after: first.next } : {}) });
  t.same(
    [...first.contacts, ...second.contacts].map((c) => c.id),
    all.contacts.map((c) => c.id),
    'the pages together are the whole listing',
  );
  t.equal(second.next, null);

  // replace: the whole record; a collected contact refused until promoted; unknown answered absent
  const replaced = await book.ask({
    type: 'contacts.replace',
    id: sato.id,
    record: {
      name: 'Haruki Sato',
      addresses: [
        { address: 'haruki@example.jp', preferred: false },
        { address: 'h.sato@work.example', preferred: true },
      ],
      note: null,
    },
  });
  t.equal(replaced.kind, 'replaced');
  if (replaced.kind === 'replaced') {
    t.match(replaced.contact, { id: sato.id, name: 'Haruki Sato', note: null, origin: 'Asserted', recordedAt: sato.recordedAt });
    t.equal(replaced.contact.addresses.length, 2);
    t.ok(Date.parse(replaced.contact.amendedAt) >= Date.parse(sato.amendedAt));
  }
  t.same(
    await book.ask({ type: 'contacts.replace', id: kimura.id, record: { name: 'Kimura Aoi', addresses: one('kimura@shop.example'), note: null } }),
    { kind: 'collected' },
    'a collected contact is not amended in place',
  );
  t.same(await book.ask({ type: 'contacts.replace', id: 'c424242', record: { name: 'Nobody', addresses: one('n@x.example'), note: null } }), {
    kind: 'absent',
  });

  // promote: promoted, then already asserted; then amendable
  const promoted = await book.ask({ type: 'contacts.promote', id: kimura.id });
  t.match(promoted, { kind: 'promoted', contact: { id: kimura.id, origin: 'Asserted', name: 'Kimura' } });
  t.match(await book.ask({ type: 'contacts.promote', id: kimura.id }), { kind: 'already-asserted', contact: { id: kimura.id } });
  t.same(await book.ask({ type: 'contacts.promote', id: 'c424242' }), { kind: 'absent' });
  t.match(
    await book.ask({ type: 'contacts.replace', id: kimura.id, record: { name: 'Kimura Aoi', addresses: one('kimura@shop.example'), note: null } }),
    { kind: 'replaced', contact: { name: 'Kimura Aoi' } },
    'amendable once promoted',
  );

  // export: the contact and the instant taken
  const exported = await book.ask({ type: 'contacts.export', id: sato.id });
  t.match(exported, { exportedAt: ISO, contact: { id: sato.id, name: 'Haruki Sato' } });
  t.ok(Date.parse(exported.exportedAt) >= before - 1 && Date.parse(exported.exportedAt) <= Date.now());
  t.match(await book.ask({ type: 'contacts.export', id: 'c424242' }), { exportedAt: ISO, contact: null });

  // erase: the person and the collected records of their addresses; counts only
  collect(db, [{ address: 'h.sato@work.example', name: 'H. Sato' }], Date.now());
  t.equal(
    many(db.prepare("SELECT 1 FROM contact_addresses WHERE address_key = 'h.sato@work.example'")).length,
    1,
    'the asserted address was not collected again',
  );
  // A home address collected before the owner added it to the record: the deployment's own copy of the same person.
  collect(db, [{ address: 'sato.home@example.jp', name: 'Sato' }], Date.now());
  const current = (await book.ask({ type: 'contacts.get', id: sato.id })).contact!;
  await book.ask({
    type: 'contacts.replace',
    id: sato.id,
    record: { name: current.name, note: current.note, addresses: [...current.addresses, { address: 'sato.home@example.jp', preferred: false }] },
  });
  const erased = await book.ask({ type: 'contacts.erase', id: sato.id });
  t.same(erased, { id: sato.id, found: true, contacts: 2, addresses: 4 }, 'the person and the collected record of their address');
  t.same(await book.ask({ type: 'contacts.by-address', address: 'sato.home@example.jp' }), { contacts: [] });
  t.same(await book.ask({ type: 'contacts.get', id: sato.id }), { contact: null });
  t.same(await book.ask({ type: 'contacts.erase', id: sato.id }), { id: sato.id, found: false, contacts: 0, addresses: 0 }, 'nothing held: a success');

  // an edit racing an erasure answers as absent
  t.same(await book.ask({ type: 'contacts.replace', id: sato.id, record: { name: 'Late Edit', addresses: one('late@x.example'), note: null } }), {
    kind: 'absent',
  });

  // erase-collected: the two counts; asserted contacts kept
  t.same(await book.ask({ type: 'contacts.erase-collected' }), { contacts: 1, addresses: 1 }, 'the one collected contact left');
  t.same(
    (await book.ask({ type: 'contacts.list', pageSize: 50 })).contacts.map((c) => c.id),
    [kimura.id],
  );
  t.same(await book.ask({ type: 'contacts.erase-collected' }), { contacts: 0, addresses: 0 });

  // logs: identifiers and counts at debug, never a person
  t.ok(capture.events('contacts.erased').some((l) => l.id === sato.id && l.contacts === 2 && l.level === 20));
  for (const line of capture.lines.filter((l) => typeof l.event === 'string' && l.event.startsWith('contacts.'))) {
    t.equal(line.level, 20, `${line.event} at debug`);
  }
  const raw = capture.raw().toLowerCase();
  for (const s of [...PERSONAL, 'Kimura Aoi', 'sato.home@example.jp', 'zed@list.example', 'Late Edit']) t.notOk(raw.includes(s.toLowerCase()), 'never logged');
});

t.test('messages the protocol refuses are answered E_PROTOCOL_INVALID; the actor keeps running', async (t) => {
  const { slice } = database(t);
  const { book, capture } = await started(t, slice);
  const { contact } = await book.ask({ type: 'contacts.create', record: { name: 'Sato Haruki', addresses: one('haruki@example.jp'), note: null } });
  const ask = book.ask as (msg: unknown) => Promise<unknown>;
  const record = (over: Record<string, unknown>) => ({ name: 'Sato Haruki', addresses: one('haruki@example.jp'), note: 'Friday meetings', ...over });
  const cases: Array<[string, unknown]> = [
    [
      'two preferred',
      {
        type: 'contacts.create',
        record: record({
          addresses: [
            { address: 'haruki@example.jp', preferred: true },
            { address: 'h.sato@work.example', preferred: true },
          ],
        }),
      },
    ],
    [
      'several, none preferred',
      {
        type: 'contacts.create',
        record: record({
          addresses: [
            { address: 'haruki@example.jp', preferred: false },
            { address: 'h.sato@work.example', preferred: false },
          ],
        }),
      },
    ],
    [
      'the same address twice, in another case',
      {
        type: 'contacts.replace',
        id: contact.id,
        record: record({
          addresses: [
            { address: 'haruki@example.jp', preferred: true },
            { address: 'HARUKI@example.jp', preferred: false },
          ],
        }),
      },
    ],
    ['a single address not preferred', { type: 'contacts.create', record: record({ addresses: [{ address: 'haruki@example.jp', preferred: false }] }) }],
    ['no address', { type: 'contacts.create', record: record({ addresses: [] }) }],
    [
      'too many addresses',
      {
        type: 'contacts.create',
        record: record({
          addresses: Array.from({ length: CONTACT_BOUNDS.addresses + 1 }, (_, i) => ({ address: `a${i}@x.example`, preferred: i === 0 })),
        }),
      },
    ],
    ['an empty name', { type: 'contacts.create', record: record({ name: '   ' }) }],
    ['a name too long', { type: 'contacts.create', record: record({ name: 'S'.repeat(CONTACT_BOUNDS.nameLength + 1) }) }],
    ['a note too long', { type: 'contacts.create', record: record({ note: 'n'.repeat(CONTACT_BOUNDS.noteLength + 1) }) }],
    ['a display name in the address', { type: 'contacts.create', record: record({ addresses: one('Sato Haruki <haruki@example.jp>') }) }],
    ['an unknown field', { type: 'contacts.create', record: record({ origin: 'Collected' }) }],
    ['a malformed identifier', { type: 'contacts.get', id: 'Sato Haruki' }],
    ['a malformed identifier to erase', { type: 'contacts.erase', id: 'c0' }],
    ['a lookup that is not an address', { type: 'contacts.by-address', address: 'Sato Haruki' }],
    ['a page of none', { type: 'contacts.list', pageSize: 0 }],
    ['a page beyond the bound', { type: 'contacts.list', pageSize: CONTACT_BOUNDS.pageMax + 1 }],
    ['a prefix beyond the bound', { type: 'contacts.list', pageSize: 10, prefix: 'p'.repeat(CONTACT_BOUNDS.prefixLength + 1) }],
    ['an unknown origin', { type: 'contacts.list', pageSize: 10, origin: 'asserted' }],
    ['an unknown message', { type: 'contacts.merge', id: contact.id }],
  ];
  for (const [what, msg] of cases) t.equal(await refusal(ask(msg)), 'E_PROTOCOL_INVALID', what);

  t.same((await book.ask({ type: 'contacts.get', id: contact.id })).contact, contact, 'still running, and nothing refused was written');
  t.equal((await book.ask({ type: 'contacts.list', pageSize: CONTACT_BOUNDS.pageMax })).contacts.length, 1);
  // The actor's thread hands its log lines to this one on their own channel: a line may land after the reply.
  await until(() => capture.events('protocol.invalid').length >= cases.length, 10_000, 'the refusals logged').catch(() => undefined);
  t.equal(capture.events('protocol.invalid').length, cases.length, 'each refusal logged by its envelope');
  const raw = capture.raw().toLowerCase();
  for (const s of PERSONAL) t.notOk(raw.includes(s.toLowerCase()), 'a refused message is never logged');
});

t.test('the book survives a restart of the tree (it is in the database)', async (t) => {
  const { slice } = database(t);
  const first = await started(t, slice);
  const { contact } = await first.book.ask({
    type: 'contacts.create',
    record: {
      name: 'Sato Haruki',
      addresses: [
        { address: 'haruki@example.jp', preferred: false },
        { address: 'h.sato@work.example', preferred: true },
      ],
      note: 'Friday meetings',
    },
  });
  await first.supervisor.stop(5_000);
  await t.rejects(first.book.ask({ type: 'contacts.get', id: contact.id }, { deadlineMs: 2_000 }), { code: /^E_ACTOR_/ }, 'down while stopped');

  const second = await started(t, slice);
  t.same((await second.book.ask({ type: 'contacts.get', id: contact.id })).contact, contact, 'the same record after the restart');
  const next = await second.book.ask({ type: 'contacts.create', record: { name: 'Kimura', addresses: one('kimura@shop.example'), note: null } });
  t.not(next.contact.id, contact.id);
  await second.book.ask({ type: 'contacts.erase', id: next.contact.id });
  await second.supervisor.stop(5_000);

  const third = await started(t, slice);
  const again = await third.book.ask({ type: 'contacts.create', record: { name: 'Kimura', addresses: one('kimura@shop.example'), note: null } });
  t.ok(Number(again.contact.id.slice(1)) > Number(next.contact.id.slice(1)), 'an erased identifier is never reused, across restarts too');
});

t.test('the service starts it: permanent, on the system thread, never given up', async (t) => {
  const dir = tempDir(t);
  const file = writeConfig(dir, {
    Storage: { Database: join(dir, 'mailcairn.db') },
    Accounts: [{ Id: 'main', Imap: { Host: '127.0.0.1', Port: 1143, Security: 'None', Username: 'u', Password: 'env:PW' }, Folders: [{ Alias: 'inbox' }] }],
  });
  const children = systemChildren(loadConfig({ file, env: { PW: 'x' } }));
  const spec = children.find((c) => c.id === CONTACTS_ID);
  t.match(spec, {
    restart: 'permanent',
    placement: { kind: 'shared', group: 'system' },
    config: { database: join(dir, 'mailcairn.db') },
    intensity: { maxRestarts: 1_000_000 },
  });
  t.ok(children.findIndex((c) => c.id === CONTACTS_ID) < children.findIndex((c) => c.id.startsWith('imap-sync:')), 'started before the accounts');
});
