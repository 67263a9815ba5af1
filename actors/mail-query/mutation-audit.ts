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
 * Pool message `mail-query.mutation-audit` (`MutationAuditRequest` in,
 * `MutationAuditReply` out), re-exported by protocol.ts. Reads only; logs
 * nothing (the admin use case warns about omitted rows).
 *
 * Importable by the query pool task, protocol.ts (to re-export the schemas)
 * and tests.
 */
import { z } from 'zod';
import type { Database } from '../../runtime/store/open.ts';
import { many, type SqlValue } from '../../runtime/store/rows.ts';
import { StoreSlice } from '../../runtime/store/store-slice.ts';
import { iso, prepared } from './statements.ts';
import { encodeStoredEmailId } from './stored-email-id.ts';

/** The changes this build permits (admin-surface "Mailbox-change audit entry"). */
export const MUTATION_KINDS = ['relocate', 'delete', 'set-seen', 'copy', 'set-flagged', 'add-keywords', 'remove-keywords', 'set-keywords'] as const;
export const MutationKind = z.enum(MUTATION_KINDS);
export type MutationKind = z.infer<typeof MutationKind>;

/** Keyset position: `ended_at` (epoch ms) and `id` of the last row already shown. */
export const AuditPosition = z.tuple([z.number().int(), z.number().int().positive()]);

export const MutationAuditRequest = z.strictObject({
  type: z.literal('mail-query.mutation-audit'),
  store: StoreSlice,
  account: z.string().min(1),
  mutation: MutationKind.optional(),
  /** Epoch ms: entries that ended at or after. */
  endedFrom: z.number().int().optional(),
  /** Epoch ms: entries that ended before. */
  endedBefore: z.number().int().optional(),
  after: AuditPosition.optional(),
  pageSize: z.number().int().min(1).max(200),
});
export type MutationAuditRequest = z.infer<typeof MutationAuditRequest>;

const Instant = z.iso.datetime();
const Uid = z.number().int().nonnegative().nullable();

export const MutationAuditEntry = z.strictObject({
  id: z.number().int().positive().describe('The entry, stable and never reused'),
  mutation: MutationKind.describe('The change'),
  storedEmailId: z.string().nullable().describe('The local email the change was made to (its `storedEmailId`, kept after the email is erased); null when none was stored'),
  sourceFolderPath: z.string().nullable().describe('The remote folder path the message was in'),
  targetFolderPath: z.string().nullable().describe('The remote folder path it went to (`relocate`, `copy`); null otherwise'),
  uidValidity: Uid.describe('UIDVALIDITY of the source folder'),
  sourceUid: Uid.describe('UID in the source folder'),
  targetUid: Uid.describe('UID in the target folder, where the server reported one'),
  requester: z.string().describe('Who asked for the change'),
  requestedAt: Instant.describe('When the change was asked for'),
  endedAt: Instant.describe('When it ended; the range filters apply to this'),
  outcome: z.string().describe('How it ended'),
});
export type MutationAuditEntry = z.infer<typeof MutationAuditEntry>;

export const MutationAuditReply = z.strictObject({
  entries: z.array(MutationAuditEntry),
  /** Rows of the window naming a change this build does not know. */
  omittedCount: z.number().int().nonnegative(),
  /** Where the next page starts; null: nothing follows. */
  next: AuditPosition.nullable(),
});
export type MutationAuditReply = z.infer<typeof MutationAuditReply>;

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
  const where: string[] = [];
  const params: SqlValue[] = [];
  const and = (clause: string, ...values: SqlValue[]): void => {
    where.push(clause);
    params.push(...values);
  };
  and('account_id = ?', msg.account);
  if (msg.mutation !== undefined) and('mutation = ?', msg.mutation);
  if (msg.endedFrom !== undefined) and('ended_at >= ?', msg.endedFrom);
  if (msg.endedBefore !== undefined) and('ended_at < ?', msg.endedBefore);
  if (msg.after !== undefined) and('(ended_at, id) < (?, ?)', msg.after[0], msg.after[1]);
  const sql = `SELECT id, mutation, message_id, source_path, target_path, uidvalidity, source_uid, target_uid, requester, requested_at, ended_at, outcome
    FROM mutation_audit WHERE ${where.join(' AND ')} ORDER BY ended_at DESC, id DESC LIMIT ?`;
  // One row past the window says whether another page follows.
  const rows = many<Row>(prepared(db, sql), [...params, msg.pageSize + 1]);
  const window = rows.slice(0, msg.pageSize);
  const shown = window.filter((row) => known.has(row.mutation));
  const last = window.at(-1);
  return {
    entries: shown.map(toEntry),
    omittedCount: window.length - shown.length,
    next: rows.length > msg.pageSize && last !== undefined ? [last.ended_at, last.id] : null,
  };
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
