import { join } from 'node:path';
import t from 'tap';
import Libsql from 'libsql';
import { one } from '../../../runtime/store/rows.ts';
import { leaseSlice, sharedConnectionCount } from '../../../runtime/store/shared-connection.ts';
import type { StoreSlice } from '../../../runtime/store/store-slice.ts';
import { scratchDir } from './fixtures/scratch.ts';

function sliceIn(dir: string): StoreSlice {
  return { database: join(dir, 'mail.db'), busyTimeoutMs: 5000, synchronous: 'Full' };
}

t.test('two leases of one slice share a connection, closed when the last releases', async (t) => {
  const slice = sliceIn(scratchDir(t));
  const first = leaseSlice(slice, { checkpoints: 'background' });
  const second = leaseSlice(slice, { checkpoints: 'background' });
  t.equal(second.db, first.db, 'one connection');
  t.equal(sharedConnectionCount(), 1);
  first.release();
  first.release(); // idempotent: must not take the second holder's share
  t.ok(second.db.open, 'still open while a holder remains');
  t.equal(one<{ ok: number }>(second.db.prepare('SELECT 1 AS ok'))?.ok, 1);
  second.release();
  t.notOk(second.db.open, 'closed with the last release');
  t.equal(sharedConnectionCount(), 0);
  const again = leaseSlice(slice, { checkpoints: 'background' });
  t.not(again.db, first.db, 'a later lease opens a fresh connection');
  again.release();
});

t.test('different options or files do not share', async (t) => {
  const dir = scratchDir(t);
  const a = leaseSlice(sliceIn(dir), { checkpoints: 'background' });
  const b = leaseSlice(sliceIn(dir));
  const c = leaseSlice(sliceIn(join(dir, 'other')), { checkpoints: 'background' });
  t.not(a.db, b.db);
  t.not(a.db, c.db);
  for (const lease of [a, b, c]) lease.release();
  t.equal(sharedConnectionCount(), 0);
});

t.test('a holder that crashes leaving a transaction open: its release rolls it back, so the others and its restart write on', async (t) => {
  const slice = sliceIn(scratchDir(t));
  const survivor = leaseSlice(slice, { checkpoints: 'background' });
  const crashed = leaseSlice(slice, { checkpoints: 'background' });
  crashed.db.exec('CREATE TABLE IF NOT EXISTS t (x INTEGER)');
  crashed.db.exec('BEGIN IMMEDIATE'); // what a failed, un-reset statement leaves behind
  crashed.db.exec('INSERT INTO t (x) VALUES (1)');
  crashed.release(); // the crash's cleanup
  t.notOk(survivor.db.inTransaction, 'the other holder is not left inside the leaked transaction');
  t.equal(one<{ n: number }>(survivor.db.prepare('SELECT count(*) AS n FROM t'))?.n, 0, 'what the crashed holder began is gone');
  const restarted = leaseSlice(slice, { checkpoints: 'background' });
  t.equal(restarted.db, survivor.db, 'the restart shares the clean connection');
  survivor.db.transaction(() => survivor.db.exec('INSERT INTO t (x) VALUES (2)'))();
  // Another connection (another thread's, or the system actors') can write: no lock was left held.
  const other = new Libsql(slice.database, { timeout: 100 });
  t.teardown(() => other.close());
  other.exec('INSERT INTO t (x) VALUES (3)');
  t.equal(one<{ n: number }>(restarted.db.prepare('SELECT count(*) AS n FROM t'))?.n, 2);
  survivor.release();
  t.ok(restarted.db.open, 'open while the restart holds it');
  restarted.release();
  t.notOk(restarted.db.open, 'closed with its last holder');
  t.equal(sharedConnectionCount(), 0);
});
