/**
 * Binding values and reading rows through the `libsql` package safely.
 * Every store module reads and writes through these three functions rather
 * than calling `Statement.get/all/run` directly, because libsql-js 0.5 differs
 * from better-sqlite3 in ways that crash or mislead (checked against 0.5.29):
 *
 * - Binding a JavaScript boolean panics inside the native module and aborts
 *   the whole process (`not yet implemented: bool`). `SqlValue` leaves
 *   booleans out, so the compiler refuses them; write 0/1.
 * - A single positional argument that is an object (a Buffer, `null`) is taken
 *   as a bag of named parameters: a lone Buffer aborts the process and a lone
 *   `null` throws. These helpers always pass one array or one named object.
 *   The same holds for any typed array (a lone Float32Array aborts too).
 * - Inside the array a Uint8Array (or Buffer) view binds its own bytes, but
 *   any other typed array binds its whole underlying ArrayBuffer, ignoring
 *   its offset and length (a Float32Array `subarray` binds the parent). Only
 *   Uint8Array is a `SqlValue`, and these helpers refuse any other view at
 *   run time too: bind a vector as `new Uint8Array(v.buffer, v.byteOffset,
 *   v.byteLength)`.
 * - `get()` rows carry an extra enumerable `_metadata` member (query timing);
 *   it is removed so rows compare, spread and serialise as plain objects.
 * - `pluck()` is ignored by `get()`, so it is not used; read the column.
 *
 * A write (or a read spilling to a temporary file) that finds the disk full
 * throws E_STORE_FULL (runtime/storage-full.ts), never the driver's error.
 *
 * Importable by any module under `runtime/store/` and by actors' store
 * modules.
 */
import { namedStorageFull } from '../storage-full.ts';
import type { Database } from './open.ts';

/** What may be bound: no booleans (write 0/1), no undefined. */
export type SqlValue = string | number | bigint | Uint8Array | null;
export type Params = readonly SqlValue[] | Readonly<Record<string, SqlValue>>;
export type Statement = ReturnType<Database['prepare']>;
export type RunResult = { changes: number; lastInsertRowid: number | bigint };

/** Refuses what libsql would bind wrongly: a typed array other than Uint8Array. */
function checked(params: Params): Params {
  for (const value of Array.isArray(params) ? params : Object.values(params)) {
    if (ArrayBuffer.isView(value) && !(value instanceof Uint8Array)) {
      throw new TypeError('bind a typed array as a Uint8Array view of its bytes (libsql binds its whole buffer)');
    }
  }
  return params;
}

function named<R>(call: () => R): R {
  try {
    return call();
  } catch (err) {
    throw namedStorageFull(err);
  }
}

/** First row, or undefined when there is none. */
export function one<T extends object>(statement: Statement, params: Params = []): T | undefined {
  const row = named(() => statement.get(checked(params))) as (T & { _metadata?: unknown }) | undefined;
  if (row === undefined || row === null) return undefined;
  delete row._metadata;
  return row;
}

/** Every row. */
export function many<T extends object>(statement: Statement, params: Params = []): T[] {
  const rows = named(() => statement.all(checked(params))) as Array<T & { _metadata?: unknown }>;
  for (const row of rows) delete row._metadata;
  return rows;
}

/** Run a statement that returns no rows. */
export function run(statement: Statement, params: Params = []): RunResult {
  const result = named(() => statement.run(checked(params)));
  return { changes: result.changes, lastInsertRowid: result.lastInsertRowid };
}

/** Rows one at a time, without holding them all (BLOB columns come as ArrayBuffer, as from `all()`). */
export function* each<T extends object>(statement: Statement, params: Params = []): Generator<T> {
  for (const row of statement.iterate(checked(params)) as Iterable<T & { _metadata?: unknown }>) {
    delete row._metadata;
    yield row;
  }
}
