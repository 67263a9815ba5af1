/**
 * A write statement run outside a transaction begins one IMMEDIATE around
 * itself. libsql-js 0.5 (checked against 0.5.29) leaves a statement whose
 * own run failed with SQLITE_BUSY un-reset, holding a read snapshot of the
 * connection: from then on every BEGIN IMMEDIATE of that connection fails at
 * once with SQLITE_BUSY, whatever the busy timeout, as soon as another
 * connection has committed — until that very statement runs again. Under a
 * loaded mirror that was a crash of whichever actor next wrote on the
 * connection (docs/performance.md, the rules bench's crashes). A BEGIN that
 * fails leaves nothing behind, and inside the transaction the statement
 * never waits for a lock, so no statement is left half-run.
 *
 * Reads (statements that return rows) are left alone: in WAL mode they take
 * no lock. Installed by open.ts on every connection, beside transaction.ts.
 */
import type { Database } from './open.ts';

type RunnableStatement = { run(...args: unknown[]): unknown; readonly reader: boolean };

export function installAutocommitWrites(db: Database): void {
  const prepare = db.prepare.bind(db);
  const guarded = (sql: string): ReturnType<Database['prepare']> => {
    const statement = prepare(sql) as unknown as RunnableStatement;
    if (statement.reader) return statement as unknown as ReturnType<Database['prepare']>;
    const run = statement.run.bind(statement);
    statement.run = (...args: unknown[]) => (db.inTransaction ? run(...args) : db.transaction(() => run(...args)).immediate());
    return statement as unknown as ReturnType<Database['prepare']>;
  };
  db.prepare = guarded as Database['prepare'];
}
