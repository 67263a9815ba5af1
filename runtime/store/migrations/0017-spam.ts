/**
 * Migration 17: spam classification (issue 32, docs/rules-and-spam.md
 * "Spam"). Never edit once shipped; add the next one.
 *
 * `spam_classifications`: one row per verdict, newest first for the admin
 * page. No subject, address or content: the message id (kept after the
 * email is erased, as the mutation audit keeps it), the verdict, the mapped
 * score (0..1), which stage gave it, the run (null: arrival), whether it
 * asked for changes (a dry run asks none), the change jobs asked, and a
 * conclusion code when none could be asked (the folder alias has no
 * binding, the message was gone).
 *
 * `spam_arrival_cursors`: per account, the highest message id the arrival
 * stage judged; mail past it waits (also while the engine is down).
 *
 * `spam_runs`: admin runs, at most one under way per account; `through_id`
 * is the highest message id when it was asked (mail arriving later is the
 * arrival stage's), `last_message_id` its position.
 *
 * Writer of all three: the spam actor. Readers: the query pool (the
 * classifications page) and the spam actor.
 *
 * Imported by `migrations/index.ts` only.
 */
export const sql = `
CREATE TABLE spam_classifications (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  account_id TEXT NOT NULL,
  message_id INTEGER NOT NULL CHECK (message_id >= 1),
  verdict TEXT NOT NULL CHECK (verdict IN ('spam', 'ham')),
  score REAL NOT NULL CHECK (score >= 0 AND score <= 1),
  source TEXT NOT NULL CHECK (source IN ('trusted-header', 'engine')),
  run_id INTEGER,
  applied INTEGER NOT NULL CHECK (applied IN (0, 1)),
  change_jobs TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(change_jobs)),
  conclusion TEXT,
  classified_at INTEGER NOT NULL
) STRICT;
CREATE INDEX spam_classifications_page ON spam_classifications (account_id, classified_at DESC, id DESC);
CREATE INDEX spam_classifications_message ON spam_classifications (message_id);

CREATE TABLE spam_arrival_cursors (
  account_id TEXT PRIMARY KEY,
  last_message_id INTEGER NOT NULL CHECK (last_message_id >= 0),
  updated_at INTEGER NOT NULL
) STRICT;

CREATE TABLE spam_runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  account_id TEXT NOT NULL,
  apply INTEGER NOT NULL CHECK (apply IN (0, 1)),
  requested_at INTEGER NOT NULL,
  through_id INTEGER NOT NULL CHECK (through_id >= 0),
  total_count INTEGER NOT NULL CHECK (total_count >= 0),
  last_message_id INTEGER NOT NULL DEFAULT 0 CHECK (last_message_id >= 0),
  judged_count INTEGER NOT NULL DEFAULT 0 CHECK (judged_count >= 0),
  spam_count INTEGER NOT NULL DEFAULT 0 CHECK (spam_count >= 0),
  changes_count INTEGER NOT NULL DEFAULT 0 CHECK (changes_count >= 0),
  waiting_since INTEGER,
  updated_at INTEGER NOT NULL,
  ended_at INTEGER
) STRICT;
CREATE UNIQUE INDEX spam_runs_outstanding ON spam_runs (account_id) WHERE ended_at IS NULL;
CREATE INDEX spam_runs_account ON spam_runs (account_id, id DESC);
`;
