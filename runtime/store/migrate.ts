/**
 * Applying numbered migrations at start. Sole writer of `schema_version`.
 *
 * All pending migrations run in ONE transaction (BEGIN IMMEDIATE, so two
 * processes migrating at once serialise and the second finds nothing to do):
 * a failure leaves the database exactly as it was. A database at a version
 * newer than this build knows is refused rather than used, since this build
 * would misread what a newer one wrote.
 *
 * Runs on the main thread at boot, after the writer lock is held and before
 * any actor starts, and from the `migrate` command; nowhere else.
 */
import { AppError } from '../errors.ts';
import { migrations as known, type Migration } from './migrations/index.ts';
import { errorCode, type Database } from './open.ts';
import { many, one, run } from './rows.ts';

export type MigrationResult = { applied: number[]; version: number };

const createVersionTable = `CREATE TABLE IF NOT EXISTS schema_version (
  version INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  applied_at INTEGER NOT NULL
) STRICT`;

/** `list` is for tests; the service always applies this build's migrations. */
export function migrate(db: Database, list: readonly Migration[] = known): MigrationResult {
  checkSequence(list);
  const newest = list.at(-1)?.version ?? 0;
  try {
    db.exec('BEGIN IMMEDIATE');
  } catch (err) {
    throw new AppError('E_STORE_UNAVAILABLE', { message: `the database could not be locked for migration (${errorCode(err)})`, cause: err });
  }
  try {
    db.exec(createVersionTable);
    const current = one<{ version: number | null }>(db.prepare('SELECT max(version) AS version FROM schema_version'))?.version ?? 0;
    if (current > newest) {
      throw new AppError('E_STORE_MIGRATION', {
        message: `the database is at schema version ${current}, newer than this build knows (${newest}); run a build at least as new as the one that last wrote it`,
      });
    }
    if (current === 0) refuseForeignDatabase(db);
    const pending = list.filter((migration) => migration.version > current);
    const record = db.prepare('INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, ?)');
    for (const migration of pending) {
      try {
        db.exec(migration.sql);
      } catch (err) {
        // The message of a DDL failure names our own schema, never stored content.
        const detail = err instanceof Error ? err.message : String(err);
        throw new AppError('E_STORE_MIGRATION', {
          message: `migration ${label(migration)} failed (${errorCode(err)}: ${detail}); nothing was applied`,
          cause: err,
        });
      }
      run(record, [migration.version, migration.name, Date.now()]);
    }
    db.exec('COMMIT');
    return { applied: pending.map((migration) => migration.version), version: Math.max(current, newest) };
  } catch (err) {
    if (db.inTransaction) db.exec('ROLLBACK');
    if (err instanceof AppError) throw err;
    throw new AppError('E_STORE_MIGRATION', { message: `migrating the database failed (${errorCode(err)}); nothing was applied`, cause: err });
  }
}

/** Versions must run 1, 2, 3… so "newest" and "pending" mean what they say. */
export function checkSequence(list: readonly Migration[]): void {
  list.forEach((migration, index) => {
    if (migration.version !== index + 1) {
      throw new AppError('E_STORE_MIGRATION', { message: `migration ${label(migration)} is out of sequence: expected version ${index + 1}` });
    }
  });
}

// A file with tables but no schema_version belongs to something else: say so
// rather than fail on the first CREATE TABLE with "already exists".
function refuseForeignDatabase(db: Database): void {
  const tables = many<{ name: string }>(
    db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name <> 'schema_version'"),
  );
  if (tables.length > 0) {
    throw new AppError('E_STORE_MIGRATION', {
      message: `Storage:Database holds ${tables.length} tables but no Mailcairn schema version: it is not a Mailcairn database`,
    });
  }
}

function label(migration: Migration): string {
  return `${String(migration.version).padStart(4, '0')}-${migration.name}`;
}
