/**
 * A full disk named for what it is (docs/operations.md "A full disk"): the
 * classifier's table, a transaction whose rollback SQLite already did (as it
 * does on SQLITE_FULL) reporting the first error, named E_STORE_FULL, and the
 * supervisor restarting a child that cannot start on a full disk without
 * ever giving it up. The whole path on a real full filesystem is
 * test/integration/full-disk.test.ts.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { AppError } from '../../runtime/errors.ts';
import { isStorageFull, namedStorageFull } from '../../runtime/storage-full.ts';
import { openStore } from '../../runtime/store/open.ts';
import { Supervisor } from '../../runtime/supervisor/supervisor.ts';
import { captureLog, until } from '../helpers/log-capture.ts';

const coded = (code: unknown, cause?: unknown) => Object.assign(new Error('x'), { code }, cause === undefined ? {} : { cause });

t.test('isStorageFull decides from codes, through causes, and from nothing else', async (t) => {
  const table: Array<[string, unknown, boolean]> = [
    ['SQLITE_FULL', coded('SQLITE_FULL'), true],
    ['ENOSPC from a file', coded('ENOSPC'), true],
    ['EDQUOT (a quota)', coded('EDQUOT'), true],
    ['E_STORE_FULL', new AppError('E_STORE_FULL'), true],
    ['caused by SQLITE_FULL', coded('E_SOMETHING', coded('SQLITE_FULL')), true],
    ['SQLITE_BUSY', coded('SQLITE_BUSY'), false],
    ['SQLITE_IOERR_WRITE', coded('SQLITE_IOERR_WRITE'), false],
    ['SQLITE_CORRUPT', coded('SQLITE_CORRUPT'), false],
    ['a message saying so, without the code', new Error('database or disk is full'), false],
    ['E_IMAP_UNRESPONSIVE', new AppError('E_IMAP_UNRESPONSIVE'), false],
    ['null', null, false],
    ['a string', 'SQLITE_FULL', false],
    ['a code that is not a string', coded(13), false],
  ];
  for (const [name, err, expected] of table) t.equal(isStorageFull(err), expected, name);
  const named = namedStorageFull(coded('SQLITE_FULL'));
  t.ok(named instanceof AppError && named.code === 'E_STORE_FULL', 'SQLITE_FULL becomes E_STORE_FULL');
  t.equal((named as AppError).publicCode, 56003, 'told to agents as 56003');
  const other = coded('SQLITE_BUSY');
  t.equal(namedStorageFull(other), other, 'anything else passes unchanged');
});

t.test('a transaction SQLite rolled back itself reports its own error, not the failed ROLLBACK', async (t) => {
  const db = openStore({ database: ':memory:', busyTimeoutMs: 100, synchronous: 'Full' });
  t.teardown(() => db.close());
  db.exec('CREATE TABLE t (x INTEGER)');
  // What SQLite does on SQLITE_FULL: the transaction is gone when the error reaches the wrapper.
  const full = db.transaction(() => {
    db.exec('INSERT INTO t VALUES (1)');
    db.exec('ROLLBACK');
    throw coded('SQLITE_FULL');
  });
  const err = (() => {
    try {
      full.immediate();
    } catch (e) {
      return e;
    }
    return null;
  })();
  t.ok(err instanceof AppError && err.code === 'E_STORE_FULL', `named E_STORE_FULL (got ${String((err as { code?: unknown })?.code)})`);
  t.equal(db.inTransaction, false, 'no transaction is left open');
  const plain = db.transaction(() => {
    db.exec('INSERT INTO t VALUES (2)');
    throw new TypeError('a defect');
  });
  t.throws(() => plain(), TypeError, 'another error passes unchanged, after its rollback');
  t.same((db.prepare('SELECT count(*) AS n FROM t').get([]) as { n: number }).n, 0, 'nothing of either was kept');
  t.equal(db.transaction(() => 7).deferred(), 7, 'a transaction that succeeds answers its value');
});

t.test('a child that cannot start on a full disk is restarted, never given up, and comes back once there is room', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'mailcairn-storage-full-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const room = join(dir, 'room');
  const { log, write, events } = captureLog();
  const supervisor = new Supervisor({ log, hostLogSink: write });
  t.teardown(() => supervisor.stop(2_000));
  const entry = new URL('../fixtures/actors/misbehaving.ts', import.meta.url);
  await supervisor.start([
    {
      id: 'writer',
      entry,
      restart: 'permanent',
      config: { diskFullUntil: room },
      backoff: { baseMs: 20, factor: 2, maxMs: 100, jitter: 0.1, stableAfterMs: 60_000 },
      intensity: { maxRestarts: 2, windowMs: 60_000 },
    },
  ]);
  await until(() => events('actor.restart', 'writer').length >= 6, 15_000, 'restarts past the intensity limit');
  t.same(events('actor.give-up'), [], 'never given up for a full disk');
  t.same(supervisor.health().givenUp, [], 'readiness is not lost to it');
  t.ok(
    events('actor.exit', 'writer').every((l) => l.reason === 'E_STORE_FULL'),
    'each exit names the full disk, not a failed start',
  );
  t.ok(events('store.full').length >= 1, 'store.full says so');
  writeFileSync(room, '');
  await until(() => supervisor.health().children.some((c) => c.id === 'writer' && c.state === 'running'), 15_000, 'the start once there is room');
  t.pass('the child runs once there is room');
});
