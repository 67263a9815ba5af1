/**
 * The core synchronization suite against the third real IMAP server, Courier
 * (Debian's courier-imap 5.0): the first mirror, then flags, keywords,
 * expunges and new mail made behind the service's back, in INBOX and in a
 * folder under Courier's `INBOX.` namespace. Courier has neither CONDSTORE
 * nor QRESYNC: every run compares all flags (a FLAGS sweep) and finds
 * expunges by `UID SEARCH ALL`. It has no SPECIAL-USE either: the `sent`
 * alias without a `Path` resolves by the folder's name (imapflow's guess).
 * docs/interoperability.md records what each server offered.
 */
import t from 'tap';
import { courierAvailable, startCourier } from '../../harness/courier.ts';
import { fetchAllOverImap, imapAdmin } from '../../harness/imap-admin.ts';
import { withImap } from '../../harness/imap-client.ts';
import { appendMessages } from '../../harness/place-mail.ts';
import { tempDir } from '../../helpers/daemon.ts';
import { mirrorStates, readMirror } from '../../helpers/mirror.ts';
import { startSyncService } from '../../helpers/sync-service.ts';

t.setTimeout(240_000);

function message(i: number): string {
  return [
    `From: Peer ${i} <peer${i}@example.net>`,
    'To: Dora <dora@example.net>',
    `Subject: Courier interop ${i}`,
    `Message-ID: <d${i}@example.net>`,
    'Date: Tue, 3 Nov 2026 09:00:00 +0000',
    '',
    `Body ${i}`,
    '',
  ].join('\r\n');
}

t.test(
  'Courier: mirror, then flags, keywords, expunges and new mail converge in INBOX and INBOX.Projects',
  { skip: !courierAvailable() && 'Courier is not installed (see .ci/run)' },
  async (t) => {
    const courier = await startCourier({ users: [{ user: 'dora', password: 'pw-dora' }] });
    t.teardown(() => courier.stop());
    const admin = imapAdmin(courier);
    await admin.createMailbox('dora', 'INBOX.Projects');
    await appendMessages(
      courier,
      'dora',
      'INBOX',
      Array.from({ length: 80 }, (_, i) => ({ raw: message(i), flags: i % 4 === 0 ? ['\\Seen'] : [] })),
    );
    await appendMessages(
      courier,
      'dora',
      'INBOX.Projects',
      Array.from({ length: 12 }, (_, i) => ({ raw: message(200 + i) })),
    );
    await appendMessages(courier, 'dora', 'INBOX.Sent', [{ raw: message(300), flags: ['\\Seen'] }]);

    const capabilities = await withImap(courier, 'dora', async (c) =>
      [...c.capabilities.keys()].filter((c) => /CONDSTORE|QRESYNC|IDLE|SPECIAL-USE|UIDPLUS|ENABLE|ESEARCH|MOVE/.test(c)).sort(),
    );
    t.comment(`Courier offers: ${capabilities.join(' ')}`);
    t.notOk(capabilities.includes('CONDSTORE') || capabilities.includes('QRESYNC'), 'the paths without CONDSTORE and QRESYNC run');

    const sync = await startSyncService(
      tempDir(t),
      courier,
      [{ id: 'dora', user: 'dora', folders: [{ Alias: 'inbox' }, { Alias: 'projects', Path: 'INBOX.Projects' }, { Alias: 'sent' }] }],
      // Runs only when the test asks (the change watch has its own test, freshness.test.ts): each compare follows a run that saw every change.
      { MailSynchronization: { ChangeCheckInterval: '01:00:00' } },
    );
    t.teardown(() => sync.service.stop());
    const compare = async (what: string): Promise<void> => {
      for (const [alias, box] of [
        ['inbox', 'INBOX'],
        ['projects', 'INBOX.Projects'],
        ['sent', 'INBOX.Sent'],
      ] as const) {
        const server = (await fetchAllOverImap(courier, 'dora', box)).map((m) => ({ uid: m.uid, flags: [...m.flags].sort(), sha256: m.sha256 }));
        t.same(readMirror(sync.database, 'dora', alias), server, `${alias}: mirror equals Courier ${what}`);
      }
    };
    const status = await sync.syncNow('dora');
    const folders = status.accounts.find((a) => a.account === 'dora')?.folders ?? [];
    t.same(
      folders.map((f) => [f.alias, f.mirrored, f.lastRun?.outcome]).sort(),
      [
        ['inbox', true, 'ok'],
        ['projects', true, 'ok'],
        ['sent', true, 'ok'],
      ],
      'every folder resolved and mirrored; the sent alias found INBOX.Sent by its name',
    );
    t.equal(readMirror(sync.database, 'dora', 'sent').length, 1, 'the sent folder mirrored');
    await compare('after the first mirror');

    await admin.addFlags('dora', 'INBOX', [1, 2], ['\\Flagged', 'Work']);
    await admin.removeFlags('dora', 'INBOX', [1], ['\\Seen']);
    await admin.expunge('dora', 'INBOX', [3, 4]);
    await appendMessages(courier, 'dora', 'INBOX', [{ raw: message(900) }]);
    await admin.addFlags('dora', 'INBOX.Projects', [5], ['\\Answered', '$Forwarded']);
    await admin.expunge('dora', 'INBOX.Projects', [6]);
    await sync.syncNow('dora');
    await compare('after flags, keywords, expunges and new mail');
    t.equal(mirrorStates(sync.database, 'dora', 'inbox').tombstoned, 2);
    t.equal(mirrorStates(sync.database, 'dora', 'projects').tombstoned, 1);

    // A server restart between runs (every session dropped) changes nothing in the mirror.
    await courier.restart();
    await admin.removeFlags('dora', 'INBOX', [2], ['Work']);
    await sync.syncNow('dora');
    await compare('after a server restart and a keyword removed');

    // A new UIDVALIDITY (the folder deleted and made again) is mirrored afresh.
    await admin.resetUidValidity('dora', 'INBOX.Projects');
    await sync.syncNow('dora');
    await compare('after INBOX.Projects got a new UIDVALIDITY');
  },
);
