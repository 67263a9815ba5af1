/**
 * Contact collection from a real mirror (docs/contacts.md "Collection"): a
 * private Dovecot mailbox with an inbox, a sent folder and a junk folder,
 * mirrored by the real service. Senders of inbox mail and recipients of sent
 * mail become collected contacts; list mail, no-reply and role addresses,
 * the owner's own address and junk do not; an asserted contact holding one
 * of the addresses is left exactly as it was; another run collects only what
 * is new, and does not bring back what the owner erased. With
 * `MailSynchronization:CollectContacts` false nothing is collected. A
 * collection that fails (a real SQLite error the test places on the
 * contacts table) takes the message's derivation with it: nothing is half
 * made, and the next run derives and collects both. No address or name
 * ever reaches a log line.
 */
import { join } from 'node:path';
import Libsql from 'libsql';
import t from 'tap';
import { contactById, createAsserted, eraseCollected, listContacts, type Contact } from '../../../runtime/store/contacts/book.ts';
import { migrate } from '../../../runtime/store/migrate.ts';
import { openStore } from '../../../runtime/store/open.ts';
import { startDovecot, type Dovecot } from '../../harness/dovecot.ts';
import { appendMessages } from '../../harness/place-mail.ts';
import { tempDir } from '../../helpers/daemon.ts';
import { until } from '../../helpers/log-capture.ts';
import { indexState } from '../../helpers/mirror.ts';
import { type AccountSpec, startSyncService } from '../../helpers/sync-service.ts';

t.setTimeout(240_000);

const OWNER = 'dee@example.org';

let serial = 0;
function mail(headers: Record<string, string>): { raw: Buffer } {
  serial += 1;
  const lines = [
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    `Message-ID: <m${serial}@test.example.org>`,
    'Date: Mon, 3 Mar 2025 10:00:00 +0000',
    `Subject: note ${serial}`,
    '',
    `body ${serial}`,
    '',
  ];
  return { raw: Buffer.from(lines.join('\r\n')) };
}

const inbox = [
  mail({ From: 'Sato Hiroshi <sato@example.jp>', To: OWNER }),
  mail({ From: 'Sato H. <SATO@example.jp>', To: OWNER }),
  mail({ From: 'Shop <noreply@shop.example.com>', To: OWNER }),
  mail({ From: 'Mail Delivery System <MAILER-DAEMON@mx.example.com>', To: OWNER }),
  mail({ From: 'Poster <poster@example.net>', To: 'team@lists.example.org', 'List-Id': 'Team <team.lists.example.org>' }),
  mail({ From: 'News <news@example.com>', To: OWNER, Precedence: 'bulk' }),
  mail({ From: `Dee Myself <${OWNER}>`, To: OWNER }),
  mail({ From: 'Robert Whoever <bob@example.com>', To: OWNER }),
  mail({ From: 'not an address', To: OWNER }),
];
const sent = [
  mail({ From: OWNER, To: 'Kim Lee <kim@example.net>', Cc: 'carol@example.net', Bcc: 'Dan <dan@example.net>' }),
  mail({ From: OWNER, To: 'Bobby <BOB@example.com>' }),
];
const junk = [mail({ From: 'Prize Desk <winner@spam.example>', To: OWNER })];

/** Every name and address the mailbox holds, none of which may reach a log line. */
const PERSONAL = ['sato', 'Hiroshi', 'kim@', 'Kim Lee', 'carol', 'dan@', 'bob@', 'Robert', 'Bobby', 'noreply', 'poster', 'winner', 'Asserted Bob', OWNER];

function account(collect: boolean): { spec: AccountSpec; extra: Record<string, unknown> } {
  return {
    spec: {
      id: 'dee',
      user: 'dee',
      folders: [{ Alias: 'inbox' }, { Alias: 'sent' }, { Alias: 'junk' }],
      // The owner's sender address: never collected.
      smtp: { Host: '127.0.0.1', Port: 2525, Security: 'None', Username: 'dee', From: OWNER },
    },
    extra: { MailSynchronization: { CollectContacts: collect } },
  };
}

async function placeMailbox(dovecot: Dovecot): Promise<void> {
  await appendMessages(dovecot, 'dee', 'INBOX', inbox);
  await appendMessages(dovecot, 'dee', 'Sent', sent);
  await appendMessages(dovecot, 'dee', 'Junk', junk);
}

function book(database: string): { all: Contact[]; close(): void; db: ReturnType<typeof openStore> } {
  const db = openStore({ database, busyTimeoutMs: 5_000, synchronous: 'Normal' });
  return { db, all: listContacts(db, { limit: 200 }).contacts, close: () => db.close() };
}

const collected = (all: Contact[]): Array<{ name: string; address: string }> =>
  all
    .filter((c) => c.origin === 'collected')
    .map((c) => ({ name: c.name, address: c.addresses[0]!.address }))
    .sort((a, b) => a.address.localeCompare(b.address));

