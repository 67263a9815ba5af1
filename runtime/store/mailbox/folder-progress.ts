/**
 * A mirrored folder's progress (the `progress` of each folder in the
 * synchronization status): the emails stored of it, the message count its
 * last SELECT reported (`folder_server_counts`, migration 15), and the pace
 * at which emails were stored lately.
 *
 * The pace is read from what the store recorded: each batch's rows carry the
 * instant they were stored (`messages.stored_at`, one instant per batch, ids
 * rising with it), so the newest rows of the folder, grouped by that
 * instant, are the recent batches (work-progress.ts `spansBetween`). It
 * costs one descending walk of the `messages_binding_state` index bounded by
 * RECENT_ROWS, whoever asks and however often, and it is the same figure
 * after a restart or for a second watcher. Counted are rows stored with their
 * content (`state = 'stored'`); the few a mirror records without it
 * (oversized, found unreadable) are in the stored count, not in the pace.
 *
 * Writer of `folder_server_counts`: the account's sync actor. Readers: the
 * status query.
 */
import { RATE_WINDOW_MS, ratePerSecond, spansBetween, type WorkProgress, workProgress } from '../../work-progress.ts';
import type { Database } from '../open.ts';
import { many, one, run } from '../rows.ts';
import { perConnection } from './prepared.ts';

/**
 * Rows read back for the pace at most. Past it the pace is measured over
 * the span these rows cover (shorter than the window when the mirror is fast).
 */
const RECENT_ROWS = 5_000;

const statements = perConnection((db: Database) => ({
  record: db.prepare(
    `INSERT INTO folder_server_counts (binding_id, message_count, observed_at) VALUES (?, ?, ?)
     ON CONFLICT (binding_id) DO UPDATE SET message_count = excluded.message_count, observed_at = excluded.observed_at`,
  ),
  serverCount: db.prepare('SELECT message_count FROM folder_server_counts WHERE binding_id = ?'),
  stored: db.prepare("SELECT count(*) AS n FROM messages WHERE binding_id = ? AND state <> 'tombstoned'"),
  recent: db.prepare(
    `SELECT stored_at AS at, count(*) AS count FROM (
       SELECT stored_at FROM messages WHERE binding_id = ? AND state = 'stored' ORDER BY id DESC LIMIT ${RECENT_ROWS}
     ) WHERE stored_at > ? GROUP BY stored_at ORDER BY stored_at`,
  ),
}));

/** The folder's message count as the server just reported it (its SELECT's EXISTS, or the session's count after fetching). */
export function recordServerCount(db: Database, bindingId: number, messageCount: number, now: number): void {
  run(statements(db).record, [bindingId, messageCount, now]);
}

/** The folder's progress as the store knows it now; read inside the caller's read transaction. */
export function mirrorProgress(db: Database, bindingId: number, now: number): WorkProgress {
  const s = statements(db);
  const stored = one<{ n: number }>(s.stored, [bindingId])?.n ?? 0;
  const total = one<{ message_count: number }>(s.serverCount, [bindingId])?.message_count ?? null;
  // One batch before the window too: it opens the first span that reaches into it.
  const batches = many<{ at: number; count: number }>(s.recent, [bindingId, now - 2 * RATE_WINDOW_MS]);
  // Mail that arrived after the SELECT may be stored before the next one counts it: never more than all of it done.
  return workProgress(stored, total === null ? null : Math.max(total, stored), ratePerSecond(spansBetween(batches), now));
}
