/**
 * Migration 2: what the mailbox writers (`runtime/store/mailbox/`) need
 * beyond the initial schema. Never edit once shipped; add the next one.
 *
 * - `folder_bindings.progress_epoch`: bumped by rewind on every binding whose
 *   progress it discarded, so a synchronization run that read the checkpoint
 *   before the rewind has its next advance refused. It lives on the binding,
 *   not the checkpoint, because rewind deletes the checkpoint row.
 * - `folder_bindings.unresolved_since`: set while the alias resolves to no
 *   single remote folder. `remote_path` keeps the folder this generation was
 *   bound to, so an alias that comes back on another folder starts a new
 *   generation instead of mixing two folders' mail under one.
 * - `rederivation_runs`: durable state of re-derivation runs per scope.
 *
 * Imported by `migrations/index.ts` only.
 */
export const sql = `
ALTER TABLE folder_bindings ADD COLUMN progress_epoch INTEGER NOT NULL DEFAULT 0 CHECK (progress_epoch >= 0);
ALTER TABLE folder_bindings ADD COLUMN unresolved_since INTEGER;

-- Writer: the account's sync actor (the admin route asks it to start a run;
-- one job carries the run across bounded segments, and each segment's
-- progress is recorded here). One row per run; folder_alias NULL is the
-- scope "every folder the account holds mail in". At most one outstanding run
-- (ended_at NULL) per scope, so asking again returns it. last_message_id is
-- the position (messages.id already covered); NULL once the run ended, which
-- forgets it. carriage: carried, queue-at-capacity, stopped (open vocabulary).
CREATE TABLE rederivation_runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  account_id TEXT NOT NULL REFERENCES accounts(id),
  folder_alias TEXT CHECK (folder_alias IS NULL OR folder_alias <> ''),
  carriage TEXT NOT NULL DEFAULT 'carried',
  requested_at INTEGER NOT NULL,
  last_message_id INTEGER CHECK (last_message_id IS NULL OR last_message_id >= 0),
  rederived_count INTEGER NOT NULL DEFAULT 0 CHECK (rederived_count >= 0),
  unreadable_count INTEGER NOT NULL DEFAULT 0 CHECK (unreadable_count >= 0),
  missing_count INTEGER NOT NULL DEFAULT 0 CHECK (missing_count >= 0),
  updated_at INTEGER NOT NULL,
  ended_at INTEGER,
  CHECK ((ended_at IS NULL) = (last_message_id IS NOT NULL))
) STRICT;
CREATE UNIQUE INDEX rederivation_runs_outstanding ON rederivation_runs (account_id, ifnull(folder_alias, '')) WHERE ended_at IS NULL;
CREATE INDEX rederivation_runs_scope ON rederivation_runs (account_id, folder_alias, id DESC);
`;