t.test('senders of received mail and recipients of sent mail are collected; the rest is not', async (t) => {
  const dovecot = await startDovecot({ users: [{ user: 'dee', password: 'pw-dee' }] });
  t.teardown(() => dovecot.stop());
  await placeMailbox(dovecot);

  const dir = tempDir(t);
  const database = join(dir, 'mailcairn.db');
  const setup = openStore({ database, busyTimeoutMs: 5_000, synchronous: 'Normal' });
  migrate(setup);
  const asserted = createAsserted(setup, { name: 'Asserted Bob', addresses: [{ address: 'bob@example.com', preferred: true }], note: 'met in Kyoto' }, 1_000);
  setup.close();

  const { spec, extra } = account(true);
  const sync = await startSyncService(dir, dovecot, [spec], extra);
  t.teardown(() => sync.service.stop());
  const status = await sync.syncNow('dee', 120_000);
  t.same(
    status.accounts[0]?.folders.map((f) => [f.alias, f.lastRun?.outcome]).sort(),
    [
      ['inbox', 'ok'],
      ['junk', 'ok'],
      ['sent', 'ok'],
    ],
    'the three folders are mirrored',
  );

  const first = book(database);
  t.same(
    collected(first.all),
    [
      { name: 'carol@example.net', address: 'carol@example.net' },
      { name: 'Dan', address: 'dan@example.net' },
      { name: 'Kim Lee', address: 'kim@example.net' },
      { name: 'Sato Hiroshi', address: 'sato@example.jp' },
    ],
    'the inbox senders and the sent recipients, each address once with the first name met (Bcc of the sent copy included)',
  );
  t.same(contactById(first.db, asserted.id), asserted, 'the asserted contact holding a sender and a recipient address is untouched, its name kept');
  t.equal(first.all.length, 5, 'nothing else: no list, bulk, no-reply, role, own, malformed or junk address');
  first.close();

  // Another run with new mail: only the new correspondent is added, nobody twice.
  await appendMessages(dovecot, 'dee', 'INBOX', [
    mail({ From: 'Sato Again <sato@example.jp>', To: OWNER }),
    mail({ From: 'Eve Newcomer <eve@example.org>', To: OWNER }),
  ]);
  await sync.syncNow('dee', 120_000);
  const second = book(database);
  t.same(
    collected(second.all).map((c) => c.address),
    ['carol@example.net', 'dan@example.net', 'eve@example.org', 'kim@example.net', 'sato@example.jp'],
    'a second run adds the newcomer only',
  );
  t.equal(collected(second.all).find((c) => c.address === 'sato@example.jp')?.name, 'Sato Hiroshi', 'a later display name does not replace the one recorded');

  // Erased by the owner: mail already mirrored does not bring them back; new mail does.
  t.same(eraseCollected(second.db), { contacts: 5, addresses: 5 });
  second.close();
  await sync.syncNow('dee', 120_000);
  const third = book(database);
  t.same(collected(third.all), [], 'a run over mail already derived collects nobody again');
  third.close();

  const logged = sync.logs.raw();
  t.equal(PERSONAL.filter((personal) => logged.includes(personal)).length, 0, 'no name or address in any log line');
  t.ok(sync.logs.lines.length > 0, 'the logs were captured');
});

t.test('with CollectContacts false nothing is collected', async (t) => {
  const dovecot = await startDovecot({ users: [{ user: 'dee', password: 'pw-dee' }] });
  t.teardown(() => dovecot.stop());
  await placeMailbox(dovecot);
  const dir = tempDir(t);
  const { spec, extra } = account(false);
  const sync = await startSyncService(dir, dovecot, [spec], extra);
  t.teardown(() => sync.service.stop());
  const status = await sync.syncNow('dee', 120_000);
  t.ok(
    status.accounts[0]?.folders.every((f) => f.lastRun?.outcome === 'ok'),
    'every folder mirrored',
  );
  const off = book(sync.database);
  t.same(off.all, [], 'the book stays empty');
  off.close();
});

t.test('a failed collection leaves its messages underived, and the next run derives and collects them together', async (t) => {
  const dovecot = await startDovecot({ users: [{ user: 'dee', password: 'pw-dee' }] });
  t.teardown(() => dovecot.stop());
  await placeMailbox(dovecot);
  const dir = tempDir(t);
  const database = join(dir, 'mailcairn.db');
  const setup = openStore({ database, busyTimeoutMs: 5_000, synchronous: 'Normal' });
  migrate(setup);
  setup.exec(`CREATE TRIGGER test_fault_on_contacts BEFORE INSERT ON contacts BEGIN SELECT RAISE(ABORT, 'fault injected by the test'); END`);
  setup.close();

  const { spec, extra } = account(true);
  const sync = await startSyncService(dir, dovecot, [spec], extra);
  t.teardown(() => sync.service.stop());
  await sync.syncNow('dee', 120_000);
  const before = indexState(database);
  t.equal(before.withRaw, inbox.length + sent.length + junk.length, 'every message is mirrored');
  t.ok(before.underived > 0, 'the messages whose collection failed are not derived');
  t.equal(before.underived, before.withRaw - before.documents, 'and no derived message lacks its document: nothing half made');
  const empty = book(database);
  t.same(empty.all, [], 'nobody collected');
  empty.close();

  await until(() => sync.logs.events('actor.start', 'derivation').some((l) => l.reason === 'E_ACTOR_CRASHED'), 60_000, 'the writer to be restarted');
  const fix = new Libsql(database);
  fix.exec('DROP TRIGGER test_fault_on_contacts');
  fix.close();
  await sync.syncNow('dee', 120_000);
  const after = indexState(database);
  t.equal(after.underived, 0, 'every message derived on the next run');
  const full = book(database);
  t.same(
    collected(full.all)
      .map((c) => c.address.toLowerCase())
      .sort(),
    ['bob@example.com', 'carol@example.net', 'dan@example.net', 'kim@example.net', 'sato@example.jp'],
    'and its correspondents collected with it',
  );
  full.close();
});
