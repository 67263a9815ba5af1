/**
 * The gauges read from the store at each collection, against a real mirror:
 * a service in process mirrors a real Dovecot account, and what a scrape
 * reads (the SDK in process, collected on demand) equals the mailbox —
 * messages per folder, none left unindexed once derived, a freshness lag
 * for each folder caught up and none for a folder never found — and the
 * change journal and outbox by state as they were made (a change applied,
 * one the server refused; sends at two stages). Every label holds a
 * configured identifier or a word of a fixed vocabulary.
 */
import { statSync } from 'node:fs';
import Libsql from 'libsql';
import t from 'tap';
import { RecordChangesReply } from '../../actors/imap-sync/protocol.ts';
import { startDovecot } from '../harness/dovecot.ts';
import { generateMailbox } from '../harness/generator.ts';
import { writeMaildir } from '../harness/place-mail.ts';
import { tempDir } from '../helpers/daemon.ts';
import { installTelemetrySdk, type MetricPoint } from '../helpers/telemetry-sdk.ts';
import { openServiceStore, seedSend } from '../helpers/outbox.ts';
import { startSyncService } from '../helpers/sync-service.ts';

t.setTimeout(240_000);

const ACCOUNT = 'gus';
const INBOX = 12;
const ARCHIVE = 5;

/** Polls `read` until `done` holds of what it returned, or fails naming `what`. */
async function eventually<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** `{label value joined: value}` of one metric's points, for comparing with a literal. */
function byLabels(points: readonly MetricPoint[], name: string, labels: readonly string[]): Record<string, number> {
  return Object.fromEntries(points.filter((p) => p.name === name).map((p) => [labels.map((l) => String(p.attributes[l])).join(' '), p.value as number]));
}

t.test('a scrape during a real mirror reads what the mailbox holds', async (t) => {
  const dovecot = await startDovecot({ users: [{ user: ACCOUNT, password: 'pw-gus' }] });
  t.teardown(() => dovecot.stop());
  await writeMaildir(dovecot, ACCOUNT, 'INBOX', [...generateMailbox({ seed: 51, count: INBOX, profile: 'small' })]);
  await writeMaildir(dovecot, ACCOUNT, 'Archive', [...generateMailbox({ seed: 52, count: ARCHIVE, profile: 'small' })]);

  // Installed before the service starts: the composition root registers the gauges on the provider it finds.
  const sdk = installTelemetrySdk(t);
  const dir = tempDir(t);
  const sync = await startSyncService(dir, dovecot, [
    { id: ACCOUNT, user: ACCOUNT, folders: [{ Alias: 'inbox' }, { Alias: 'archive', Path: 'Archive' }, { Alias: 'gone', Path: 'No/Such/Folder' }] },
  ]);
  t.teardown(() => sync.service.stop());
  await sync.syncNow(ACCOUNT);

  const mirrored = await eventually(
    'the mirror to be derived',
    () => sdk.points(),
    (points) => {
      const unindexed = byLabels(points, 'mailcairn.mailbox.unindexed', ['mailcairn.folder']);
      return byLabels(points, 'mailcairn.mailbox.messages', ['mailcairn.folder']).inbox === INBOX && unindexed.inbox === 0 && unindexed.archive === 0;
    },
  );
  t.same(byLabels(mirrored, 'mailcairn.mailbox.messages', ['mailcairn.account', 'mailcairn.folder']), {
    'gus inbox': INBOX,
    'gus archive': ARCHIVE,
    'gus gone': 0,
  });
  t.same(byLabels(mirrored, 'mailcairn.mailbox.unindexed', ['mailcairn.folder']), { inbox: 0, archive: 0, gone: 0 }, 'everything derived');
  const lag = byLabels(mirrored, 'mailcairn.mailbox.freshness_lag', ['mailcairn.folder']);
  t.same(Object.keys(lag).sort(), ['archive', 'inbox'], 'a lag for the folders caught up, none for the folder never found');
  t.ok(lag.inbox! >= 0 && lag.inbox! < 120, `inbox caught up ${lag.inbox} s ago`);
  t.same(byLabels(mirrored, 'mailcairn.embedding.coverage', []), { '': 0 }, 'no embedding generation serves');
  t.same(byLabels(mirrored, 'mailcairn.embedding.spent', []), { '': 0 }, 'nothing spent on embedding');
  const size = byLabels(mirrored, 'mailcairn.store.size', [])['']!;
  t.ok(size >= statSync(sync.database).size, `the store's size (${size} bytes) counts the database file`);

  // The journal: a change the server applies, and one it refuses (dead-lettered at once).
  const reads = new Libsql(sync.database, { readonly: true });
  const [first, second] = reads.prepare('SELECT id FROM messages ORDER BY id LIMIT 2').all() as Array<{ id: number }>;
  reads.close();
  const ask = (messageId: number, change: object) =>
    sync.service.supervisor
      .ref(`imap-sync:${ACCOUNT}`)
      .ask({ type: 'imap-sync.record-changes', messageId, requester: 'rule:test', requestId: null, changes: [change] }, { reply: RecordChangesReply });
  t.equal((await ask(first!.id, { kind: 'set-flagged', value: true })).outcome, 'recorded', 'a change the server will apply');
  t.equal((await ask(second!.id, { kind: 'relocate', targetPath: 'No/Such/Folder' })).outcome, 'recorded', 'a change the server will refuse');
  // The outbox: sends placed at two stages (due a day later, so the outbox actor leaves them).
  const store = openServiceStore(t, sync.database);
  seedSend(store, ACCOUNT, 'Recorded');
  seedSend(store, ACCOUNT, 'Sent');
  seedSend(store, ACCOUNT, 'Sent');

  const later = await eventually(
    'both changes to end',
    () => sdk.points(),
    (points) => {
      const journal = byLabels(points, 'mailcairn.change_journal.entries', ['mailcairn.state']);
      return journal.completed === 1 && journal['dead-lettered'] === 1;
    },
  );
  t.same(
    byLabels(later, 'mailcairn.change_journal.entries', ['mailcairn.account', 'mailcairn.state']),
    {
      'gus pending': 0,
      'gus converging': 0,
      'gus completed': 1,
      'gus dead-lettered': 1,
    },
    'the journal by state, every state present',
  );
  t.same(
    byLabels(later, 'mailcairn.outbox.sends', ['mailcairn.account', 'mailcairn.stage']),
    {
      'gus Recorded': 1,
      'gus TransmissionBegun': 0,
      'gus Sent': 2,
      'gus Refused': 0,
      'gus Cancelled': 0,
    },
    'the outbox by stage, every stage present',
  );

  // Labels: configured identifiers and fixed vocabularies only (the seeded sends' subjects and addresses are in the store).
  const allowed = new Set([
    ACCOUNT,
    'inbox',
    'archive',
    'gone',
    'pending',
    'converging',
    'completed',
    'dead-lettered',
    'Recorded',
    'TransmissionBegun',
    'Sent',
    'Refused',
    'Cancelled',
  ]);
  const storeMetrics = later.filter(
    (p) => p.name.startsWith('mailcairn.') && !p.name.startsWith('mailcairn.supervisor') && !p.name.startsWith('mailcairn.sync'),
  );
  t.same(
    storeMetrics.flatMap((p) => Object.values(p.attributes).filter((v) => !allowed.has(String(v)))),
    [],
    'no label outside the configured identifiers and vocabularies',
  );
});
