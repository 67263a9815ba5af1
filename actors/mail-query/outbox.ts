/**
 * The outbox on the read-only query pool, for the admin routes under
 * `/api/admin/outbox`: one count per stage, a page of sends newest first by
 * id (keyset-paginated on the id), one send with its recipients, and the
 * lookup that tells the cancellation and requeue routes whether a send of a
 * configured account exists before the outbox actor is asked.
 *
 * Only sends of a configured account are counted, shown or found (the store
 * reads in runtime/store/outbox/listing.ts take the accounts): a send of an
 * account taken out of the configuration reads as unknown.
 *
 * A send is named `o<row id>` on the admin surface (`outgoingIdOf`).
 *
 * Pool messages `mail-query.outbox-summary`, `mail-query.outbox`,
 * `mail-query.outgoing-email`, `mail-query.outgoing-lookup` (their
 * contract: protocol/outbox-reads.ts). Reads only; logs nothing.
 *
 * Importable by the query pool task and tests.
 */
import type { Database } from '../../runtime/store/open.ts';
import { outboxPage, outboxRow, outboxSummary, outgoingDetail, type OutboxRow, type OutgoingDetail } from '../../runtime/store/outbox/listing.ts';
import { outgoingIdOf } from '../../runtime/store/outbox/vocabulary.ts';
import type {
  OutboxEntry,
  OutboxPageReply,
  OutboxPageRequest,
  OutboxSummaryReply,
  OutboxSummaryRequest,
  OutgoingEmailDetail,
  OutgoingEmailReply,
  OutgoingEmailRequest,
  OutgoingLookupReply,
  OutgoingLookupRequest,
} from './protocol/outbox-reads.ts';

export function outboxSummaryOf(db: Database, msg: OutboxSummaryRequest): OutboxSummaryReply {
  return { stageCounts: outboxSummary(db, msg.accounts) };
}

export function outboxPageOf(db: Database, msg: OutboxPageRequest): OutboxPageReply {
  const page = outboxPage(db, {
    accounts: msg.accounts,
    account: msg.account ?? null,
    stage: msg.stage ?? null,
    after: msg.after ?? null,
    pageSize: msg.pageSize,
  });
  return { outgoingEmails: page.rows.map(entryOf), next: page.next };
}

export function outgoingEmailOf(db: Database, msg: OutgoingEmailRequest): OutgoingEmailReply {
  const detail = outgoingDetail(db, msg.outgoing, msg.accounts);
  return { outgoingEmail: detail === null ? null : detailOf(detail) };
}

export function lookUpOutgoing(db: Database, msg: OutgoingLookupRequest): OutgoingLookupReply {
  return { account: outboxRow(db, msg.outgoing, msg.accounts)?.accountId ?? null };
}

const instant = (ms: number): string => new Date(ms).toISOString();

function entryOf(row: OutboxRow): OutboxEntry {
  return {
    outgoingEmail: outgoingIdOf(row.id),
    recordedAt: instant(row.recordedAt),
    account: row.accountId,
    stage: row.stage,
    attemptCount: row.attemptCount,
    lastFailure: row.lastFailure,
    dueAt: row.dueAt === null ? null : instant(row.dueAt),
  };
}

function detailOf(detail: OutgoingDetail): OutgoingEmailDetail {
  return {
    ...entryOf(detail),
    recipients: detail.recipients.map((r) => ({
      address: r.address,
      header: r.header,
      state: r.state,
      replyCode: r.replyCode,
      repliedAt: r.repliedAt === null ? null : instant(r.repliedAt),
    })),
  };
}
