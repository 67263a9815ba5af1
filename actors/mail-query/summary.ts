/**
 * One stored email as agents see it in a listing or a search match: the
 * `messages` columns read and their mapping to `EmailSummary`, following the
 * omission rule of `protocol/mail-reads.ts` (unknown or empty members are
 * left out).
 *
 * Pure apart from the column list. Importable by modules of
 * `actors/mail-query/` only.
 */
import { encodeStoredEmailId } from './protocol/stored-email-id.ts';
import type { EmailSummary } from './protocol/mail-reads.ts';
import { iso } from './statements.ts';

/** Addresses a summary lists at most; a content entry lists them all. */
export const SUMMARY_ADDRESSES = 20;

/** Flags and keywords as changes not yet confirmed ask for them, else as the server holds them (runtime/store/mailbox/changes.ts). */
export const effectiveFlags = 'coalesce(m.requested_flags, m.flags)';
export const effectiveKeywords = 'coalesce(m.requested_keywords, m.keywords)';

export const summaryColumns = `m.id, m.account_id, m.binding_id, m.state, m.internal_date, m.size, ${effectiveFlags} AS flags, ${effectiveKeywords} AS keywords,
  m.requested_flags IS NOT NULL AS flag_changes_pending, m.thread_id, m.from_json, m.to_json, m.subject, m.sent_at, m.attachments_json`;

export type SummaryRow = {
  id: number;
  account_id: string;
  binding_id: number;
  state: 'stored' | 'oversized' | 'unreadable';
  internal_date: number | null;
  size: number | null;
  flags: string;
  keywords: string;
  flag_changes_pending: number;
  thread_id: string | null;
  from_json: string | null;
  to_json: string | null;
  subject: string | null;
  sent_at: number | null;
  attachments_json: string | null;
};

export type StoredAddress = { name: string | null; address: string };
export type StoredAttachment = { filename: string | null; contentType: string; size: number; inline: boolean };

export function summaryOf(row: SummaryRow, folderAlias: string, addressLimit: number = SUMMARY_ADDRESSES): EmailSummary {
  const from = addressesOf(row.from_json)[0];
  const to = addressesOf(row.to_json).map((a) => a.address);
  const flags = listOf(row.flags);
  const keywords = listOf(row.keywords);
  const attachments = row.attachments_json === null ? null : (JSON.parse(row.attachments_json) as StoredAttachment[]);
  return {
    storedEmailId: encodeStoredEmailId(row.id),
    accountId: row.account_id,
    folderAlias,
    ...(row.thread_id !== null ? { threadId: row.thread_id } : {}),
    ...(row.subject !== null && row.subject !== '' ? { subject: row.subject } : {}),
    ...(from !== undefined && from.address !== '' ? { senderAddress: from.address } : {}),
    ...(from?.name ? { senderDisplayName: from.name } : {}),
    ...(to.length > 0 ? { toAddresses: to.slice(0, addressLimit) } : {}),
    ...(to.length > addressLimit ? { toAddressCount: to.length } : {}),
    ...(row.sent_at !== null ? { sentAt: iso(row.sent_at) } : {}),
    ...(row.internal_date !== null ? { receivedAt: iso(row.internal_date) } : {}),
    ...(row.size !== null ? { sizeBytes: row.size } : {}),
    ...(attachments !== null ? { attachmentCount: attachments.filter((a) => !a.inline).length } : {}),
    ...(flags.length > 0 ? { flags } : {}),
    ...(keywords.length > 0 ? { keywords } : {}),
    ...(row.flag_changes_pending === 1 ? { flagChangesPending: true as const } : {}),
    ...(row.state !== 'stored' ? { contentState: row.state } : {}),
  };
}

export function addressesOf(json: string | null): StoredAddress[] {
  return json === null ? [] : (JSON.parse(json) as StoredAddress[]);
}

function listOf(json: string): string[] {
  return JSON.parse(json) as string[];
}
