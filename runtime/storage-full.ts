/**
 * A full disk under the store, named for what it is: an outside condition
 * the service waits out, never a defect (docs/operations.md "A full disk").
 *
 * SQLite reports a write that found no room as SQLITE_FULL (its unix VFS
 * turns ENOSPC and EDQUOT on the database, the WAL or a temporary file into
 * that code); a file the service writes itself fails with ENOSPC. Every
 * store write reaches its caller as `E_STORE_FULL` (runtime/store/rows.ts,
 * runtime/store/transaction.ts), so an ask is answered with it and a
 * crash or failed start carries it to the supervisor, which restarts
 * without counting it towards giving the child up.
 *
 * The condition is process-wide: whichever place meets it says so once
 * (`store.full`, warn) and again when its next write lands
 * (`store.writable`, info), and the main thread's readiness answer carries
 * it as `checks.storage` (`watchStorage`, over a BroadcastChannel, which
 * reaches every thread without plumbing). Lines name the place and the
 * code, never a value.
 *
 * Importable from anywhere: it loads no driver.
 */
import { BroadcastChannel } from 'node:worker_threads';
import { AppError } from './errors.ts';
import type { Logger } from './log.ts';

const FULL_CODES = new Set(['E_STORE_FULL', 'SQLITE_FULL', 'ENOSPC', 'EDQUOT']);

/** Whether `err`, or an error it was caused by, says the disk had no room. Decided from codes only. */
export function isStorageFull(err: unknown): boolean {
  let e: unknown = err;
  for (let depth = 0; depth < 4 && typeof e === 'object' && e !== null; depth += 1) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && FULL_CODES.has(code)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/** `err` as the table's E_STORE_FULL when it is a full disk; anything else is returned unchanged. */
export function namedStorageFull(err: unknown): unknown {
  if (err instanceof AppError && err.code === 'E_STORE_FULL') return err;
  return isStorageFull(err) ? new AppError('E_STORE_FULL', { cause: err }) : err;
}

/**
 * How soon a writer that met a full disk tries again (the outbox, the change
 * journal, store maintenance; the sync runs follow the scheduler's back-off).
 * One failing write per interval costs nothing, and space freed is used
 * within seconds.
 */
export const STORAGE_FULL_RETRY_MS = 5_000;

/** The condition as the readiness answer shows it. */
export type StorageCondition = 'writable' | 'full';

type Notice = { condition: StorageCondition; where: string; at: number };

const CHANNEL = 'mailcairn.storage-condition';
let channel: BroadcastChannel | null = null;

function post(notice: Notice): void {
  if (channel === null) {
    channel = new BroadcastChannel(CHANNEL);
    (channel as unknown as { unref(): void }).unref();
  }
  channel.postMessage(notice);
}

/** Places on this thread that met a full disk and have not written since. */
const fullHere = new Set<string>();

/**
 * `where` (an actor or writer name, never a value) found the disk full: one
 * warn line per episode and place; every call (each retry that failed
 * again) keeps the process-wide condition full.
 */
export function noteStorageFull(log: Logger, where: string, err?: unknown): void {
  if (!fullHere.has(where)) {
    fullHere.add(where);
    log.warn(
      { event: 'store.full', where, code: codeOf(err) },
      'store.full: the disk under Storage:Database is full; writes here back off and resume once space is freed (reads go on)',
    );
  }
  post({ condition: 'full', where, at: Date.now() });
}

/** `where` wrote again after a full disk: one info line, and the condition turns writable. A no-op otherwise. */
export function noteStorageWritable(log: Logger, where: string): void {
  if (!fullHere.delete(where)) return;
  log.info({ event: 'store.writable', where }, 'store.writable: writes here resumed');
  post({ condition: 'writable', where, at: Date.now() });
}

/** Whether `where` on this thread is waiting out a full disk. */
export function storageFullAt(where: string): boolean {
  return fullHere.has(where);
}

/**
 * A full condition not confirmed for this long is taken as gone: every
 * place that waits out a full disk retries (and so reports again) well
 * within it, and a place that restarted and then wrote has no episode of
 * its own to end.
 */
export const STORAGE_FULL_STALE_MS = 5 * 60_000;

/**
 * Follow the condition from any thread (the main thread's readiness): the
 * latest report wins, a write landing anywhere proves there is room again,
 * and a place still without room says so at its next retry.
 */
export function watchStorage(now: () => number = Date.now): { condition(): StorageCondition; close(): void } {
  let fullAt = 0;
  let writableAt = 0;
  const listener = new BroadcastChannel(CHANNEL);
  (listener as unknown as { unref(): void }).unref();
  listener.onmessage = (event: unknown) => {
    const notice = (event as { data?: Notice }).data;
    if (notice === undefined || typeof notice.at !== 'number') return;
    if (notice.condition === 'full') fullAt = Math.max(fullAt, notice.at);
    else writableAt = Math.max(writableAt, notice.at);
  };
  return {
    condition: () => (fullAt > writableAt && now() - fullAt < STORAGE_FULL_STALE_MS ? 'full' : 'writable'),
    close: () => listener.close(),
  };
}

function codeOf(err: unknown): string {
  let e: unknown = err;
  for (let depth = 0; depth < 4 && typeof e === 'object' && e !== null; depth += 1) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && FULL_CODES.has(code) && code !== 'E_STORE_FULL') return code;
    e = (e as { cause?: unknown }).cause;
  }
  return 'SQLITE_FULL';
}
