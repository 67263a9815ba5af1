/**
 * Migration 4: the mailbox change journal (issue 12). Never edit once
 * shipped; add the next one.
 *
 * A change asked of the mailbox (`set_mail_flags`, and later mail rules and
 * spam actions) is a `jobs` row of type `mailbox-change` whose payload
 * states the change (runtime/store/mailbox/changes.ts): the jobs lifecycle
 * already gives retries with backoff, dead letters, retry and drop. What
 * jobs cannot hold is here:
 *
 * - `messages.requested_flags`, `messages.requested_keywords`: the state
 *   the changes not yet confirmed by the server ask for, laid over the
 *   server's own `flags` / `keywords` (which only the server's answers
 *   write). NULL when nothing is outstanding, so a change that never lands
 *   takes nothing of the server's state with it.
 * - `mailbox_change_requests`: a caller's request identifier, per
 *   requester, with a fingerprint of what it asked and the changes it
 *   recorded, so asking again answers the same records and asking for
 *   something else under it is refused.
 *
 * Imported by `migrations/index.ts` only.
 */
export const sql = `
ALTER TABLE messages ADD COLUMN requested_flags TEXT CHECK (requested_flags IS NULL OR json_valid(requested_flags));
ALTER TABLE messages ADD COLUMN requested_keywords TEXT CHECK (requested_keywords IS NULL OR json_valid(requested_keywords));

-- Writer: the account's sync actor, in the transaction that records the
-- changes. job_ids: JSON list of the jobs (changes) recorded, in order.
CREATE TABLE mailbox_change_requests (
  requester TEXT NOT NULL,
  request_id TEXT NOT NULL CHECK (length(request_id) BETWEEN 1 AND 128),
  account_id TEXT NOT NULL REFERENCES accounts(id),
  fingerprint TEXT NOT NULL,
  job_ids TEXT NOT NULL CHECK (json_valid(job_ids)),
  recorded_at INTEGER NOT NULL,
  PRIMARY KEY (requester, request_id)
) STRICT, WITHOUT ROWID;

-- The outstanding changes of one message, to lay over the server's flags.
CREATE INDEX jobs_change_message ON jobs (account_id, json_extract(payload, '$.messageId'), id)
  WHERE type = 'mailbox-change' AND state IN ('queued', 'running');
`;
