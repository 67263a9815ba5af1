/**
 * Migration 19: messages by sender address (issue 34, search at 50,000
 * messages). Never edit once shipped; add the next one.
 *
 * The sender filter of `list_emails` and `search_emails` matches one From
 * address exactly (actors/mail-query/filters.ts), which the messages table
 * can only answer row by row: a sender with no mail cost `list_emails` a walk
 * of the whole listing (38–46 ms at 50,000 messages, the file not mapped), and the
 * hybrid ranking found a sender's mail through the full-text phrase of the
 * address's tokens (about 5 ms for a sender of 4,546, past the mapped part
 * of the file). Here a sender's mail is one range of a key: 0.8 ms for
 * 1,506 messages, 0.03 ms for none.
 *
 * `message_senders`: one row per (From address, message), the address folded
 * as the filters fold it (SQLite's lower(), ASCII letters only). Empty
 * addresses (a group's heading) are left out: no filter matches them. No
 * rowid: the key is the lookup.
 *
 * The triggers on `messages` are its only writers, so every path that
 * writes `from_json` (storing, re-derivation, a copy, a tombstone, an
 * erasure, a delete) keeps it true inside its own statement. They remove by
 * the old row's addresses, through the key, so no second index is needed.
 *
 * Not here: To and Cc. Each row lands at a random place of the key, and a
 * derivation segment's commit writes every page it touched: measured on the
 * 50,000 store in segments of 64, the From rows cost 12 µs a message and
 * From, To and Cc together 27 µs. A domain filter (`@example.com`) and a
 * recipient filter read the messages (and the full-text index) as before.
 *
 * Applying it fills the table from the stored mail: one statement, about
 * 0.2 s at 50,000 messages.
 *
 * Imported by `migrations/index.ts` only.
 */
const sendersOf = (row: 'new' | 'old') => `SELECT lower(json_extract(value, '$.address')) AS address FROM json_each(${row}.from_json)`;

export const sql = `
CREATE TABLE message_senders (
  address TEXT NOT NULL,
  message_id INTEGER NOT NULL,
  PRIMARY KEY (address, message_id)
) STRICT, WITHOUT ROWID;

INSERT OR IGNORE INTO message_senders (address, message_id)
SELECT address, message_id FROM (
  SELECT lower(json_extract(a.value, '$.address')) AS address, m.id AS message_id FROM messages m, json_each(m.from_json) a
) WHERE address <> '';

CREATE TRIGGER message_senders_insert AFTER INSERT ON messages WHEN new.from_json IS NOT NULL BEGIN
  INSERT OR IGNORE INTO message_senders (address, message_id) SELECT address, new.id FROM (${sendersOf('new')}) WHERE address <> '';
END;
CREATE TRIGGER message_senders_update AFTER UPDATE OF from_json ON messages BEGIN
  DELETE FROM message_senders WHERE message_id = old.id AND address IN (${sendersOf('old')});
  INSERT OR IGNORE INTO message_senders (address, message_id) SELECT address, new.id FROM (${sendersOf('new')}) WHERE address <> '';
END;
CREATE TRIGGER message_senders_delete AFTER DELETE ON messages WHEN old.from_json IS NOT NULL BEGIN
  DELETE FROM message_senders WHERE message_id = old.id AND address IN (${sendersOf('old')});
END;
`;
