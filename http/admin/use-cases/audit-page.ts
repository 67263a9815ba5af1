/**
 * What the audit pages share (docs/admin-api.md "Mailbox-change audit",
 * "Answering audit"):
 * the range check, the keyset position read back from a cursor, and the
 * walk step that binds a cursor to the page's path and filters. Both audit
 * use cases (mutation-audit.ts, answering-audit.ts) import it.
 */
import { NOT_ISSUED_HERE, type Cursors } from '../cursor.ts';
import { invalidRequest } from './guard.ts';

export const EMPTY_RANGE = 'The range ends where it begins or earlier; send a before later than from, or leave one of them out.';

/** `from` (inclusive) and `before` (exclusive), epoch ms: refused when the range is empty. */
export function checkRange(from: number | undefined, before: number | undefined): void {
  if (from !== undefined && before !== undefined && before <= from) throw invalidRequest(EMPTY_RANGE);
}

/** Our own signature vouches for the cursor; its position is still checked before it reaches SQL. */
export function positionOf(position: ReadonlyArray<string | number>): [number, number] {
  const [endedAt, id] = position;
  if (position.length !== 2 || !Number.isSafeInteger(endedAt) || !Number.isSafeInteger(id) || (id as number) < 1) throw invalidRequest(NOT_ISSUED_HERE);
  return [endedAt as number, id as number];
}

/** Where a page resumes: after the cursor's position, which must have been issued for `path` under `filters`. */
export function resumeAfter(
  cursors: Cursors,
  path: string,
  filters: Readonly<Record<string, unknown>>,
  cursor: string | undefined,
): [number, number] | undefined {
  return cursor === undefined ? undefined : positionOf(cursors.read(path, filters, cursor));
}

/** `nextCursor` for a page the pool says is followed by more, bound like the one it came from. */
export function nextCursorOf(
  cursors: Cursors,
  path: string,
  filters: Readonly<Record<string, unknown>>,
  next: readonly [number, number] | null,
): { nextCursor?: string } {
  return next === null ? {} : { nextCursor: cursors.issue(path, filters, next) };
}
