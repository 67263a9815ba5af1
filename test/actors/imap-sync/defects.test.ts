/**
 * A defect is not an IMAP outage (issue 11). A real SQLite error in the
 * store path — a trigger the test places on the mirror table, which RAISEs
 * on every insert — crashes the account's actor, the supervisor restarts it
 * (`actor.exit` E_ACTOR_CRASHED, `actor.restart`, `actor.start`), and the run
 * is recorded as interrupted, never as server-unresponsive or unexpected.
 * Once the fault is gone the mirror converges. A header-less message is
 * stored unreadable with its own log line. No log line carries mail content.
 */
import Libsql from 'libsql';
import { join } from 'node:path';
import t from 'tap';
import { migrate } from '../../../runtime/store/migrate.ts';
import { openStore } from '../../../runtime/store/open.ts';
import { startDovecot } from '../../harness/dovecot.ts';
import { mailAdmin } from '../../harness/doveadm.ts';
import { generateMailbox } from '../../harness/generator.ts';
import { writeMaildir } from '../../harness/place-mail.ts';
import { tempDir } from '../../helpers/daemon.ts';
import { until } from '../../helpers/log-capture.ts';
import { mirrorStates, readMirror } from '../../helpers/mirror.ts';
import { sensitiveStrings } from '../../helpers/privacy.ts';
import { startSyncService } from '../../helpers/sync-service.ts';

t.setTimeout(300_000);

const ACTOR = 'imap-sync:dee';

