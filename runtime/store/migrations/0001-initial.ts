/**
 * Migration 1: the initial schema. Never edit a migration that has shipped;
 * add the next numbered one instead.
 *
 * Conventions: snake_case; timestamps are INTEGER milliseconds since the
 * epoch; JSON columns are TEXT checked with json_valid; flags are INTEGER 0/1;
 * tables are STRICT (a later vector table cannot be: F32_BLOB is not a STRICT
 * type). Each table names its sole writer. Closed state sets carry a CHECK;
 * open vocabularies that a later build may extend (audit kinds, outcomes, job
 * types) do not, because readers omit values they do not know, with a warning.
 * ON DELETE CASCADE is a safety net for erasure; writers still delete child
 * rows they own explicitly (a libSQL server may not keep foreign_keys on).
 * Nothing from a mail is ever in a column that logs, statuses or audits show.
 *
 * Imported by `migrations/index.ts` only.
 */
export const sql = `
-- Writer: boot (account reconciliation, right after migrate, before the actor
-- tree). One row per Accounts:N:Id ever configured; never deleted, so audits
-- and tombstones keep a valid account.
CREATE TABLE accounts (
  id TEXT PRIMARY KEY,
  configured INTEGER NOT NULL DEFAULT 1 CHECK (configured IN (0, 1)),
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
) STRICT;

-- Writer: the account's sync actor. A folder alias of an account bound to a
-- remote folder. A new generation starts when the alias resolves to another
-- remote folder; the older one is retired and keeps its mail until erased.
-- remote_path is NULL until the alias resolves (matches no folder, or
-- several). mirrored is 0 once the configuration no longer maps the alias
-- (which is what makes a folder erasable). Bindings are never deleted.
CREATE TABLE folder_bindings (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  account_id TEXT NOT NULL REFERENCES accounts(id),
  alias TEXT NOT NULL,
  generation INTEGER NOT NULL CHECK (generation >= 1),
  remote_path TEXT,
  mirrored INTEGER NOT NULL DEFAULT 1 CHECK (mirrored IN (0, 1)),
  created_at INTEGER NOT NULL,
  retired_at INTEGER,
  UNIQUE (account_id, alias, generation)
) STRICT;
CREATE UNIQUE INDEX folder_bindings_current ON folder_bindings (account_id, alias) WHERE retired_at IS NULL;

-- Writer: the account's sync actor, in the same transaction as the batch of
-- messages it covers. Rewind deletes the row (asked of the sync actor);
-- folder erasure deletes it in the pass that empties the folder.
-- highest_modseq may exceed 2^53: read it with safeIntegers.
CREATE TABLE checkpoints (
  binding_id INTEGER PRIMARY KEY REFERENCES folder_bindings(id) ON DELETE CASCADE,
  uidvalidity INTEGER NOT NULL,
  highest_uid INTEGER NOT NULL CHECK (highest_uid >= 0),
  highest_modseq INTEGER,
  advanced_at INTEGER NOT NULL
) STRICT;

-- Writer: the account's sync actor (storing, flag changes, derived
-- properties after parsing, tombstoning, re-derivation segments carried by
-- its jobs, folder erasure passes asked by the admin route). Identity is (binding,
-- uidvalidity, uid); id is the local key storedEmailId is built over, never
-- reused (AUTOINCREMENT). state: stored (raw MIME held), oversized and
-- unreadable (identity and server properties only), tombstoned (gone from the
-- server or retired by a UIDVALIDITY change; identity only, content columns
-- NULL by CHECK, child rows deleted). parse_version NULL = not derived yet.
CREATE TABLE messages (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  account_id TEXT NOT NULL REFERENCES accounts(id),
  binding_id INTEGER NOT NULL REFERENCES folder_bindings(id) ON DELETE CASCADE,
  uidvalidity INTEGER NOT NULL,
  uid INTEGER NOT NULL CHECK (uid >= 1),
  state TEXT NOT NULL CHECK (state IN ('stored', 'oversized', 'unreadable', 'tombstoned')),
  internal_date INTEGER,
  size INTEGER CHECK (size IS NULL OR size >= 0),
  flags TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(flags)),
  keywords TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(keywords)),
  modseq INTEGER,
  header_message_id TEXT,
  in_reply_to TEXT,
  references_json TEXT CHECK (references_json IS NULL OR json_valid(references_json)),
  thread_id TEXT,
  from_json TEXT CHECK (from_json IS NULL OR json_valid(from_json)),
  to_json TEXT CHECK (to_json IS NULL OR json_valid(to_json)),
  cc_json TEXT CHECK (cc_json IS NULL OR json_valid(cc_json)),
  subject TEXT,
  sent_at INTEGER,
  has_attachments INTEGER CHECK (has_attachments IS NULL OR has_attachments IN (0, 1)),
  attachments_json TEXT CHECK (attachments_json IS NULL OR json_valid(attachments_json)),
  parse_version INTEGER,
  derived_at INTEGER,
  stored_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  tombstoned_at INTEGER,
  tombstone_reason TEXT,
  UNIQUE (binding_id, uidvalidity, uid),
  CHECK ((state = 'tombstoned') = (tombstoned_at IS NOT NULL)),
  CHECK (state <> 'tombstoned' OR (
    header_message_id IS NULL AND in_reply_to IS NULL AND references_json IS NULL AND thread_id IS NULL
    AND from_json IS NULL AND to_json IS NULL AND cc_json IS NULL AND subject IS NULL
    AND has_attachments IS NULL AND attachments_json IS NULL AND parse_version IS NULL))
) STRICT;
CREATE INDEX messages_listing ON messages (account_id, state, internal_date DESC, id DESC);
CREATE INDEX messages_binding_state ON messages (binding_id, state);
CREATE INDEX messages_thread ON messages (thread_id) WHERE thread_id IS NOT NULL;
CREATE INDEX messages_header_id ON messages (header_message_id) WHERE header_message_id IS NOT NULL;
CREATE INDEX messages_underived ON messages (account_id, id) WHERE parse_version IS NULL AND state = 'stored';

-- Writer: the account's sync actor, with the messages row. Raw MIME in a
-- table of its own so listings never page it in. sha256 tells damaged
-- content (55001) from intact.
CREATE TABLE message_raw (
  message_id INTEGER PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
  mime BLOB NOT NULL,
  sha256 BLOB NOT NULL CHECK (length(sha256) = 32),
  stored_at INTEGER NOT NULL
) STRICT;

-- Writer: the account's sync actor, with the derived properties. Content of
-- the FTS5 external-content index below, which triggers keep in step inside
-- the writer's own statement (a cascade delete fires them too).
CREATE TABLE search_documents (
  message_id INTEGER PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
  subject TEXT NOT NULL DEFAULT '',
  from_text TEXT NOT NULL DEFAULT '',
  recipients_text TEXT NOT NULL DEFAULT '',
  body_text TEXT NOT NULL DEFAULT '',
  attachment_names TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE VIRTUAL TABLE search_index USING fts5 (
  subject, from_text, recipients_text, body_text, attachment_names,
  content = 'search_documents', content_rowid = 'message_id',
  tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TRIGGER search_documents_insert AFTER INSERT ON search_documents BEGIN
  INSERT INTO search_index (rowid, subject, from_text, recipients_text, body_text, attachment_names)
  VALUES (new.message_id, new.subject, new.from_text, new.recipients_text, new.body_text, new.attachment_names);
END;
CREATE TRIGGER search_documents_delete AFTER DELETE ON search_documents BEGIN
  INSERT INTO search_index (search_index, rowid, subject, from_text, recipients_text, body_text, attachment_names)
  VALUES ('delete', old.message_id, old.subject, old.from_text, old.recipients_text, old.body_text, old.attachment_names);
END;
CREATE TRIGGER search_documents_update AFTER UPDATE ON search_documents BEGIN
  INSERT INTO search_index (search_index, rowid, subject, from_text, recipients_text, body_text, attachment_names)
  VALUES ('delete', old.message_id, old.subject, old.from_text, old.recipients_text, old.body_text, old.attachment_names);
  INSERT INTO search_index (rowid, subject, from_text, recipients_text, body_text, attachment_names)
  VALUES (new.message_id, new.subject, new.from_text, new.recipients_text, new.body_text, new.attachment_names);
END;

-- Writer: the account's sync actor, with the derived properties. Vectors come
-- with the embeddings migration: a separate, non-STRICT table keyed by
-- (passage_id, profile generation) with an F32_BLOB column and a
-- libsql_vector_idx index, written by the embedding actor.
CREATE TABLE passages (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
  ordinal INTEGER NOT NULL CHECK (ordinal >= 0),
  text TEXT NOT NULL,
  parse_version INTEGER NOT NULL,
  UNIQUE (message_id, ordinal)
) STRICT;

-- Writer: the account's sync actor (the query path asks it to record one
-- when content is missing or damaged, 55001; it resolves it by refetching).
-- At most one open request per message.
CREATE TABLE repair_requests (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
  account_id TEXT NOT NULL REFERENCES accounts(id),
  reason TEXT NOT NULL CHECK (reason IN ('missing', 'damaged')),
  requested_at INTEGER NOT NULL,
  attempt_count INTEGER NOT NULL DEFAULT 0 CHECK (attempt_count >= 0),
  last_attempt_at INTEGER,
  resolved_at INTEGER,
  outcome TEXT,
  CHECK ((resolved_at IS NULL) = (outcome IS NULL))
) STRICT;
CREATE UNIQUE INDEX repair_requests_open ON repair_requests (message_id) WHERE resolved_at IS NULL;
CREATE INDEX repair_requests_message ON repair_requests (message_id);
CREATE INDEX repair_requests_due ON repair_requests (account_id, requested_at) WHERE resolved_at IS NULL;

-- Writer: per account, the account's sync actor (runtime/store/jobs.ts); it
-- carries re-derivation runs, the only job type so far. Durable background
-- work. A dead letter is a job in state 'dead'; retry puts the
-- same row (same id and idempotency key) back to 'queued'; drop moves it to
-- 'dropped' and keeps it. One live job per idempotency key, so asking while
-- one is under way returns it. progress: a type's position where it has no
-- table of its own (a re-derivation run's is in rederivation_runs);
-- failure_* hold an internal code and a constant sentence, never content.
CREATE TABLE jobs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  type TEXT NOT NULL,
  account_id TEXT REFERENCES accounts(id),
  idempotency_key TEXT NOT NULL,
  payload TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(payload)),
  progress TEXT CHECK (progress IS NULL OR json_valid(progress)),
  state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'dead', 'dropped')),
  attempt_count INTEGER NOT NULL DEFAULT 0 CHECK (attempt_count >= 0),
  enqueued_at INTEGER NOT NULL,
  due_at INTEGER NOT NULL,
  started_at INTEGER,
  ended_at INTEGER,
  failure_class TEXT,
  failure_code TEXT,
  failure_reason TEXT,
  dead_lettered_at INTEGER,
  dropped_at INTEGER,
  CHECK ((state = 'dead') <= (dead_lettered_at IS NOT NULL)),
  CHECK ((state = 'dropped') = (dropped_at IS NOT NULL))
) STRICT;
CREATE UNIQUE INDEX jobs_live_key ON jobs (idempotency_key) WHERE state IN ('queued', 'running', 'dead');
CREATE INDEX jobs_due ON jobs (due_at, id) WHERE state = 'queued';
CREATE INDEX jobs_dead_letters ON jobs (dead_lettered_at DESC, id DESC) WHERE state = 'dead';
CREATE INDEX jobs_by_type ON jobs (type, account_id, id DESC);

-- Writer: the credential judge's replay guard (credentials issue). jti of
-- every client assertion served, until it expires; pruned by expires_at.
CREATE TABLE assertion_replays (
  jti TEXT PRIMARY KEY,
  expires_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE INDEX assertion_replays_expiry ON assertion_replays (expires_at);

-- Writer: the account's sync actor (the refresh-token route asks it; a
-- provider that rotates the token has it rewritten). Sealed with the key
-- ring's token-sealing purpose; key_id repeats the id inside the sealed
-- value so rows under a retiring key can be found and resealed.
CREATE TABLE mailbox_refresh_tokens (
  account_id TEXT PRIMARY KEY REFERENCES accounts(id),
  key_id TEXT NOT NULL,
  sealed TEXT NOT NULL,
  stored_at INTEGER NOT NULL
) STRICT;
CREATE INDEX mailbox_refresh_tokens_key ON mailbox_refresh_tokens (key_id);

-- Writer: the account's sync actor, once per change when it ended. The
-- mailbox-change audit: survives deletion of the mail it describes (no
-- foreign key on message_id). mutation: relocate, delete, set-seen, copy,
-- set-flagged, add-keywords, remove-keywords, set-keywords. detail holds what
-- was asked (a flag value, the keyword set), never mail content.
CREATE TABLE mutation_audit (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  account_id TEXT NOT NULL REFERENCES accounts(id),
  mutation TEXT NOT NULL,
  message_id INTEGER,
  source_path TEXT,
  target_path TEXT,
  uidvalidity INTEGER,
  source_uid INTEGER,
  target_uid INTEGER,
  detail TEXT CHECK (detail IS NULL OR json_valid(detail)),
  requester TEXT NOT NULL,
  requested_at INTEGER NOT NULL,
  ended_at INTEGER NOT NULL,
  outcome TEXT NOT NULL
) STRICT;
CREATE INDEX mutation_audit_page ON mutation_audit (account_id, ended_at DESC, id DESC);
CREATE INDEX mutation_audit_kind_page ON mutation_audit (account_id, mutation, ended_at DESC, id DESC);

-- Writer: the answering actor, once per run and account when the run ended.
-- A question across two accounts leaves one row per account sharing run_id.
-- No question, answer, extract or subject. degradation: JSON list.
CREATE TABLE answering_runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id TEXT NOT NULL,
  account_id TEXT NOT NULL REFERENCES accounts(id),
  endpoint_alias TEXT NOT NULL,
  instruction_version TEXT NOT NULL,
  began_at INTEGER NOT NULL,
  ended_at INTEGER NOT NULL,
  ending TEXT NOT NULL,
  degradation TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(degradation)),
  UNIQUE (run_id, account_id)
) STRICT;
CREATE INDEX answering_runs_page ON answering_runs (account_id, ended_at DESC, id DESC);

-- Writer: the answering actor, with its run. One row per message read;
-- erasing a message erases it from these runs (cascade), tombstoning does not.
CREATE TABLE answering_reads (
  answering_run_id INTEGER NOT NULL REFERENCES answering_runs(id) ON DELETE CASCADE,
  position INTEGER NOT NULL CHECK (position >= 0),
  message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
  cited INTEGER NOT NULL CHECK (cited IN (0, 1)),
  PRIMARY KEY (answering_run_id, position)
) STRICT, WITHOUT ROWID;
CREATE INDEX answering_reads_message ON answering_reads (message_id);

-- Writer: the account's sync actor. One row per synchronization run: outcome
-- (NULL while running), how many folders failed, the consecutive failures its
-- delay was grown from, and when the next run is due. Pruned by the writer to
-- the latest few per account.
CREATE TABLE sync_runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  account_id TEXT NOT NULL REFERENCES accounts(id),
  started_at INTEGER NOT NULL,
  ended_at INTEGER,
  outcome TEXT,
  folders_failed INTEGER NOT NULL DEFAULT 0 CHECK (folders_failed >= 0),
  consecutive_failures INTEGER NOT NULL DEFAULT 0 CHECK (consecutive_failures >= 0),
  next_due_at INTEGER,
  CHECK ((ended_at IS NULL) = (outcome IS NULL))
) STRICT;
CREATE INDEX sync_runs_latest ON sync_runs (account_id, id DESC);

-- Writer: the account's sync actor, with its run. Per folder: counts stored,
-- oversized and unreadable, whether more is left to fetch, or the folder's
-- failure outcome (no-such-folder, ambiguous-folder, server-unresponsive,
-- concurrency-conflict, unexpected, interrupted).
CREATE TABLE sync_folder_runs (
  sync_run_id INTEGER NOT NULL REFERENCES sync_runs(id) ON DELETE CASCADE,
  binding_id INTEGER NOT NULL REFERENCES folder_bindings(id) ON DELETE CASCADE,
  started_at INTEGER NOT NULL,
  ended_at INTEGER,
  outcome TEXT,
  stored_count INTEGER NOT NULL DEFAULT 0 CHECK (stored_count >= 0),
  oversized_count INTEGER NOT NULL DEFAULT 0 CHECK (oversized_count >= 0),
  unreadable_count INTEGER NOT NULL DEFAULT 0 CHECK (unreadable_count >= 0),
  has_more INTEGER NOT NULL DEFAULT 0 CHECK (has_more IN (0, 1)),
  PRIMARY KEY (sync_run_id, binding_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX sync_folder_runs_binding ON sync_folder_runs (binding_id, sync_run_id DESC);
`;
