/**
 * Migration 5: the outbox and drafts (issue 13). Never edit once shipped;
 * add the next one.
 *
 * Writer of every table here: the outbox actor (actors/outbox/), the one
 * place a send or a draft is recorded, so the send ceilings are checked and
 * counted in the same transaction that records the send. Readers: the query
 * pool (admin listing, detail, summary; `get_outgoing_email`).
 *
 * - `outgoing_emails`: one send, its MIME composed once (Message-ID minted
 *   once) and its stage (docs/admin-api.md "Outbox", Stages). `claimed_at` is
 *   set while an attempt is under way, so a cancellation (one conditional
 *   write) cannot withdraw a send whose attempt began. `body_began_at` is
 *   written, durably, before the first byte of the body goes out: a send that
 *   has it and no final answer is `TransmissionBegun`, never retried by
 *   itself. The caller's idempotency key is unique per account and caller; the
 *   fingerprint is of what was asked, so the same key for another message is
 *   refused rather than answered with the first.
 * - `outgoing_recipients`: every address offered, with the header it came
 *   from (`bcc` is in no header of the MIME) and what the server said last.
 *   An `accepted` recipient is never offered again.
 * - `drafts`: a draft's current revision, held locally and filed in the
 *   account's drafts folder through the change journal (`filed_job` is the
 *   journal's append of that revision; `retired_jobs` the removals of the
 *   earlier ones).
 *
 * The send ceilings count `outgoing_emails` rows by `recorded_at`, so the
 * counts survive a restart without a table of their own.
 *
 * Imported by `migrations/index.ts` only.
 */
export const sql = `
CREATE TABLE drafts (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  account_id TEXT NOT NULL REFERENCES accounts(id),
  requester TEXT NOT NULL,
  revision INTEGER NOT NULL DEFAULT 1 CHECK (revision >= 1),
  -- What the draft answers or forwards: {storedMessageId, answering}; NULL for a new message.
  answering TEXT CHECK (answering IS NULL OR json_valid(answering)),
  message_id TEXT NOT NULL,
  raw_mime BLOB NOT NULL,
  -- [{address, header}] of the current revision; bcc is in no header of raw_mime.
  recipients TEXT NOT NULL CHECK (json_valid(recipients)),
  state TEXT NOT NULL CHECK (state IN ('held', 'sent', 'deleted')),
  filed_job INTEGER,
  retired_jobs TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(retired_jobs)),
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
) STRICT;
CREATE INDEX drafts_unfiled ON drafts (id) WHERE filed_job IS NULL AND state = 'held';

CREATE TABLE outgoing_emails (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  account_id TEXT NOT NULL REFERENCES accounts(id),
  requester TEXT NOT NULL,
  idempotency_key TEXT NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 128),
  fingerprint TEXT NOT NULL,
  origin TEXT NOT NULL CHECK (origin IN ('new', 'reply', 'forward', 'draft')),
  draft_id INTEGER REFERENCES drafts(id),
  message_id TEXT NOT NULL,
  envelope_from TEXT NOT NULL,
  raw_mime BLOB NOT NULL,
  size_bytes INTEGER NOT NULL CHECK (size_bytes >= 0),
  stage TEXT NOT NULL CHECK (stage IN ('Recorded', 'TransmissionBegun', 'Sent', 'Refused', 'Cancelled')),
  attempt_count INTEGER NOT NULL DEFAULT 0 CHECK (attempt_count >= 0),
  due_at INTEGER NOT NULL,
  claimed_at INTEGER,
  body_began_at INTEGER,
  failure_code TEXT,
  failure_reply_code INTEGER,
  recorded_at INTEGER NOT NULL,
  ended_at INTEGER,
  cancelled_by TEXT,
  -- The copy in the sent folder: owed until the journal recorded its append (sent_copy_job).
  sent_copy TEXT NOT NULL DEFAULT 'owed' CHECK (sent_copy IN ('owed', 'recorded', 'none')),
  sent_copy_job INTEGER,
  UNIQUE (account_id, requester, idempotency_key),
  CHECK ((stage = 'Recorded') OR (claimed_at IS NULL))
) STRICT;
CREATE INDEX outgoing_due ON outgoing_emails (due_at, id) WHERE stage = 'Recorded';
CREATE INDEX outgoing_listing ON outgoing_emails (id DESC, account_id, stage);
CREATE INDEX outgoing_by_account ON outgoing_emails (account_id, recorded_at);
CREATE INDEX outgoing_by_requester ON outgoing_emails (requester, recorded_at);
CREATE INDEX outgoing_copy_owed ON outgoing_emails (id) WHERE stage = 'Sent' AND sent_copy = 'owed';

CREATE TABLE outgoing_recipients (
  outgoing_id INTEGER NOT NULL REFERENCES outgoing_emails(id),
  position INTEGER NOT NULL,
  address TEXT NOT NULL,
  header TEXT NOT NULL CHECK (header IN ('to', 'cc', 'bcc')),
  state TEXT NOT NULL CHECK (state IN ('pending', 'accepted', 'refused')),
  reply_code INTEGER,
  replied_at INTEGER,
  PRIMARY KEY (outgoing_id, position)
) STRICT, WITHOUT ROWID;
`;
