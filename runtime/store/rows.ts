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
 * - `get()` rows carry an extra enumerable `_metadata` member (query timing);
 *   it is removed so rows compare, spread and serialise as plain objects.
 * - `pluck()` is ignored by `get()`, so it is not used; read the column.
 *
 * Importable by any module under `runtime/store/` and by actors' store
 * modules.
 */
import type { Database } from './open.ts';

/** What may be bound: no booleans (write 0/1), no undefined. */
export type SqlValue = string | number | bigint | Uint8Array | null;
export type Params = readonly SqlValue[] | Readonly<Record<string, SqlValue>>;
export type Statement = ReturnType<Database['prepare']>;
export type RunResult = { changes: number; lastInsertRowid: number | bigint };

/** First row, or undefined when there is none. */
export function one<T extends object>(statement: Statement, params: Params = []): T | undefined {
  const row = statement.get(params) as (T & { _metadata?: unknown }) | undefined;
  if (row === undefined || row === null) return undefined;
  delete row._metadata;
  return row;
}

/** Every row. */
export function many<T extends object>(statement: Statement, params: Params = []): T[] {
  const rows = statement.all(params) as Array<T & { _metadata?: unknown }>;
  for (const row of rows) delete row._metadata;
  return rows;
}

/** Run a statement that returns no rows. */
export function run(statement: Statement, params: Params = []): RunResult {
  const result = statement.run(params);
  return { changes: result.changes, lastInsertRowid: result.lastInsertRowid };
}
