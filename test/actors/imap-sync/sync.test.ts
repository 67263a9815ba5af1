/**
 * The sync actor against a real Dovecot: the first mirror, then changes made
 * behind the service's back (flags, keywords, expunges, new mail, a
 * UIDVALIDITY reset, a folder renamed away from its alias). After every run
 * the mirror must equal the server: same UIDs, flags and content hashes.
 */
import t from 'tap';
import { startDovecot } from '../../harness/dovecot.ts';
import { mailAdmin } from '../../harness/doveadm.ts';
import { appendMessages } from '../../harness/place-mail.ts';
import { tempDir } from '../../helpers/daemon.ts';
import { mirrorStates, readMirror } from '../../helpers/mirror.ts';
import { startSyncService } from '../../helpers/sync-service.ts';

// Real servers and a whole mirror: generous on a loaded machine (CI shares two cores).
t.setTimeout(300_000);

function message(i: number, extra = ''): string {
  return [
    `From: Sender ${i} <sender${i}@example.org>`,
    'To: Alice <alice@example.org>',
    `Subject: Secret subject number ${i}`,
    `Message-ID: <m${i}@example.org>`,
    'Date: Mon, 2 Nov 2026 10:00:00 +0000',
    'Content-Type: text/plain; charset=utf-8',
    '',
    `Body of message ${i}. ${extra}`,
    '',
  ].join('\r\n');
}

t.test('mirrors folders, follows changes made on the server, and never shows a message twice', async (t) => {
  const dovecot = await startDovecot({ users: [{ user: 'alice', password: 'pw-alice' }] });
  t.teardown(() => dovecot.stop());
  const admin = mailAdmin(dovecot);
  await appendMessages(
    dovecot,
    'alice',
    'INBOX',
    Array.from({ length: 120 }, (_, i) => ({ raw: message(i), flags: i % 3 === 0 ? ['\\Seen'] : [] })),
  );
  await appendMessages(
    dovecot,
    'alice',
    'Sent',
    Array.from({ length: 5 }, (_, i) => ({ raw: message(1000 + i), flags: ['\\Seen'] })),
  );
  await admin.createMailbox('alice', 'Projects');
  await appendMessages(dovecot, 'alice', 'Projects', [{ raw: message(2000) }]);

  const dir = tempDir(t);
  const sync = await startSyncService(dir, dovecot, [
    {
      id: 'alice',
      user: 'alice',
      folders: [{ Alias: 'inbox' }, { Alias: 'sent' }, { Alias: 'projects', Path: 'Projects' }, { Alias: 'elsewhere', Path: 'NoSuchFolder' }],
    },
  ]);
  t.teardown(() => sync.service.stop());

  const compare = async (alias: string, mailbox: string, what: string): Promise<void> => {
    const server = (await admin.fetchAll('alice', mailbox)).map((m) => ({ uid: m.uid, flags: [...m.flags].sort(), sha256: m.sha256 }));
    t.same(readMirror(sync.database, 'alice', alias), server, `${alias}: mirror equals server ${what}`);
  };

  let status = await sync.syncNow('alice');
  for (let i = 0; i < 5 && status.accounts[0]?.folders.find((f) => f.alias === 'inbox')?.lastRun?.hasMoreEmails; i++) status = await sync.syncNow('alice');
  await compare('inbox', 'INBOX', 'after the first mirror');
  await compare('sent', 'Sent', 'after the first mirror');
  const folders = Object.fromEntries(status.accounts[0]!.folders.map((f) => [f.alias, f]));
  t.equal(folders.inbox?.lastRun?.outcome, 'ok');
  t.equal(folders.elsewhere?.lastRun?.outcome, 'no-such-folder', 'an alias naming no folder is reported, not fatal');
  t.ok((folders.inbox?.lastSeenUid ?? 0) >= 120);

  await admin.addFlags('alice', 'INBOX', [1, 2, 3], ['\\Flagged', '$Important']);
  await admin.removeFlags('alice', 'INBOX', [1], ['\\Seen']);
  await admin.expunge('alice', 'INBOX', [5, 6, 7]);
  await appendMessages(dovecot, 'alice', 'INBOX', [{ raw: message(500) }, { raw: message(501), flags: ['\\Answered'] }]);
  await sync.syncNow('alice');
  await compare('inbox', 'INBOX', 'after flags, keywords, expunges and new mail');
  t.equal(mirrorStates(sync.database, 'alice', 'inbox').tombstoned, 3, 'expunged mail became tombstones');

  await admin.resetUidValidity('alice', 'INBOX');
  await sync.syncNow('alice');
  await compare('inbox', 'INBOX', 'after a UIDVALIDITY reset');

  await compare('projects', 'Projects', 'before the rename');
  await admin.renameMailbox('alice', 'Projects', 'Projects Old');
  status = await sync.syncNow('alice');
  const projects = status.accounts[0]!.folders.find((f) => f.alias === 'projects');
  t.equal(projects?.lastRun?.outcome, 'no-such-folder', 'a folder renamed away from its alias is reported');
  t.equal(readMirror(sync.database, 'alice', 'projects').length, 1, 'what was mirrored stays until an operator erases it');

  const text = JSON.stringify(status);
  t.notMatch(text, /Secret subject|example\.org|NoSuchFolder|INBOX|Projects/, 'the status holds no subject, address or folder path');
  t.notMatch(sync.logs.raw(), /Secret subject|sender\d+@example\.org|Body of message/, 'no log line carries mail content');
});

