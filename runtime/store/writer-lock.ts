/**
 * One mailcairnd per database file. Sole writer of the companion lock file
 * `<database>.lock` (never of the database itself).
 *
 * Two processes writing one SQLite file is how SQLite databases get
 * corrupted (and how two sync actors would store the same mail twice), so a
 * second process must refuse to start. The lock file is itself a SQLite
 * database opened with `locking_mode=EXCLUSIVE` and written once inside
 * `BEGIN EXCLUSIVE`: SQLite then keeps its POSIX advisory lock on the file for
 * as long as the connection lives. The kernel drops that lock when the
 * process ends in any way (exit, crash, SIGKILL), so there is no stale lock to
 * clean up, and no pid file to second-guess. With busy_timeout 0 a second
 * process, or a second acquire in the same process, fails at once with
 * SQLITE_BUSY.
 *
 * Caveats (docs/storage.md): advisory locks are unreliable on network
 * filesystems; nothing else may open the lock file (closing any descriptor of
 * a file drops the process's POSIX locks on it; SQLite itself guards its own
 * descriptors); two hard links to one database are not recognised.
 *
 * A libSQL server URL needs no lock: the server serialises writers itself, and
 * sharing one server between machines is the point of that mode.
 *
 * Called on the main thread at boot, before `migrate`.
 */
import { mkdirSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname } from 'node:path';
import Libsql from 'libsql';
import { AppError } from '../errors.ts';
import { storeLocation } from './location.ts';
import { errorCode, isBusy, type Database } from './open.ts';
import { one, run } from './rows.ts';

export type WriterLock = { release(): void };

export function acquireWriterLock(database: string): WriterLock {
  const first = storeLocation(database);
  if (first.kind !== 'file') return { release() {} };
  try {
    // The lock is taken before openStore creates the directory, so create it here.
    mkdirSync(dirname(first.path), { recursive: true });
  } catch (err) {
    throw new AppError('E_STORE_UNAVAILABLE', {
      message: `the directory of Storage:Database ${first.path} could not be created (${errorCode(err)})`,
      cause: err,
    });
  }
  // Canonicalise again now that the directory exists, so symlinks in it resolve.
  const again = storeLocation(database);
  const path = again.kind === 'file' ? again.path : first.path;
  const lockPath = `${path}.lock`;
  let db: Database;
  try {
    db = new Libsql(lockPath, { timeout: 0 });
  } catch (err) {
    throw new AppError('E_STORE_UNAVAILABLE', { message: `the writer lock ${lockPath} could not be opened (${errorCode(err)})`, cause: err });
  }
  try {
    db.pragma('busy_timeout = 0');
    db.pragma('locking_mode = EXCLUSIVE');
    // BEGIN EXCLUSIVE takes the exclusive lock in one step, so two processes
    // starting together cannot both stop halfway (both holding a shared lock).
    db.exec('BEGIN EXCLUSIVE');
    db.exec('CREATE TABLE IF NOT EXISTS holder (pid INTEGER NOT NULL, host TEXT NOT NULL, acquired_at INTEGER NOT NULL)');
    db.exec('DELETE FROM holder');
    run(db.prepare('INSERT INTO holder (pid, host, acquired_at) VALUES (?, ?, ?)'), [process.pid, hostname(), Date.now()]);
    db.exec('COMMIT');
  } catch (err) {
    unlock(db);
    if (isBusy(err)) {
      throw new AppError('E_STORE_LOCKED', {
        message:
          `another mailcairnd holds ${path} (it holds the lock on ${lockPath}); ` +
          'two processes writing one SQLite database corrupt it, so this one will not start. ' +
          'Stop the other process, or point Storage:Database at another file.',
      });
    }
    throw new AppError('E_STORE_UNAVAILABLE', { message: `the writer lock ${lockPath} could not be taken (${errorCode(err)})`, cause: err });
  }
  let held = true;
  return {
    release() {
      if (!held) return;
      held = false;
      unlock(db);
    },
  };
}

// libsql-js 0.5 `close()` does not release the file lock of an exclusive
// connection (the native handle outlives it), so go back to normal locking
// and touch the file, which drops the lock, before closing.
function unlock(db: Database): void {
  try {
    if (db.inTransaction) db.exec('ROLLBACK');
    db.pragma('locking_mode = NORMAL');
    one(db.prepare('SELECT count(*) AS n FROM sqlite_schema'));
  } catch {
    // Nothing more can be done here; the lock goes with the process.
  } finally {
    db.close();
  }
}
