/**
 * One connection per thread and store slice, leased by the actors on that
 * thread (the 25 sync actors of an accounts host). A connection costs about
 * a megabyte or more of native memory (its page cache, parsed schema and
 * prepared statements), so a thread of account actors holds one, not 25
 * (docs/performance-history.md, "Memory with 100 accounts").
 *
 * Safe because nothing here holds a transaction across an await: every
 * transaction is one synchronous `db.transaction(fn)` call, so the actors of a
 * thread never interleave inside one. The connection closes when its last
 * holder releases it.
 *
 * A connection found inside a transaction at a lease or a release has a
 * leaked one: between synchronous calls no transaction of ours is open, but
 * libsql 0.5 can leave a failed statement holding its implicit transaction
 * open. It is rolled back there and then, for every holder: left open it
 * would keep the database's write lock from every other writer, and the
 * other holders' writes would join it.
 */
import type { Database, StoreOptions } from './open.ts';
import { openSlice } from './open-slice.ts';
import type { StoreSlice } from './store-slice.ts';

export type ConnectionLease = {
  readonly db: Database;
  /** Idempotent; the last release closes the connection. */
  release(): void;
};

type Shared = { db: Database; holders: number };

const byKey = new Map<string, Shared>();

export function leaseSlice(slice: StoreSlice, options: Pick<StoreOptions, 'checkpoints'> = {}): ConnectionLease {
  const key = JSON.stringify([slice.database, slice.busyTimeoutMs, slice.synchronous, slice.authTokenRef ?? null, options.checkpoints ?? 'inline']);
  let shared = byKey.get(key);
  if (shared === undefined) {
    shared = { db: openSlice(slice, options), holders: 0 };
    byKey.set(key, shared);
  }
  const held = shared;
  rollBackLeaked(held.db);
  held.holders += 1;
  let released = false;
  return {
    db: held.db,
    release() {
      if (released) return;
      released = true;
      held.holders -= 1;
      rollBackLeaked(held.db);
      if (held.holders > 0) return;
      byKey.delete(key);
      held.db.close();
    },
  };
}

/** Open shared connections on this thread: for tests and diagnostics. */
export function sharedConnectionCount(): number {
  return byKey.size;
}

function rollBackLeaked(db: Database): void {
  if (db.inTransaction) db.exec('ROLLBACK');
}