t.test('a store fault crashes and restarts the actor and is not recorded as an IMAP outcome', async (t) => {
  const dovecot = await startDovecot({ users: [{ user: 'dee', password: 'pw-dee' }] });
  t.teardown(() => dovecot.stop());
  const generated = [...generateMailbox({ seed: 41, count: 30, profile: 'small' })];
  const headerless = Buffer.from('nothing here reads as a header: zebracorn-unreadable-marker\r\n');
  const raws = [...generated.map((m) => m.raw), headerless];
  await writeMaildir(
    dovecot,
    'dee',
    'INBOX',
    raws.map((raw) => ({ raw })),
  );

  // The database exists before the service starts, with the fault in place, so the first run meets it.
  const dir = tempDir(t);
  const database = join(dir, 'mailcairn.db');
  const setup = openStore({ database, busyTimeoutMs: 5_000, synchronous: 'Normal' });
  migrate(setup);
  setup.exec(`CREATE TRIGGER test_fault_on_store BEFORE INSERT ON messages BEGIN SELECT RAISE(ABORT, 'fault injected by the test'); END`);
  setup.close();

  const sync = await startSyncService(dir, dovecot, [{ id: 'dee', user: 'dee', folders: [{ Alias: 'inbox' }] }], {
    MailSynchronization: { BatchSize: 10, Backoff: { Initial: '00:00:01', Maximum: '00:00:02' } },
  });
  t.teardown(() => sync.service.stop());

  const crashed = () => sync.logs.events('actor.exit', ACTOR).find((l) => l.reason === 'E_ACTOR_CRASHED');
  const restarted = () => sync.logs.events('actor.start', ACTOR).find((l) => l.reason === 'E_ACTOR_CRASHED');
  await until(() => crashed() !== undefined && restarted() !== undefined, 60_000, 'the actor to crash and restart');
  // The fault goes before the supervisor's intensity limit could give the actor up.
  // With a busy timeout: the service's writers (store maintenance, the restarted actor) may hold the lock a moment.
  const fix = openStore({ database, busyTimeoutMs: 10_000, synchronous: 'Normal' });
  fix.exec('DROP TRIGGER test_fault_on_store');
  fix.close();

  t.match(crashed(), { level: 40, component: 'supervisor', reason: 'E_ACTOR_CRASHED', nextDelayMs: Number }, 'actor.exit: crashed, restart scheduled');
  t.ok(sync.logs.events('actor.restart', ACTOR).length >= 1, 'actor.restart logged');
  t.match(restarted(), { event: 'actor.start', reason: 'E_ACTOR_CRASHED' }, 'actor.start after the crash');
  const threw = sync.logs.lines.filter((l) => l.event === 'actor.handler-threw' && l.actor === ACTOR);
  t.ok(threw.length >= 1, 'the crash is logged in the thread with its cause');
  t.match(JSON.stringify(threw[0]), /SQLITE_CONSTRAINT/, 'the cause is the database error');

  t.same(sync.logs.events('sync.folder-failed'), [], 'no folder failure was recorded for the fault');
  t.same(sync.logs.events('sync.run-failed'), [], 'no run failed as an IMAP failure');

  // Converge once the fault is gone. The restarted actor's own run may have stored every message
  // before the mirror is first read (under load, while fetchAll runs): the mirror then matches while
  // that run still waits for the derivation writer, which has not classified the header-less message
  // yet, and the run has not logged it. So the mirror counts as converged only when, asked after it
  // matched, the scheduler shows no run of the account under way: the run that stored the last batch
  // has ended, and a run ends only after its folders' derivation was answered (sync-run.ts, settle).
  const deadline = Date.now() + 120_000;
  const server = (await mailAdmin(dovecot).fetchAll('dee', 'INBOX')).map((m) => ({ uid: m.uid, flags: [...m.flags].sort(), sha256: m.sha256 }));
  const runUnderWay = async (): Promise<boolean> => (await sync.status()).accounts.find((a) => a.account === 'dee')?.phase === 'running';
  let mirror = readMirror(sync.database, 'dee', 'inbox');
  let settled = false;
  while (Date.now() < deadline) {
    settled = JSON.stringify(mirror) === JSON.stringify(server) && !(await runUnderWay());
    if (settled) break;
    await sync.syncNow('dee', 60_000).catch(() => undefined);
    mirror = readMirror(sync.database, 'dee', 'inbox');
  }
  t.same(mirror, server, 'the mirror converged once the fault was gone');
  t.ok(settled, 'the run that stored the last of it has ended');

  // What the runs recorded: the crashed run closed as interrupted, no IMAP outcome anywhere.
  const db = new Libsql(database, { readonly: true });
  t.teardown(() => db.close());
  const runOutcomes = (db.prepare("SELECT outcome FROM sync_runs WHERE account_id = 'dee'").all() as Array<{ outcome: string | null }>).map((r) => r.outcome);
  const folderOutcomes = (
    db.prepare("SELECT f.outcome FROM sync_folder_runs f JOIN sync_runs r ON r.id = f.sync_run_id WHERE r.account_id = 'dee'").all() as Array<{
      outcome: string | null;
    }>
  ).map((r) => r.outcome);
  t.ok(runOutcomes.includes('interrupted'), `the crashed run reads as interrupted (runs: ${runOutcomes.join(', ')})`);
  t.notOk(runOutcomes.includes('failed'), 'no run recorded as failed');
  for (const outcome of ['server-unresponsive', 'unexpected']) t.notOk(folderOutcomes.includes(outcome), `no folder run recorded as ${outcome}`);
  const status = await sync.status();
  const folder = status.accounts.find((a) => a.account === 'dee')?.folders[0];
  t.notOk(['server-unresponsive', 'unexpected'].includes(folder?.lastRun?.outcome ?? ''), 'the status shows no IMAP outage');

  // The header-less message: stored unreadable, one line saying why, and the folder's count by class.
  t.equal(mirrorStates(sync.database, 'dee', 'inbox').unreadable, 1, 'one unreadable message');
  // The actor thread's lines reach the capture through its stdout, which may trail the run's reply to
  // the scheduler: wait for the folder's summary line (logged after the per-message one) to arrive.
  await until(() => sync.logs.events('sync.folder-unreadable').length > 0, 30_000, 'the sync.folder-unreadable line');
  t.match(sync.logs.events('sync.unreadable'), [{ folder: 'inbox', reason: 'no-header', errorClass: null, uid: Number }]);
  t.match(sync.logs.events('sync.folder-unreadable'), [{ folder: 'inbox', unreadable: 1, byClass: { 'no-header': 1 } }]);

  const logs = sync.logs.raw();
  const leaked = [...sensitiveStrings(raws), 'zebracorn'].filter((s) => logs.includes(s));
  t.same(leaked, [], 'no subject, address or body reached a log line');
});