t.test('a server offering neither CONDSTORE nor QRESYNC: flags and expunges are found by sweeps', async (t) => {
  const dovecot = await startDovecot({
    users: [{ user: 'sam', password: 'pw-sam' }],
    extraConfig: 'protocol imap {\n  imap_capability = IMAP4rev1 SASL-IR LOGIN-REFERRALS ID ENABLE IDLE LITERAL+ SPECIAL-USE UIDPLUS\n}\n',
  });
  t.teardown(() => dovecot.stop());
  const admin = mailAdmin(dovecot);
  await appendMessages(
    dovecot,
    'sam',
    'INBOX',
    Array.from({ length: 40 }, (_, i) => ({ raw: message(3000 + i) })),
  );
  const sync = await startSyncService(tempDir(t), dovecot, [{ id: 'sam', user: 'sam', folders: [{ Alias: 'inbox' }] }]);
  t.teardown(() => sync.service.stop());
  const compare = async (what: string): Promise<void> => {
    const server = (await admin.fetchAll('sam', 'INBOX')).map((m) => ({ uid: m.uid, flags: [...m.flags].sort(), sha256: m.sha256 }));
    t.same(readMirror(sync.database, 'sam', 'inbox'), server, `mirror equals server ${what}`);
  };
  await sync.syncNow('sam');
  await compare('after the first mirror');
  await admin.addFlags('sam', 'INBOX', [7, 8], ['\\Answered', 'Later']);
  await admin.expunge('sam', 'INBOX', [9]);
  await sync.syncNow('sam');
  await compare('after flag changes and an expunge, without CONDSTORE');
});

t.test('implicit TLS and STARTTLS to a server whose authority the account trusts; an untrusted certificate is refused', async (t) => {
  const dovecot = await startDovecot({ users: [{ user: 'tina', password: 'pw-tina' }], tls: true });
  t.teardown(() => dovecot.stop());
  await appendMessages(
    dovecot,
    'tina',
    'INBOX',
    Array.from({ length: 12 }, (_, i) => ({ raw: message(4000 + i) })),
  );
  const sync = await startSyncService(tempDir(t), dovecot, [
    { id: 'implicit', user: 'tina', host: 'localhost', port: dovecot.tlsPort!, security: 'Tls', folders: [{ Alias: 'inbox' }] },
    { id: 'upgrade', user: 'tina', host: 'localhost', port: dovecot.port, security: 'StartTls', folders: [{ Alias: 'inbox' }] },
  ]);
  t.teardown(() => sync.service.stop());
  await sync.syncNow('implicit');
  await sync.syncNow('upgrade');
  t.equal(readMirror(sync.database, 'implicit', 'inbox').length, 12, 'mirrored over implicit TLS');
  t.equal(readMirror(sync.database, 'upgrade', 'inbox').length, 12, 'mirrored after STARTTLS');

  const untrusting = await startSyncService(tempDir(t), { ...dovecot, certificate: undefined }, [
    { id: 'wary', user: 'tina', host: 'localhost', port: dovecot.tlsPort!, security: 'Tls', folders: [{ Alias: 'inbox' }] },
  ]);
  t.teardown(() => untrusting.service.stop());
  const status = await untrusting.syncNow('wary');
  t.equal(status.accounts[0]?.lastRun?.outcome, 'failed', 'a certificate nobody vouches for is not accepted');
  t.equal(readMirror(untrusting.database, 'wary', 'inbox').length, 0);
});
