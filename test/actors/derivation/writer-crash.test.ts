/**
 * The derivation writer crashing under a synchronization run: a real SQLite
 * error in its write (a trigger the test places on `search_documents`, which
 * RAISEs on every insert) crashes the writer, the supervisor restarts it and
 * says so, and the run goes on: the mail is mirrored, the folder's run is
 * not a failure, the run logs `sync.derivation-deferred`, and the mail stays
 * underived — counted as not yet indexed, never shown half-made. Once the
 * fault is gone the next run catches up what was left: every message
 * derived once, the full-text index consistent.
 *
 * A database held by another writer past the busy timeout is not such a
 * fault: the writer waits and tries again (`derivation.busy`) and is not
 * restarted.
 */
import Libsql from 'libsql';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { DERIVATION_ID } from '../../../actors/derivation/protocol.ts';
import { migrate } from '../../../runtime/store/migrate.ts';
import { openStore } from '../../../runtime/store/open.ts';
import { startDovecot } from '../../harness/dovecot.ts';
import { generateMailbox } from '../../harness/generator.ts';
import { writeMaildir } from '../../harness/place-mail.ts';
import { tempDir } from '../../helpers/daemon.ts';
import { until } from '../../helpers/log-capture.ts';
import { indexState } from '../../helpers/mirror.ts';
import { startSyncService, type SyncService } from '../../helpers/sync-service.ts';

t.setTimeout(300_000);

const COUNT = 40;

/**
 * COUNT messages of dee's in a private Dovecot, and a service mirroring them over a store whose
 * search_documents refuse every insert (`test_fault_on_index`): its writer crashes on the first segment.
 */
async function faultyStore(t: Test, seed: number, extra: Record<string, unknown> = {}): Promise<{ database: string; sync: SyncService }> {
  const dovecot = await startDovecot({ users: [{ user: 'dee', password: 'pw-dee' }] });
  t.teardown(() => dovecot.stop());
  await writeMaildir(
    dovecot,
    'dee',
    'INBOX',
    [...generateMailbox({ seed, count: COUNT, profile: 'small' })].map((m) => ({ raw: m.raw })),
  );
  const dir = tempDir(t);
  const database = join(dir, 'mailcairn.db');
  const setup = openStore({ database, busyTimeoutMs: 5_000, synchronous: 'Normal' });
  migrate(setup);
  setup.exec(`CREATE TRIGGER test_fault_on_index BEFORE INSERT ON search_documents BEGIN SELECT RAISE(ABORT, 'fault injected by the test'); END`);
  setup.close();
  const sync = await startSyncService(dir, dovecot, [{ id: 'dee', user: 'dee', folders: [{ Alias: 'inbox' }] }], extra);
  t.teardown(() => sync.service.stop());
  return { database, sync };
}

t.test('a writer that crashes leaves mail underived and counted; the next run derives it', async (t) => {
  const { database, sync } = await faultyStore(t, 77);

  const status = await sync.syncNow('dee', 120_000);
  const inbox = status.accounts[0]?.folders.find((f) => f.alias === 'inbox');
  t.equal(inbox?.lastRun?.outcome, 'ok', 'the folder run is not a failure: the mirror itself succeeded');
  t.ok(sync.logs.events('sync.derivation-deferred').length >= 1, 'the run says its mail was not derived');
  await until(() => sync.logs.events('actor.start', 'derivation').some((l) => l.reason === 'E_ACTOR_CRASHED'), 60_000, 'the writer to be restarted');
  t.match(
    sync.logs.events('actor.exit', 'derivation').find((l) => l.reason === 'E_ACTOR_CRASHED'),
    { component: 'supervisor', reason: 'E_ACTOR_CRASHED' },
    'the crash is logged by the supervisor',
  );
  t.same(sync.logs.events('sync.folder-failed'), [], 'no folder failure was recorded for the writer’s fault');

  const before = indexState(database);
  t.equal(before.withRaw, COUNT, 'every message is mirrored');
  t.equal(before.underived, COUNT, 'none was derived: each waits, counted as not yet indexed');
  t.equal(before.documents, 0, 'and no half-made document exists');

  const fix = new Libsql(database);
  fix.exec('DROP TRIGGER test_fault_on_index');
  fix.close();
  // A run that stores nothing new still catches up what was left.
  await sync.syncNow('dee', 120_000);
  const after = indexState(database);
  t.same(
    { underived: after.underived, documents: after.documents, keys: after.keys, strayDocuments: after.strayDocuments, strayPassages: after.strayPassages },
    { underived: 0, documents: after.stored, keys: after.stored, strayDocuments: 0, strayPassages: 0 },
    'every message derived once',
  );
  t.ok(after.ftsConsistent, 'the full-text index agrees with its documents');
});

t.test('a database held past the busy timeout: the writer waits, tries again and derives everything, without a restart', async (t) => {
  // The first run mirrors the mail and leaves it underived (the writer refused by the fault, as above).
  const { database, sync } = await faultyStore(t, 78, { Storage: { BusyTimeout: '00:00:01' } });
  await sync.syncNow('dee', 120_000);
  await until(() => sync.logs.events('actor.start', 'derivation').some((l) => l.reason === 'E_ACTOR_CRASHED'), 60_000, 'the writer to be restarted');
  t.equal(indexState(database).underived, COUNT, 'the mail waits underived');
  const crashes = (): number => sync.logs.events('actor.exit', 'derivation').filter((l) => l.reason === 'E_ACTOR_CRASHED').length;
  const crashedBefore = crashes();

  // Another writer holds the database while the writer catches up, and lets go once it was refused.
  const holder = new Libsql(database);
  holder.exec('DROP TRIGGER test_fault_on_index');
  holder.exec('BEGIN IMMEDIATE');
  const answer = sync.service.supervisor.ref(DERIVATION_ID).ask({ type: 'derivation.catch-up', account: 'dee', throughId: null }, { deadlineMs: 60_000 });
  await until(() => sync.logs.events('derivation.busy').length > 0, 30_000, 'the writer to be refused as busy');
  holder.exec('COMMIT');
  holder.close();

  const reply = await answer;
  t.equal(reply.derived, COUNT, 'the catch-up derived every message');
  t.equal(crashes(), crashedBefore, 'the writer was not restarted');
  t.match(sync.logs.events('derivation.busy')[0], { attempt: 1, code: 'SQLITE_BUSY' }, 'the wait is logged with its code');
  const after = indexState(database);
  t.same({ underived: after.underived, documents: after.documents }, { underived: 0, documents: after.stored }, 'every message derived once');
  t.ok(after.ftsConsistent, 'the full-text index agrees with its documents');
});
