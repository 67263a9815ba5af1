/**
 * One page of an account's mailbox-change audit (`mutation_audit`, written
 * by the account's sync actor) on the read-only query pool, for the admin
 * route `GET /api/admin/mailbox/mutations/audit`. Newest first by `ended_at`
 * then `id` (a total order), keyset-paginated on that pair; the range
 * filters apply to `ended_at` (`endedFrom` inclusive, `endedBefore`
 * exclusive).
 *
 * A row naming a change this build does not know (a later build wrote it)
 * is left out of the page and only counted (`omittedCount`): its other
 * columns may mean something else there. The page window is `pageSize`
 * rows, so a page may carry fewer entries; `next` says whether more follow.
 *
 * The journal's placements (`append`, `remove-appended`: the outbox's sent
 * copies and drafts) are audited in the same table but are not among the
 * eight kinds the admin surface lists: this build wrote them and knows
 * them, so they are left out of the window in SQL, neither shown nor
 * counted as omitted (no warning), and pages stay full.
 *
 * Pool message `mail-query.mutation-audit` (`MutationAuditRequest` in,
 * `MutationAuditReply` out; contract: protocol/mutation-audit.ts). Reads
 * only; logs
 * nothing (the admin use case warns about omitted rows).
 *
 * Importable by the query pool task and tests.
 */
import { PLACEMENT_KINDS } from '../../runtime/store/mailbox/change-effect.ts';
import type { Database } from '../../runtime/store/open.ts';
import { auditWindow, type Narrowing } from './audit-window.ts';
import { MUTATION_KINDS, type MutationAuditEntry, type MutationAuditReply, type MutationAuditRequest, type MutationKind } from './protocol/mutation-audit.ts';
import { iso } from './statements.ts';
import { encodeStoredEmailId } from './protocol/stored-email-id.ts';

type Row = {
  id: number;
  mutation: string;
  message_id: number | null;
  source_path: string | null;
  target_path: string | null;
  uidvalidity: number | null;
  source_uid: number | null;
  target_uid: number | null;
  requester: string;
  requested_at: number;
  ended_at: number;
  outcome: string;
};

const known = new Set<string>(MUTATION_KINDS);

export function mutationAuditPage(db: Database, msg: MutationAuditRequest): MutationAuditReply {
  // Placements are this build's own and not audit kinds: left out of the window, neither shown nor counted.
  const kind: Narrowing =
    msg.mutation !== undefined
      ? { clause: 'mutation = ?', values: [msg.mutation] }
      : { clause: 'mutation NOT IN (SELECT value FROM json_each(?))', values: [JSON.stringify(PLACEMENT_KINDS)] };
  const { window, next } = auditWindow<Row>(
    db,
    'SELECT id, mutation, message_id, source_path, target_path, uidvalidity, source_uid, target_uid, requester, requested_at, ended_at, outcome FROM mutation_audit',
    msg,
    [kind],
  );
  const shown = window.filter((row) => known.has(row.mutation));
  return { entries: shown.map(toEntry), omittedCount: window.length - shown.length, next };
}

function toEntry(row: Row): MutationAuditEntry {
  return {
    id: row.id,
    mutation: row.mutation as MutationKind,
    storedEmailId: row.message_id === null || row.message_id < 1 ? null : encodeStoredEmailId(row.message_id),
    sourceFolderPath: row.source_path,
    targetFolderPath: row.target_path,
    uidValidity: row.uidvalidity,
    sourceUid: row.source_uid,
    targetUid: row.target_uid,
    requester: row.requester,
    requestedAt: iso(row.requested_at),
    endedAt: iso(row.ended_at),
    outcome: row.outcome,
  };
}
