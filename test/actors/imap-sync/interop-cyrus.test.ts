/**
 * The core synchronization suite against a second real IMAP server, Cyrus
 * (Debian's cyrus-imapd): the first mirror, then flags, keywords, expunges
 * and new mail made behind the service's back. docs/interoperability.md
 * records what each server offered and which paths ran.
 */
import t from 'tap';
import { imapClient } from '../../harness/imap-client.ts';
import { cyrusAvailable, startCyrus } from '../../harness/cyrus.ts';
import { fetchAllOverImap, imapAdmin } from '../../harness/imap-admin.ts';
import { appendMessages } from '../../harness/place-mail.ts';
import { tempDir } from '../../helpers/daemon.ts';
import { mirrorStates, readMirror } from '../../helpers/mirror.ts';
import { startSyncService } from '../../helpers/sync-service.ts';

t.setTimeout(240_000);

function message(i: number): string {
  return [
    `From: Peer ${i} <peer${i}@example.net>`,
    'To: Carol <carol@example.net>',
    `Subject: Cyrus interop ${i}`,
    `Message-ID: <c${i}@example.net>`,
    'Date: Tue, 3 Nov 2026 09:00:00 +0000',
    '',
    `Body ${i}`,
    '',
  ].join('\r\n');
}

t.test(
  'Cyrus: mirror, then flags, keywords, expunges and new mail converge',
  { skip: !cyrusAvailable() && 'Cyrus is not installed (see .ci/run)' },
  async (t) => {
    const cyrus = await startCyrus({ users: [{ user: 'carol', password: 'pw-carol' }] });
    t.teardown(() => cyrus.stop());
    const admin = imapAdmin(cyrus);
    await appendMessages(
      cyrus,
      'carol',
      'INBOX',
      Array.from({ length: 80 }, (_, i) => ({ raw: message(i), flags: i % 4 === 0 ? ['\\Seen'] : [] })),
    );

    const client = imapClient(cyrus, 'carol');
    await client.connect();
    const capabilities = [...client.capabilities.keys()].filter((c) => /CONDSTORE|QRESYNC|IDLE|SPECIAL-USE|UIDPLUS|ENABLE|ESEARCH/.test(c)).sort();
    await client.logout();
    t.comment(`Cyrus offers: ${capabilities.join(' ')}`);

    const sync = await startSyncService(tempDir(t), cyrus, [{ id: 'carol', user: 'carol', folders: [{ Alias: 'inbox' }] }]);
    t.teardown(() => sync.service.stop());
    const compare = async (what: string): Promise<void> => {
      const server = (await fetchAllOverImap(cyrus, 'carol', 'INBOX')).map((m) => ({ uid: m.uid, flags: [...m.flags].sort(), sha256: m.sha256 }));
      t.same(readMirror(sync.database, 'carol', 'inbox'), server, `mirror equals Cyrus ${what}`);
    };
    await sync.syncNow('carol');
    await compare('after the first mirror');

    await admin.addFlags('carol', 'INBOX', [1, 2], ['\\Flagged', 'Work']);
    await admin.removeFlags('carol', 'INBOX', [1], ['\\Seen']);
    await admin.expunge('carol', 'INBOX', [3, 4]);
    await appendMessages(cyrus, 'carol', 'INBOX', [{ raw: message(900) }]);
    await sync.syncNow('carol');
    await compare('after flags, keywords, expunges and new mail');
    t.equal(mirrorStates(sync.database, 'carol', 'inbox').tombstoned, 2);
  },
);
