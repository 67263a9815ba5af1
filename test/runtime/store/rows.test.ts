import t from 'tap';
import { openStore } from '../../../runtime/store/open.ts';
import { many, one, run } from '../../../runtime/store/rows.ts';

const db = openStore({ database: ':memory:', busyTimeoutMs: 0, synchronous: 'Full' });
t.teardown(() => db.close());
db.exec('CREATE TABLE t (a INTEGER PRIMARY KEY, b BLOB, c TEXT)');

t.test('rows come back as plain objects, without libsql metadata', async (t) => {
  run(db.prepare('INSERT INTO t (b, c) VALUES (?, ?)'), [Buffer.from('x'), 'one']);
  const row = one<{ a: number; c: string }>(db.prepare('SELECT a, c FROM t'));
  t.same(Object.keys(row ?? {}), ['a', 'c']);
  t.same(JSON.parse(JSON.stringify(many(db.prepare('SELECT a, c FROM t')))), [{ a: 1, c: 'one' }]);
  t.equal(one(db.prepare('SELECT a FROM t WHERE a = ?'), [42]), undefined, 'no row is undefined');
});

t.test('a lone Buffer or null binds as a value (bare libsql aborts or throws on these)', async (t) => {
  t.same(one(db.prepare('SELECT ? AS v'), [Buffer.from([1, 2])]), { v: Buffer.from([1, 2]) });
  t.same(one(db.prepare('SELECT ? AS v'), [null]), { v: null });
  t.same(one(db.prepare('SELECT ? AS v'), [new Uint8Array([3])]), { v: Buffer.from([3]) });
  t.same(one(db.prepare('SELECT :v AS v'), { v: Buffer.from([4]) }), { v: Buffer.from([4]) });
});

t.test('run reports changes and the new row id', async (t) => {
  const result = run(db.prepare('INSERT INTO t (c) VALUES (?)'), ['two']);
  t.equal(result.changes, 1);
  t.equal(Number(result.lastInsertRowid), 2);
  t.equal(run(db.prepare('DELETE FROM t')).changes, 2, 'no parameters at all');
});
