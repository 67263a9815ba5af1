/**
 * The read-only query pool (`mail-query`) as the composition root and the
 * pool task see it: the task module, the configuration it is created with
 * (the store slice: each pool thread opens one read-only connection from it),
 * and every message it takes. Stateless: runs on a piscina pool behind `ask`.
 *
 * Its consumers do not import this file: each imports its own contract from
 * `protocol/` and nothing else of this folder —
 * - `mail-reads.ts`: the MCP read tools and the answering actor's retrieval;
 * - `email-lookup.ts`: the MCP write tools (which account holds an email);
 * - `attachment-source.ts`: the attachment download route;
 * - `mutation-audit.ts`, `answering-audit.ts`, `rule-history.ts`, `dead-letters.ts`,
 *   `outbox-reads.ts`, `spam-classifications.ts`: the admin routes;
 * - `store-gauges.ts`: the metrics read from the store at each collection;
 * - `stored-email-id.ts`, `query-scope.ts`: shapes those share.
 * Contracts are leaves: they load zod and shape-only store modules, never a
 * store writer, a configuration schema or another actor's protocol.
 */
import { z } from 'zod';
import { moduleUrl } from '../../runtime/module-url.ts';
import type { PoolEntry } from '../../runtime/pool/pool.ts';
import type { StoreSlice } from '../../runtime/store/store-slice.ts';
import { type AnsweringAuditProtocol, AnsweringAuditRequest } from './protocol/answering-audit.ts';
import { type AttachmentSourceProtocol, AttachmentSourceRequest } from './protocol/attachment-source.ts';
import { type DeadLettersProtocol, DeadLettersRequest, JobLookupRequest } from './protocol/dead-letters.ts';
import { type EmailLookupProtocol, LocateEmailRequest } from './protocol/email-lookup.ts';
import { GetContentRequest, ListAccountsRequest, ListEmailsRequest, type MailReadsProtocol, SearchRequest } from './protocol/mail-reads.ts';
import { type MutationAuditProtocol, MutationAuditRequest } from './protocol/mutation-audit.ts';
import { OutboxPageRequest, type OutboxReadsProtocol, OutboxSummaryRequest, OutgoingEmailRequest, OutgoingLookupRequest } from './protocol/outbox-reads.ts';
import { type RuleHistoryProtocol, RuleHistoryRequest } from './protocol/rule-history.ts';
import { type SpamClassificationsProtocol, SpamClassificationsRequest } from './protocol/spam-classifications.ts';
import { type StoreGaugesProtocol, StoreGaugesRequest } from './protocol/store-gauges.ts';

/** Everything the pool answers: the union of its consumers' contracts. */
export type MailQueryProtocol = MailReadsProtocol &
  EmailLookupProtocol &
  AttachmentSourceProtocol &
  MutationAuditProtocol &
  AnsweringAuditProtocol &
  DeadLettersProtocol &
  OutboxReadsProtocol &
  StoreGaugesProtocol &
  RuleHistoryProtocol &
  SpamClassificationsProtocol;

/** The task module of the query pool, created with the store slice. Named here, as a URL, so that the composition root starts it without importing it. */
export const MAIL_QUERY_TASK: PoolEntry<MailQueryProtocol, StoreSlice> = moduleUrl('./task.ts', import.meta.url);

/** Every message the pool takes, as its task parses them. */
export const MailQueryMessage = z.discriminatedUnion('type', [
  ListAccountsRequest,
  ListEmailsRequest,
  SearchRequest,
  GetContentRequest,
  LocateEmailRequest,
  AttachmentSourceRequest,
  MutationAuditRequest,
  AnsweringAuditRequest,
  DeadLettersRequest,
  JobLookupRequest,
  OutboxSummaryRequest,
  OutboxPageRequest,
  OutgoingEmailRequest,
  OutgoingLookupRequest,
  SpamClassificationsRequest,
  StoreGaugesRequest,
  RuleHistoryRequest,
]);
export type MailQueryMessage = z.infer<typeof MailQueryMessage>;
