import Libsql from 'libsql';
const db = new Libsql('/tmp/fdx/t.db');
db.pragma('journal_mode = WAL');
db.pragma('synchronous = FULL');
db.exec('CREATE TABLE t(x BLOB)');
db.exec('CREATE VIRTUAL TABLE f USING fts5(b)');
const ins = db.prepare('INSERT INTO t VALUES (?)');
const insf = db.prepare('INSERT INTO f VALUES (?)');
let n = 0;
try {
  for (;;) { db.transaction(() => { ins.run([Buffer.alloc(20000, n % 250)]); insf.run(['word'+n+' other text here '+n]); })(); n++; }
} catch (e) { console.log('fail at', n, e.code, e.rawCode, e.constructor.name, e.message, db.inTransaction); }
try { console.log(db.prepare('SELECT count(*) c FROM t').get([])); } catch (e) { console.log('read', e.code, e.message); }
try { ins.run([Buffer.alloc(10)]); console.log('small ok'); } catch (e) { console.log('small', e.code); }
try { console.log(db.pragma('wal_checkpoint(TRUNCATE)')); } catch (e) { console.log('ckpt', e.code, e.message); }
try { console.log(db.pragma('integrity_check')); } catch (e) { console.log('ic', e.code, e.message); }
try { db.exec("INSERT INTO f(f) VALUES('integrity-check')"); console.log('fts ok') } catch (e) { console.log('fts', e.code, e.message); }
try { db.exec("CREATE TEMP TABLE x AS SELECT * FROM t ORDER BY random()"); console.log('temp ok') } catch (e) { console.log('temp', e.code, e.message); }
