/**
 * Migration 15: what the mail server last said a mirrored folder holds
 * (issue 31, progress on long work; docs/admin-api.md "Progress"). Never
 * edit once shipped; add the next one.
 *
 * `folder_server_counts`: one row per binding, the message count (EXISTS)
 * the folder's SELECT reported and when, refreshed by every run that selects
 * the folder and again when the folder's fetching ends (the session's count
 * then, expunges included). It is the total a first mirror's progress is
 * measured against; without it the stored count has nothing to be a part
 * of. Not part of the checkpoint: a first mirror knows it before any batch
 * made a checkpoint, and a rewind, which discards the checkpoint, leaves
 * the server's count true.
 *
 * Writer: the account's sync actor (folder-run.ts), and its folder erasure,
 * which deletes the row in the pass that empties the folder, with the
 * checkpoint. Reader: the synchronization status.
 *
 * Imported by `migrations/index.ts` only.
 */
export const sql = `
CREATE TABLE folder_server_counts (
  binding_id INTEGER PRIMARY KEY REFERENCES folder_bindings(id) ON DELETE CASCADE,
  message_count INTEGER NOT NULL CHECK (message_count >= 0),
  observed_at INTEGER NOT NULL
) STRICT;
`;
