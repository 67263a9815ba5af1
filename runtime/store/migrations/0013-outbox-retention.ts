/**
 * Migration 13: outbox records under retention (issue 30; docs/sending.md
 * "Retention"). Never edit once shipped; add the next one.
 *
 * An ended send, and a deleted draft, is erased in place once its retention
 * has passed: its raw MIME, its recipients' addresses (and a draft's
 * answering pointer) go, and the row stays as a tombstone holding what the
 * surfaces answer for its id (stage, attempts, failure, counts, the
 * caller's key), so an old id answers as before and a repeated key never
 * sends twice. `erased_at` says when; a tombstone is never offered again
 * and the change journal reads no MIME from it.
 *
 * The partial indexes hold only what the prune still has to erase, oldest
 * first, so each bounded step reads no more than it erases.
 *
 * Imported by `migrations/index.ts` only.
 */
export const sql = `
ALTER TABLE outgoing_emails ADD COLUMN erased_at INTEGER;
ALTER TABLE drafts ADD COLUMN erased_at INTEGER;
CREATE INDEX outgoing_unerased_ended ON outgoing_emails (ended_at, id) WHERE erased_at IS NULL AND ended_at IS NOT NULL;
CREATE INDEX drafts_unerased_deleted ON drafts (updated_at, id) WHERE erased_at IS NULL AND state = 'deleted';
`;
