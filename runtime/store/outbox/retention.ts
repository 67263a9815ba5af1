/**
 * The outbox's retention (migration 13; docs/sending.md "Retention"): ended
 * sends and deleted drafts are erased in place once their period has
 * passed, a bounded number per transaction. Sole writer: the outbox actor,
 * on its prune timer (actors/outbox/retention.ts).
 *
 * What goes: the raw MIME (and with it the subject and body), every
 * recipient's address, and a draft's recipients and answering pointer. A
 * send's draft goes with the send. What stays, as a tombstone, is what the
 * surfaces answer for the id: account, caller, stage, attempts, failure
 * codes, each recipient's header, state and reply code, the times, the
 * caller's idempotency key and the fingerprint of what was asked (a
 * digest: nothing can be read back from it), so an old id answers in the
 * shape the spec gives and a repeated key never sends twice.
 *
 * Not erased: a send that has not ended (Recorded, TransmissionBegun: the
 * operator's), a Sent send whose sent-folder copy is still owed (the
 * journal reads its MIME), a held draft.
 *
 * Importable by the outbox actor and tests.
 */
import type { Database } from '../open.ts';
import { many, run } from '../rows.ts';
import { perConnection } from '../mailbox/prepared.ts';

const inIds = 'IN (SELECT value FROM json_each(?))';

const statements = perConnection((db: Database) => ({
  // Oldest first, by the partial index of migration 13.
  endedSends: db.prepare(
    `SELECT id FROM outgoing_emails
     WHERE erased_at IS NULL AND ended_at IS NOT NULL AND ended_at < ?
       AND stage IN ('Sent', 'Refused', 'Cancelled') AND NOT (stage = 'Sent' AND sent_copy = 'owed')
     ORDER BY ended_at, id LIMIT ?`,
  ),
  eraseSends: db.prepare(`UPDATE outgoing_emails SET raw_mime = x'', erased_at = ? WHERE id ${inIds}`),
  eraseRecipients: db.prepare(`UPDATE outgoing_recipients SET address = '' WHERE outgoing_id ${inIds}`),
  eraseSentDrafts: db.prepare(
    `UPDATE drafts SET raw_mime = x'', recipients = '[]', answering = NULL, erased_at = ?
     WHERE erased_at IS NULL AND id IN (SELECT draft_id FROM outgoing_emails WHERE id ${inIds} AND draft_id IS NOT NULL)`,
  ),
  deletedDrafts: db.prepare("SELECT id FROM drafts WHERE erased_at IS NULL AND state = 'deleted' AND updated_at < ? ORDER BY updated_at, id LIMIT ?"),
  eraseDrafts: db.prepare(`UPDATE drafts SET raw_mime = x'', recipients = '[]', answering = NULL, erased_at = ? WHERE id ${inIds}`),
}));

function boundOf(limit: number): number {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new Error('an outbox prune step needs a limit of one row or more');
  return limit;
}

/** Erases at most `limit` sends (oldest ending first) that ended before `endedBefore`, with their drafts; answers how many sends. One transaction. */
export function eraseEndedSends(db: Database, endedBefore: number, limit: number, now: number): number {
  const s = statements(db);
  const apply = db.transaction((): number => {
    const ids = many<{ id: number }>(s.endedSends, [endedBefore, boundOf(limit)]).map((row) => row.id);
    if (ids.length === 0) return 0;
    const list = JSON.stringify(ids);
    run(s.eraseRecipients, [list]);
    run(s.eraseSentDrafts, [now, list]);
    return run(s.eraseSends, [now, list]).changes;
  });
  return apply.immediate();
}

/** Erases at most `limit` drafts (oldest deletion first) deleted before `deletedBefore`; answers how many. One transaction. */
export function eraseDeletedDrafts(db: Database, deletedBefore: number, limit: number, now: number): number {
  const s = statements(db);
  const apply = db.transaction((): number => {
    const ids = many<{ id: number }>(s.deletedDrafts, [deletedBefore, boundOf(limit)]).map((row) => row.id);
    if (ids.length === 0) return 0;
    return run(s.eraseDrafts, [now, JSON.stringify(ids)]).changes;
  });
  return apply.immediate();
}
