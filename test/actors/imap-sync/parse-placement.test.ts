/**
 * Where a fetched message is parsed does not show: small messages are parsed
 * on the account's own thread, one above the in-place limit (8 MiB) by the
 * parse pool, and every one of them is stored with its derived properties
 * and found by a search of its body, in UID order.
 */
import Libsql from 'libsql';
import t from 'tap';
import { startDovecot } from '../../harness/dovecot.ts';
import { appendMessages } from '../../harness/place-mail.ts';
import { tempDir } from '../../helpers/daemon.ts';
import { startSyncService } from '../../helpers/sync-service.ts';

t.setTimeout(300_000);

function message(i: number, body: string): string {
  return [
    `From: Sender ${i} <sender${i}@example.org>`,
    'To: Alice <alice@example.org>',
    `Subject: Placement subject ${i}`,
    `Message-ID: <p${i}@example.org>`,
    'Date: Mon, 2 Nov 2026 10:00:00 +0000',
    'Content-Type: text/plain; charset=utf-8',
    '',
    body,
    '',
  ].join('\r\n');
}

t.test('messages parsed in place and by the pool are stored alike', async (t) => {
  const dovecot = await startDovecot({ users: [{ user: 'alice', password: 'pw-alice' }] });
  t.teardown(() => dovecot.stop());
  // 9 MiB of text lines: above the in-place limit, under MaxMessageBytes (50 MiB by default); the marker
  // comes first, as only the body's beginning is indexed.
  const large = `marker-large-zebra\r\n${'filler line of a very long letter\r\n'.repeat(270_000)}`;
  await appendMessages(dovecot, 'alice', 'INBOX', [
    { raw: message(1, 'marker-small-one') },
    { raw: message(2, large) },
    { raw: message(3, 'marker-small-three') },
  ]);
  const sync = await startSyncService(tempDir(t), dovecot, [{ id: 'alice', user: 'alice', folders: [{ Alias: 'inbox' }] }]);
  t.teardown(() => sync.service.stop());
  await sync.syncNow('alice');

  const db = new Libsql(sync.database, { readonly: true });
  t.teardown(() => db.close());
  const rows = db.prepare("SELECT uid, subject, parse_version IS NOT NULL AS derived FROM messages WHERE state = 'stored' ORDER BY uid").all() as Array<{
    uid: number;
    subject: string;
    derived: number;
  }>;
  t.same(
    rows.map((r) => [r.subject, r.derived]),
    [
      ['Placement subject 1', 1],
      ['Placement subject 2', 1],
      ['Placement subject 3', 1],
    ],
    'all three stored and derived, in order',
  );
  const found = (word: string): string[] =>
    (
      db
        .prepare(
          'SELECT m.subject FROM search_index JOIN search_keys k ON k.key = search_index.rowid JOIN messages m ON m.id = k.message_id WHERE search_index MATCH ? ORDER BY m.uid',
        )
        .all(`"${word}"`) as Array<{ subject: string }>
    ).map((r) => r.subject);
  t.same(found('marker-large-zebra'), ['Placement subject 2'], 'the large message is searchable by its body');
  t.same(found('marker-small-three'), ['Placement subject 3'], 'a small one too');
});
