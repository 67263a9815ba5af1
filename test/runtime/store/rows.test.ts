import { spawnSync } from 'node:child_process';
import t from 'tap';
import { openStore } from '../../../runtime/store/open.ts';
import { each, many, one, run, type SqlValue } from '../../../runtime/store/rows.ts';

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

t.test('typed arrays: a Uint8Array view binds its own bytes; any other typed array is refused', async (t) => {
  const floats = new Float32Array([9, 1, 2, 9]).subarray(1, 3);
  const bytes = new Uint8Array(floats.buffer, floats.byteOffset, floats.byteLength);
  t.same(one(db.prepare('SELECT vector_extract(?) AS v'), [bytes]), { v: '[1,2]' }, 'a view with an offset binds only its bytes');
  t.throws(() => one(db.prepare('SELECT ? AS v'), [floats as unknown as SqlValue]), TypeError, 'bare libsql would bind the parent buffer');
  t.throws(() => run(db.prepare('INSERT INTO t (b) VALUES (:b)'), { b: new Float64Array(1) as unknown as SqlValue }), TypeError);
  t.throws(() => many(db.prepare('SELECT ? AS v'), [new Int16Array(2) as unknown as SqlValue]), TypeError);
});

t.test('each iterates the rows without metadata', async (t) => {
  t.same([...each<{ v: number }>(db.prepare('SELECT value AS v FROM json_each(?)'), ['[1,2,3]'])], [{ v: 1 }, { v: 2 }, { v: 3 }]);
});

t.test('why the fence: a lone Buffer or typed array aborts bare libsql (run in a child process)', async (t) => {
  for (const value of ['Buffer.from([1, 2])', 'new Float32Array([1, 2])']) {
    const child = spawnSync(
      process.execPath,
      ['--input-type=module', '-e', `import Database from 'libsql'; new Database(':memory:').prepare('SELECT ? AS v').all(${value});`],
      { encoding: 'utf8', timeout: 20_000 },
    );
    t.not(child.status, 0, `${value} alone ends the process (status ${child.status}, signal ${child.signal})`);
  }
  // The wrappers pass one array, so the same value is just a parameter.
  t.same(one(db.prepare('SELECT length(?) AS n'), [Buffer.from([1, 2])]), { n: 2 });
});
