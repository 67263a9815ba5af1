/**
 * A thread's scheduling priority, for threads whose work can always wait
 * (the local embedding model's backfill): on Linux a thread's nice value is
 * its own (setpriority on its thread id), so lowering it leaves the rest of
 * the process — searches, the mirror, the listeners — first in line for the
 * cores. Elsewhere, or where the system refuses, nothing changes.
 *
 * Importable from anywhere.
 */
import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

/** The nice value a background thread takes: below every thread left at the default 0. */
export const BACKGROUND_NICE = 10;

/** Gives the calling thread `nice` (never a higher priority than it has); the value it now has, or null where threads cannot be told apart. */
export function lowerThreadPriority(nice: number = BACKGROUND_NICE): number | null {
  const tid = threadId();
  if (tid === null) return null;
  try {
    const now = getPriority(tid);
    if (now < nice) setPriority(tid, nice);
    return getPriority(tid);
  } catch {
    return null;
  }
}

/** The kernel's id of the calling thread (Linux: /proc/thread-self is `<pid>/task/<tid>`). */
export function threadId(): number | null {
  if (process.platform !== 'linux') return null;
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    return Number.isInteger(tid) && tid > 0 ? tid : null;
  } catch {
    return null;
  }
}
