/**
 * The read-only query pool task (`mail-query`): the four read tools of the
 * MCP surface, the stored source of an attachment link (`attachment.ts`), and
 * the admin surface's audit pages (`mutation-audit.ts`,
 * `answering-audit.ts`), dead letters
 * (`dead-letters.ts`) and outbox reads (`outbox.ts`), and the figures of
 * the store gauges (`store-gauges.ts`), answered from the local copy. Created as a piscina
 * pool by service/app.ts through runtime/pool/pool.ts; the main thread
 * never runs SQL, the pool threads do.
 *
 * Each pool thread opens ONE connection, on its first message, from the
 * store slice the pool was created with (`createPool({ config })`), and
 * marks it `query_only`: this pool never writes, and SQLite now enforces
 * that. A store file is also memory-mapped (`MMAP_BYTES`). Every answer is read inside one read transaction, so a page and its
 * freshness, or a content check and its body, see one snapshot.
 *
 * Privacy: nothing here logs content; refusals are AppErrors with constant
 * messages, and anything else thrown is logged by definePoolTask without
 * the message.
 */
import { definePoolTask, poolConfig } from '../../runtime/pool/task.ts';
import type { Database } from '../../runtime/store/open.ts';
import { StoreSlice } from '../../runtime/store/store-slice.ts';
import { storeLocation } from '../../runtime/store/location.ts';
import { openSlice } from '../../runtime/store/open-slice.ts';
import { answeringAuditPage } from './answering-audit.ts';
import { answerAttachmentSource } from './attachment.ts';
import { deadLetterPage, lookUpJob } from './dead-letters.ts';
import { getContent } from './get-content.ts';
import { listAccounts } from './list-accounts.ts';
import { listEmails } from './list-emails.ts';
import { locateEmail } from './locate-email.ts';
import { mutationAuditPage } from './mutation-audit.ts';
import { ruleHistoryPage } from './rule-history.ts';
import { spamClassificationsPage } from './spam-classifications.ts';
import { lookUpOutgoing, outboxPageOf, outboxSummaryOf, outgoingEmailOf } from './outbox.ts';
import { MailQueryMessage } from './protocol.ts';
import { searchEmails } from './search.ts';
import { storeGauges } from './store-gauges.ts';

const storeSlice = poolConfig('mail-query', StoreSlice);
let connection: Database | null = null;

/** This thread's one connection, opened on first use. */
function threadConnection(): Database {
  connection ??= openReadConnection(storeSlice());
  return connection;
}

/**
 * Bytes of a store file a pool connection reads through a memory map
 * (`mmap_size`, SQLite's ceiling: 2 GiB less 64 KiB), not through copies
 * into its own page cache: the vector rescoring reads thousands of scattered
 * 1.5 KB vectors a search. Measured at 50,000 messages (255,000 vectors,
 * docs/semantic-search.md): 2,000 candidates rescored in 32 against 42 ms
 * p50 (CPU 24 against 31). Only the file is mapped, not its WAL; the pages
 * are the operating system's cache, shared by the pool's threads.
 */
export const MMAP_BYTES = 2_147_418_112;

/** A connection SQLite keeps from writing (`query_only`), its store file mapped. */
export function openReadConnection(slice: StoreSlice): Database {
  const db = openSlice(slice);
  db.pragma('query_only = ON');
  if (storeLocation(slice.database).kind === 'file') db.pragma(`mmap_size = ${MMAP_BYTES}`);
  return db;
}

/** The four read tools' messages and the admin pages, answered in one read transaction. */
export function answer(db: Database, msg: Exclude<MailQueryMessage, { type: 'mail-query.attachment' }>): unknown {
  const read = db.transaction(() => {
    switch (msg.type) {
      case 'mail-query.list-accounts':
        return listAccounts(db, msg.scope);
      case 'mail-query.list-emails':
        return listEmails(db, msg.scope, msg.input);
      case 'mail-query.search':
        return searchEmails(db, msg.scope, msg.input, msg.semantic);
      case 'mail-query.get-content':
        return getContent(db, msg);
      case 'mail-query.mutation-audit':
        return mutationAuditPage(db, msg);
      case 'mail-query.answering-audit':
        return answeringAuditPage(db, msg);
      case 'mail-query.rule-history':
        return ruleHistoryPage(db, msg);
      case 'mail-query.dead-letters':
        return deadLetterPage(db, msg);
      case 'mail-query.job':
        return lookUpJob(db, msg);
      case 'mail-query.locate-email':
        return locateEmail(db, msg);
      case 'mail-query.outbox-summary':
        return outboxSummaryOf(db, msg);
      case 'mail-query.outbox':
        return outboxPageOf(db, msg);
      case 'mail-query.outgoing-email':
        return outgoingEmailOf(db, msg);
      case 'mail-query.outgoing-lookup':
        return lookUpOutgoing(db, msg);
      case 'mail-query.spam-classifications':
        return spamClassificationsPage(db, msg);
      case 'mail-query.store-gauges':
        return storeGauges(db, msg);
    }
  });
  return read.deferred();
}

export default definePoolTask({
  name: 'mail-query',
  messages: MailQueryMessage,
  handle: (msg) => (msg.type === 'mail-query.attachment' ? answerAttachmentSource(threadConnection(), msg) : answer(threadConnection(), msg)),
});
