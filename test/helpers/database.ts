/**
 * Reading and writing a service's libSQL database from a test, beside the
 * service: each call opens its own connection (read-only for reads) with a
 * busy timeout, so a test never holds a lock the service waits on.
 */
import Libsql from 'libsql';

export type Row = Record<string, any>;

/** The rows `sql` selects. */
export function readRows<T = Row>(database: string, sql: string, params: unknown[] = []): T[] {
  const db = new Libsql(database, { readonly: true, timeout: 5_000 });
  try {
    return db.prepare(sql).all(params) as T[];
  } finally {
    db.close();
  }
}

/** Runs one statement that writes (a test putting the store back to a moment a crash can hit). */
export function writeRows(database: string, sql: string, params: unknown[] = []): void {
  const db = new Libsql(database, { timeout: 5_000 });
  try {
    db.prepare(sql).run(params);
  } finally {
    db.close();
  }
}
