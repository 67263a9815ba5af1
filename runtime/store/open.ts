/**
 * Opening the database: one connection, to be called once per thread (each
 * actor in its `init`, the query pool per worker, `migrate` at boot).
 *
 * For a file: WAL journal, `busy_timeout`, `foreign_keys=ON`, and
 * `synchronous=FULL` by default (see docs/storage.md for the measured cost of
 * NORMAL). For a libSQL server URL the server owns journaling and durability,
 * so only `foreign_keys` is asked for. The API is synchronous: fine in a
 * worker thread, on the main thread only at boot.
 *
 * Writes nothing. Importable from anywhere that may hold a connection.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Libsql from 'libsql';
import { AppError } from '../errors.ts';
import { storeLocation, type StoreLocation } from './location.ts';
import { one } from './rows.ts';
import { installAutocommitWrites } from './autocommit-writes.ts';
import { installTransactions } from './transaction.ts';

export type Database = Libsql.Database;

export type StoreOptions = {
  /** `Storage:Database`: a file path, `:memory:`, or a `libsql://`, `https://`, `http://` URL. */
  database: string;
  /** `Storage:AuthToken`, already read from its secret reference; servers only. */
  authToken?: string;
  busyTimeoutMs: number;
  synchronous: 'Full' | 'Normal';
  /**
   * `background`: this connection leaves WAL checkpoints to the store
   * maintenance actor (on its own thread), so a sync actor's commits never
   * stall on copying the WAL back; a high automatic threshold stays as a
   * safety net should maintenance fall behind. Default `inline`.
   */
  checkpoints?: 'inline' | 'background';
};

/** WAL size after which even a `background` connection checkpoints itself. */
const BACKGROUND_CHECKPOINT_BYTES = 1024 * 1024 * 1024;

/**
 * Page size of a database this opens first (an existing one keeps its own):
 * raw MIME of tens of KB spans four times fewer overflow pages than at
 * SQLite's 4 KiB default, which cut storing a batch by about 15% of CPU
 * (docs/performance-history.md, "The initial mirror").
 */
const NEW_DATABASE_PAGE_SIZE = 16_384;

/** WAL file size kept after a checkpoint; a batch of large messages may grow it far beyond. */
const walSizeLimitBytes = 64 * 1024 * 1024;

export function openStore(options: StoreOptions): Database {
  const where = storeLocation(options.database);
  if (!Number.isSafeInteger(options.busyTimeoutMs) || options.busyTimeoutMs < 0) {
    throw new AppError('E_STORE_UNSUPPORTED', { message: 'the busy timeout must be a whole number of milliseconds, zero or more' });
  }
  const db = where.kind === 'server' ? openServer(where, options) : openEmbedded(where, options);
  // A full disk keeps its name through a transaction's rollback (transaction.ts).
  installTransactions(db);
  // A write outside a transaction cannot leave the connection refusing every later one (autocommit-writes.ts).
  installAutocommitWrites(db);
  return db;
}

function openEmbedded(where: Exclude<StoreLocation, { kind: 'server' }>, options: StoreOptions): Database {
  const name = where.kind === 'file' ? where.path : ':memory:';
  if (where.kind === 'file') {
    try {
      mkdirSync(dirname(where.path), { recursive: true });
    } catch (err) {
      throw new AppError('E_STORE_UNAVAILABLE', { message: `the directory of Storage:Database ${name} could not be created (${errorCode(err)})`, cause: err });
    }
  }
  let db: Database;
  try {
    db = new Libsql(name, { timeout: options.busyTimeoutMs });
  } catch (err) {
    throw new AppError('E_STORE_UNAVAILABLE', { message: `Storage:Database ${name} could not be opened (${errorCode(err)})`, cause: err });
  }
  try {
    pragma(db, `busy_timeout = ${options.busyTimeoutMs}`);
    // Takes effect only before the first table is written, and not once in WAL mode: set before both.
    pragma(db, `page_size = ${NEW_DATABASE_PAGE_SIZE}`);
    if (where.kind === 'file') {
      const mode = readPragma(db, 'journal_mode = WAL', 'journal_mode');
      if (mode !== 'wal') {
        throw new AppError('E_STORE_UNSUPPORTED', {
          message: `Storage:Database ${name} could not be put in WAL mode (it stays in ${String(mode)}); is it on a network filesystem?`,
        });
      }
      pragma(db, `journal_size_limit = ${walSizeLimitBytes}`);
      if (options.checkpoints === 'background') {
        const pageSize = Number(readPragma(db, 'page_size', 'page_size'));
        pragma(db, `wal_autocheckpoint = ${Math.round(BACKGROUND_CHECKPOINT_BYTES / pageSize)}`);
      }
    }
    pragma(db, `synchronous = ${options.synchronous === 'Full' ? 'FULL' : 'NORMAL'}`);
    pragma(db, 'foreign_keys = ON');
    // Read back: a pragma SQLite does not recognise is silently ignored.
    const synchronous = readPragma(db, 'synchronous', 'synchronous');
    if (synchronous !== (options.synchronous === 'Full' ? 2 : 1) || readPragma(db, 'foreign_keys', 'foreign_keys') !== 1) {
      throw new AppError('E_STORE_UNSUPPORTED', { message: `Storage:Database ${name} did not accept the synchronous and foreign_keys settings` });
    }
  } catch (err) {
    db.close();
    if (err instanceof AppError) throw err;
    const code = errorCode(err);
    if (code === 'SQLITE_NOTADB') {
      throw new AppError('E_STORE_UNSUPPORTED', { message: `Storage:Database ${name} is not a SQLite database`, cause: err });
    }
    throw new AppError('E_STORE_UNAVAILABLE', { message: `Storage:Database ${name} could not be prepared (${code})`, cause: err });
  }
  return db;
}

// Untested here: no libSQL server could be installed in the build
// environment. libsql-js opens the URL lazily, so a first statement checks
// that the server answers before any actor relies on it.
function openServer(where: Extract<StoreLocation, { kind: 'server' }>, options: StoreOptions): Database {
  let db: Database | undefined;
  try {
    db = new Libsql(where.url, { authToken: options.authToken ?? '' } as Libsql.Options);
    one(db.prepare('SELECT 1 AS ok'));
    pragma(db, 'foreign_keys = ON');
  } catch (err) {
    db?.close();
    throw new AppError('E_STORE_UNAVAILABLE', {
      message: `the libSQL server at Storage:Database ${where.shown} did not answer (${errorCode(err)}); check the address and Storage:AuthToken`,
      cause: err,
    });
  }
  return db;
}

function pragma(db: Database, source: string): void {
  db.pragma(source);
}

function readPragma(db: Database, source: string, column: string): unknown {
  const rows = db.pragma(source) as Array<Record<string, unknown>>;
  return rows[0]?.[column];
}

/** The SQLite or system error code, never the message (which may quote a path or value). */
export function errorCode(err: unknown): string {
  if (typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string' && err.code !== '') return err.code;
  return 'unknown error';
}

/** SQLite refused for a lock another connection holds (after the busy timeout): SQLITE_BUSY, its extended codes, or SQLITE_LOCKED. */
export function isBusy(err: unknown): boolean {
  const code = errorCode(err);
  return code === 'SQLITE_BUSY' || code.startsWith('SQLITE_BUSY_') || code === 'SQLITE_LOCKED';
}
