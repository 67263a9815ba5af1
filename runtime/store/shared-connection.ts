/**
 * One connection per thread and store slice, leased by the actors on that
 * thread (the 25 sync actors of an accounts host). A connection costs about
 * a megabyte or more of native memory (its page cache, parsed schema and
 * prepared statements), so a thread of account actors holds one, not 25
 * (docs/performance-perf-memory.md).
 *
 * Safe because nothing here holds a transaction across an await: every
 * transaction is one synchronous `db.transaction(fn)` call, so the actors of a
 * thread never interleave inside one. The connection closes when its last
 * holder releases it.
 *
 * A connection found inside a transaction at a lease or a release (never the
 * case between synchronous calls; libsql 0.5 can leave a failed statement
 * holding its implicit transaction open) is retired: later leases open a
 * fresh one, and the retired one closes with its last holder. An actor that
 * crashed on it thus restarts on a clean connection.
 */
import type { Database, StoreOptions } from './open.ts';
import { openSlice } from './open-slice.ts';
import type { StoreSlice } from './store-slice.ts';

export type ConnectionLease = {
  readonly db: Database;
  /** Idempotent; the last release closes the connection. */
  release(): void;
};

type Shared = { db: Database; holders: number; retired: boolean };

const byKey = new Map<string, Shared>();

export function leaseSlice(slice: StoreSlice, options: Pick<StoreOptions, 'checkpoints'> = {}): ConnectionLease {
  const key = JSON.stringify([slice.database, slice.busyTimeoutMs, slice.synchronous, slice.authTokenRef ?? null, options.checkpoints ?? 'inline']);
  let shared = byKey.get(key);
  if (shared?.db.inTransaction) retire(key, shared);
  shared = byKey.get(key);
  if (shared === undefined) {
    shared = { db: openSlice(slice, options), holders: 0, retired: false };
    byKey.set(key, shared);
  }
  const held = shared;
  held.holders += 1;
  let released = false;
  return {
    db: held.db,
    release() {
      if (released) return;
      released = true;
      held.holders -= 1;
      if (held.db.inTransaction) retire(key, held);
      if (held.holders > 0) return;
      if (!held.retired) byKey.delete(key);
      held.db.close();
    },
  };
}

/** Open shared connections on this thread: for tests and diagnostics. */
export function sharedConnectionCount(): number {
  return byKey.size;
}

function retire(key: string, shared: Shared): void {
  if (shared.retired) return;
  shared.retired = true;
  if (byKey.get(key) === shared) byKey.delete(key);
}
