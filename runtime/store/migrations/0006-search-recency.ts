/**
 * Migration 6: the full-text index in recency order (issue 14). Never edit
 * once shipped; add the next one.
 *
 * `search_index` was keyed by message id, so the best 20 of a word in most
 * emails could only be found by ranking every match (bm25 over ~45,000 rows
 * at 50,000 emails: ~0.1 s). It is now keyed by a search key that sorts as
 * the received time: FTS5 walks a term's postings in key order and stops
 * after the first matches (`ORDER BY rowid DESC LIMIT n`), and a received-
 * time range is a key range it seeks to. actors/mail-query/search.ts reads it
 * that way; docs/mcp-read-tools.md states the ranking.
 *
 * - `search_keys`: one key per search document. Received at `d` ms:
 *   2^44 + d·2^16 + n, n counting documents of the same millisecond in the
 *   order they were indexed (d clamped to 0 … 2^46). No received time: the
 *   message id, below every dated key. Immutable while the document exists.
 *   No foreign key on purpose: a cascade could remove the key before the
 *   delete trigger reads it, leaving the document in the index.
 * - `search_headings`: subject and sender alone, under the same keys: the
 *   first group of the ranking walks it, so a word that is in the bodies of
 *   most emails but the headings of few costs a short list, not a pass over
 *   the body index with a column filter.
 * - `search_content`: the external content of both, the documents by key.
 * - the triggers on `search_documents` (the only writers of all three, inside the
 *   writer's own statement as before): an insert takes a key and indexes the
 *   document under it; a delete (a cascade too) removes it all; an update
 *   re-indexes under the same key. Writers of `search_documents` are
 *   unchanged.
 *
 * Applying it re-keys existing documents (ties by message id) and rebuilds
 * the index: once, in the migration's transaction, about as long as
 * indexing the mailbox took.
 *
 * Imported by `migrations/index.ts` only.
 */
export const sql = `
DROP TRIGGER search_documents_insert;
DROP TRIGGER search_documents_delete;
DROP TRIGGER search_documents_update;
DROP TABLE search_index;

CREATE TABLE search_keys (
  key INTEGER PRIMARY KEY,
  message_id INTEGER NOT NULL UNIQUE
) STRICT;

INSERT INTO search_keys (key, message_id)
SELECT CASE WHEN m.internal_date IS NULL THEN d.message_id
  ELSE 17592186044416 + min(max(m.internal_date, 0), 70368744177664) * 65536
    + row_number() OVER (PARTITION BY min(max(m.internal_date, 0), 70368744177664) ORDER BY d.message_id) - 1 END,
  d.message_id
FROM search_documents d JOIN messages m ON m.id = d.message_id;

CREATE VIEW search_content AS
SELECT k.key, d.subject, d.from_text, d.recipients_text, d.body_text, d.attachment_names
FROM search_keys k JOIN search_documents d ON d.message_id = k.message_id;

CREATE VIRTUAL TABLE search_index USING fts5 (
  subject, from_text, recipients_text, body_text, attachment_names,
  content = 'search_content', content_rowid = 'key',
  tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO search_index (search_index) VALUES ('rebuild');
CREATE VIRTUAL TABLE search_headings USING fts5 (
  subject, from_text,
  content = 'search_content', content_rowid = 'key',
  tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO search_headings (search_headings) VALUES ('rebuild');

CREATE TRIGGER search_documents_insert AFTER INSERT ON search_documents BEGIN
  INSERT INTO search_keys (key, message_id)
  SELECT CASE WHEN b.base IS NULL THEN new.message_id
    ELSE coalesce((SELECT max(key) + 1 FROM search_keys WHERE key >= b.base AND key < b.base + 65536), b.base) END,
    new.message_id
  FROM (SELECT 17592186044416 + min(max(m.internal_date, 0), 70368744177664) * 65536 AS base FROM messages m WHERE m.id = new.message_id) b;
  INSERT INTO search_index (rowid, subject, from_text, recipients_text, body_text, attachment_names)
  SELECT key, new.subject, new.from_text, new.recipients_text, new.body_text, new.attachment_names FROM search_keys WHERE message_id = new.message_id;
  INSERT INTO search_headings (rowid, subject, from_text) SELECT key, new.subject, new.from_text FROM search_keys WHERE message_id = new.message_id;
END;
CREATE TRIGGER search_documents_delete AFTER DELETE ON search_documents BEGIN
  INSERT INTO search_index (search_index, rowid, subject, from_text, recipients_text, body_text, attachment_names)
  SELECT 'delete', key, old.subject, old.from_text, old.recipients_text, old.body_text, old.attachment_names FROM search_keys WHERE message_id = old.message_id;
  INSERT INTO search_headings (search_headings, rowid, subject, from_text)
  SELECT 'delete', key, old.subject, old.from_text FROM search_keys WHERE message_id = old.message_id;
  DELETE FROM search_keys WHERE message_id = old.message_id;
END;
CREATE TRIGGER search_documents_update AFTER UPDATE ON search_documents BEGIN
  INSERT INTO search_index (search_index, rowid, subject, from_text, recipients_text, body_text, attachment_names)
  SELECT 'delete', key, old.subject, old.from_text, old.recipients_text, old.body_text, old.attachment_names FROM search_keys WHERE message_id = old.message_id;
  INSERT INTO search_headings (search_headings, rowid, subject, from_text)
  SELECT 'delete', key, old.subject, old.from_text FROM search_keys WHERE message_id = old.message_id;
  UPDATE search_keys SET message_id = new.message_id WHERE message_id = old.message_id;
  INSERT INTO search_index (rowid, subject, from_text, recipients_text, body_text, attachment_names)
  SELECT key, new.subject, new.from_text, new.recipients_text, new.body_text, new.attachment_names FROM search_keys WHERE message_id = new.message_id;
  INSERT INTO search_headings (rowid, subject, from_text) SELECT key, new.subject, new.from_text FROM search_keys WHERE message_id = new.message_id;
END;
`;
