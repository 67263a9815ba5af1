/**
 * `db.transaction(fn)` as the store needs it. libsql-js 0.5's own wrapper
 * (checked against 0.5.29) runs ROLLBACK in its catch unconditionally; when
 * SQLite has already rolled the transaction back itself — as it does on a
 * full disk — that ROLLBACK fails with "cannot rollback - no transaction is
 * active" and its error replaces the real one, so a full disk reached the
 * callers as an anonymous SQLITE_ERROR. Here the first error wins, a
 * rollback is asked only of an open transaction, and a full disk is named
 * E_STORE_FULL (runtime/storage-full.ts).
 *
 * Installed on every connection `openStore` makes, with the same call shape
 * (`db.transaction(fn)`, `.deferred()`, `.immediate()`, `.exclusive()`), so
 * the store's modules are unchanged. Imported by open.ts only.
 *
 * One difference: `db.transaction(fn)()` without a mode begins IMMEDIATE
 * (libsql's and SQLite's default is DEFERRED). A deferred transaction that
 * reads and then writes cannot wait for the write lock: when another
 * connection committed after its read, SQLite answers SQLITE_BUSY at once,
 * whatever the busy timeout, and under a running mirror that is a crash of
 * the asking actor. A read-only transaction says `.deferred()`.
 */
import { namedStorageFull } from '../storage-full.ts';

type Connection = {
  exec(source: string): unknown;
  readonly inTransaction: boolean;
  transaction: unknown;
};

export function installTransactions(db: Connection): void {
  const transaction = <A extends unknown[], R>(fn: (...args: A) => R) => {
    const wrap =
      (mode: string) =>
      (...args: A): R => {
        try {
          db.exec(`BEGIN ${mode}`);
        } catch (err) {
          throw namedStorageFull(err);
        }
        try {
          const result = fn(...args);
          db.exec('COMMIT');
          return result;
        } catch (err) {
          if (db.inTransaction) {
            try {
              db.exec('ROLLBACK');
            } catch {
              // The first error is the one to report; a connection left inside a transaction is
              // rolled back at its next lease (shared-connection.ts).
            }
          }
          throw namedStorageFull(err);
        }
      };
    const modes = {
      default: { value: wrap('IMMEDIATE') },
      deferred: { value: wrap('DEFERRED') },
      immediate: { value: wrap('IMMEDIATE') },
      exclusive: { value: wrap('EXCLUSIVE') },
      database: { value: db, enumerable: true },
    };
    for (const mode of ['default', 'deferred', 'immediate', 'exclusive'] as const) Object.defineProperties(modes[mode].value, modes);
    return modes.default.value;
  };
  Object.defineProperty(db, 'transaction', { value: transaction, writable: true, configurable: true });
}
