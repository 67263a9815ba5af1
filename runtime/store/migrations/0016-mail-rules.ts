/**
 * Migration 16: mail rules (issue 32; docs/rules-and-spam.md "Mail rules").
 * Never edit once shipped; add the next one. Writer of all three tables:
 * the mail-rules actor (runtime/store/mail-rules/); reader of the history:
 * the query pool.
 *
 * - `mail_rule_cursors`: the arrival stage's position per account, the
 *   highest message id judged. Set to the account's highest id when the
 *   stage first meets the account enabled, so mail stored before is left
 *   to an admin run (on a new deployment that is nothing: the first mirror
 *   is judged).
 * - `mail_rule_runs`: rule runs over an account's stored mail. One
 *   outstanding (ended_at NULL) per account, so asking again returns it;
 *   `last_message_id` is its position, `through_id` the highest id stored
 *   when it was asked for (mail arriving later is the arrival stage's).
 * - `mail_rule_history`: one row per conclusion (a rule matched a message):
 *   the rule's name and position, what it asked (JSON: moveTo, seen,
 *   flagged, keywords), the jobs recorded for it (JSON list of job ids,
 *   joined with `jobs` for the change's outcome) and a `note` when nothing
 *   was recorded (`no-folder`, `already-there`, `not-found`,
 *   `request-conflict`). `run_id` NULL: the arrival stage. Unique per rule,
 *   message and run, so a conclusion repeated after a crash is written once.
 *   `ended_at` is when the conclusion was written (the audit range filters
 *   apply to it).
 *
 * Imported by `migrations/index.ts` only.
 */
export const sql = `
CREATE TABLE mail_rule_cursors (
  account_id TEXT PRIMARY KEY REFERENCES accounts(id),
  last_message_id INTEGER NOT NULL CHECK (last_message_id >= 0),
  updated_at INTEGER NOT NULL
) STRICT;

CREATE TABLE mail_rule_runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  account_id TEXT NOT NULL REFERENCES accounts(id),
  requested_at INTEGER NOT NULL,
  through_id INTEGER NOT NULL CHECK (through_id >= 0),
  last_message_id INTEGER NOT NULL DEFAULT 0 CHECK (last_message_id >= 0),
  total_count INTEGER NOT NULL CHECK (total_count >= 0),
  judged_count INTEGER NOT NULL DEFAULT 0 CHECK (judged_count >= 0),
  matched_count INTEGER NOT NULL DEFAULT 0 CHECK (matched_count >= 0),
  change_count INTEGER NOT NULL DEFAULT 0 CHECK (change_count >= 0),
  updated_at INTEGER NOT NULL,
  ended_at INTEGER,
  outcome TEXT,
  CHECK ((ended_at IS NULL) = (outcome IS NULL))
) STRICT;
CREATE UNIQUE INDEX mail_rule_runs_outstanding ON mail_rule_runs (account_id) WHERE ended_at IS NULL;
CREATE INDEX mail_rule_runs_latest ON mail_rule_runs (account_id, id DESC);

CREATE TABLE mail_rule_history (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  account_id TEXT NOT NULL REFERENCES accounts(id),
  rule_name TEXT NOT NULL,
  rule_position INTEGER NOT NULL CHECK (rule_position >= 1),
  message_id INTEGER NOT NULL,
  run_id INTEGER,
  asked TEXT NOT NULL CHECK (json_valid(asked)),
  job_ids TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(job_ids)),
  note TEXT,
  ended_at INTEGER NOT NULL
) STRICT;
CREATE UNIQUE INDEX mail_rule_history_once ON mail_rule_history (account_id, rule_name, message_id, ifnull(run_id, 0));
CREATE INDEX mail_rule_history_page ON mail_rule_history (account_id, ended_at DESC, id DESC);
`;
