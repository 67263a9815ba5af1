/**
 * Prepared statements cached per connection. Each mailbox store module
 * builds its statements once per `Database` (one connection per thread) and
 * finds them again through a WeakMap, so a closed connection's statements go
 * with it. Writes nothing.
 *
 * Importable by store modules under `runtime/store/` only.
 */
import type { Database } from '../open.ts';

/** `build` runs once per connection; later calls return what it built. */
export function perConnection<T>(build: (db: Database) => T): (db: Database) => T {
  const cache = new WeakMap<Database, T>();
  return (db) => {
    let value = cache.get(db);
    if (value === undefined) {
      value = build(db);
      cache.set(db, value);
    }
    return value;
  };
}

/**
 * A BLOB column as bytes. libsql 0.5 returns a Buffer from `get()` but a bare
 * ArrayBuffer from `all()` and `iterate()` for the same column.
 */
export function blobOf(value: Uint8Array | ArrayBuffer | null): Uint8Array | null {
  if (value === null) return null;
  return value instanceof Uint8Array ? value : new Uint8Array(value);
}

/** Flags and keywords are stored sorted and without repeats, so comparisons are plain string equality. */
export function flagSet(values: readonly string[]): string {
  return JSON.stringify([...new Set(values)].sort());
}
