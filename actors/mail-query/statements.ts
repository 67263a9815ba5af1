/**
 * Prepared statements of the query pool, cached per connection by SQL text.
 * The pool's SQL is assembled per request (filters present, how many
 * bindings an IN list names), so the set is open; the cache is bounded and
 * simply emptied when full. Reads only.
 *
 * Importable by modules of `actors/mail-query/` only.
 */
import type { Database } from '../../runtime/store/open.ts';
import type { Statement } from '../../runtime/store/rows.ts';

const limit = 256;
const caches = new WeakMap<Database, Map<string, Statement>>();

export function prepared(db: Database, sql: string): Statement {
  let cache = caches.get(db);
  if (cache === undefined) {
    cache = new Map();
    caches.set(db, cache);
  }
  let statement = cache.get(sql);
  if (statement === undefined) {
    if (cache.size >= limit) cache.clear();
    statement = db.prepare(sql);
    cache.set(sql, statement);
  }
  return statement;
}

/** `?, ?, ?` for an IN list of `n` values. */
export function placeholders(n: number): string {
  return Array.from({ length: n }, () => '?').join(', ');
}

/** libsql 0.5 returns a BLOB as a Buffer from `get()` but a bare ArrayBuffer from `all()`. */
export function bytesOf(value: Uint8Array | ArrayBuffer | null): Uint8Array | null {
  if (value === null) return null;
  return value instanceof Uint8Array ? value : new Uint8Array(value);
}

export function iso(ms: number): string {
  return new Date(ms).toISOString();
}
