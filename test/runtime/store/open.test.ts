import { existsSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import t from 'tap';
import { storeLocation } from '../../../runtime/store/location.ts';
import { openStore, type Database, type StoreOptions } from '../../../runtime/store/open.ts';
import { one, run } from '../../../runtime/store/rows.ts';
import { refusal, scratchDir } from './fixtures/scratch.ts';

const defaults: Omit<StoreOptions, 'database'> = { busyTimeoutMs: 5000, synchronous: 'Full' };

function pragma(db: Database, name: string): unknown {
  return one<Record<string, unknown>>(db.prepare(`PRAGMA ${name}`))?.[name];
}

t.test('a file store is in WAL with synchronous=FULL, foreign keys on and a busy timeout', async (t) => {
  const database = join(scratchDir(t), 'nested', 'deeper', 'mail.db');
  const db = openStore({ database, ...defaults });
  t.teardown(() => db.close());
  t.ok(existsSync(database), 'the parent directories were created');
  t.equal(pragma(db, 'journal_mode'), 'wal');
  t.equal(pragma(db, 'synchronous'), 2, 'FULL');
  t.equal(pragma(db, 'foreign_keys'), 1);
  t.equal(one<{ timeout: number }>(db.prepare('PRAGMA busy_timeout'))?.timeout, 5000);
  t.equal(pragma(db, 'journal_size_limit'), 64 * 1024 * 1024);
});

t.test('synchronous=NORMAL when asked for, on a second connection to the same file', async (t) => {
  const database = join(scratchDir(t), 'mail.db');
  const first = openStore({ database, ...defaults });
  const second = openStore({ database, busyTimeoutMs: 250, synchronous: 'Normal' });
  t.teardown(() => {
    first.close();
    second.close();
  });
  t.equal(pragma(second, 'synchronous'), 1, 'NORMAL');
  t.equal(pragma(second, 'journal_mode'), 'wal', 'WAL is a property of the file');
  t.equal(one<{ timeout: number }>(second.prepare('PRAGMA busy_timeout'))?.timeout, 250);
  t.equal(pragma(first, 'synchronous'), 2, 'each connection keeps its own setting');
});

t.test('FTS5 is available in this build of libSQL', async (t) => {
  const db = openStore({ database: ':memory:', ...defaults });
  t.teardown(() => db.close());
  db.exec("CREATE VIRTUAL TABLE probe USING fts5(body, tokenize = 'unicode61 remove_diacritics 2')");
  db.exec("INSERT INTO probe (body) VALUES ('Résumé attached')");
  t.equal(one<{ n: number }>(db.prepare("SELECT count(*) AS n FROM probe WHERE probe MATCH 'resume'"))?.n, 1);
});

t.test('a file that is not a database is refused, naming the setting', async (t) => {
  const database = join(scratchDir(t), 'notes.txt');
  writeFileSync(database, 'these are not the pages you are looking for'.repeat(200));
  const err = refusal(t, () => openStore({ database, ...defaults }));
  t.equal(err?.code, 'E_STORE_UNSUPPORTED');
  t.match(err?.message, `Storage:Database ${database} is not a SQLite database`);
});

t.test('a busy timeout that is not a whole number of milliseconds is refused', async (t) => {
  const err = refusal(t, () => openStore({ database: ':memory:', busyTimeoutMs: 1.5, synchronous: 'Full' }));
  t.equal(err?.code, 'E_STORE_UNSUPPORTED');
});

t.test('what Storage:Database names', async (t) => {
  t.same(storeLocation(':memory:'), { kind: 'memory' });
  t.equal(storeLocation('relative/mail.db').kind, 'file');
  t.match(storeLocation('relative/mail.db'), { path: /^\/.*\/relative\/mail\.db$/ });
  t.match(storeLocation('file:///var/lib/mailcairn/mail.db'), { kind: 'file', path: '/var/lib/mailcairn/mail.db' });
  t.same(storeLocation('libsql://user:secret@db.example.org/x?authToken=abc'), {
    kind: 'server',
    url: 'libsql://user:secret@db.example.org/x?authToken=abc',
    shown: 'libsql://db.example.org/x',
  });
  t.equal(storeLocation('HTTPS://db.example.org:8443').kind, 'server');
  const ws = refusal(t, () => storeLocation('wss://db.example.org'));
  t.equal(ws?.code, 'E_STORE_UNSUPPORTED');
  t.match(ws?.message, /Storage:Database wss:\/\/db\.example\.org uses a scheme this build cannot open/);
  t.equal(refusal(t, () => storeLocation('  '))?.code, 'E_STORE_UNSUPPORTED');
});

t.test('a libSQL server that does not answer is refused clearly, without the token or user information', async (t) => {
  // A port that was free a moment ago: nothing listens on it.
  const port = await new Promise<number>((resolvePort) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolvePort(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
  const err = refusal(t, () => openStore({ database: `http://user:pw@127.0.0.1:${port}`, authToken: 'token-value', ...defaults }));
  t.equal(err?.code, 'E_STORE_UNAVAILABLE');
  t.match(err?.message, `the libSQL server at Storage:Database http://127.0.0.1:${port} did not answer`);
  t.notMatch(err?.message, 'token-value');
  t.notMatch(err?.message, 'pw');
});

t.test('a transaction without a mode holds the write lock from its start; a deferred one does not', async (t) => {
  const database = join(scratchDir(t), 'mail.db');
  const db = openStore({ database, ...defaults });
  const other = openStore({ database, busyTimeoutMs: 0, synchronous: 'Full' });
  t.teardown(() => {
    db.close();
    other.close();
  });
  db.exec('CREATE TABLE note (text TEXT)');
  /** Whether the other connection may begin writing now (no wait: busy timeout 0). */
  const otherMayWrite = (): boolean => {
    try {
      other.exec('BEGIN IMMEDIATE');
      other.exec('ROLLBACK');
      return true;
    } catch (err) {
      if ((err as { code?: string }).code !== 'SQLITE_BUSY') throw err;
      return false;
    }
  };
  // The read-then-write shape of a store function (contacts' erase was one): without IMMEDIATE, a commit
  // by another connection between the read and the write is SQLITE_BUSY at once, whatever the busy timeout.
  const readThenWrite = (): boolean => {
    one(db.prepare('SELECT count(*) AS n FROM note'));
    const free = otherMayWrite();
    db.exec("INSERT INTO note VALUES ('x')");
    return free;
  };
  t.equal(db.transaction(readThenWrite)(), false, 'no other writer between the read and the write');
  t.equal(db.transaction(readThenWrite).deferred(), true, 'a deferred transaction leaves the lock free until it writes');
});

t.test('a write refused as busy outside a transaction leaves the connection able to write once the lock is free', async (t) => {
  const dir = scratchDir(t);
  const options: StoreOptions = { database: join(dir, 'poison.db'), busyTimeoutMs: 100, synchronous: 'Normal' };
  const db = openStore(options);
  t.teardown(() => db.close());
  db.exec('CREATE TABLE note (body TEXT)');
  const other = openStore(options);
  t.teardown(() => other.close());
  const insert = db.prepare('INSERT INTO note VALUES (?)');

  // Another writer holds the lock past the busy timeout: the autocommit write is refused.
  other.exec('BEGIN IMMEDIATE');
  other.exec("INSERT INTO note VALUES ('held')");
  t.throws(() => run(insert, ['refused']), { code: 'SQLITE_BUSY' }, 'refused while the other writer holds the lock');
  other.exec('COMMIT');
  // The other connection commits again, so this connection's view is behind the database.
  other.exec("INSERT INTO note VALUES ('later')");

  // libsql-js 0.5 left the refused statement holding a read snapshot: every BEGIN IMMEDIATE then failed at once.
  t.doesNotThrow(() => db.transaction(() => db.exec("INSERT INTO note VALUES ('next')"))(), 'a transaction on the same connection writes');
  t.doesNotThrow(() => run(db.prepare('INSERT INTO note VALUES (?)'), ['another']), 'and so does another statement');
  t.same(
    db
      .prepare('SELECT body FROM note ORDER BY rowid')
      .all()
      .map((r) => (r as { body: string }).body),
    ['held', 'later', 'next', 'another'],
    'the refused write left nothing, the others are stored once',
  );
});
