/**
 * The query pool's contract with the read tools of the MCP surface
 * (`list_accounts`, `list_emails`, `search_emails`, `get_email_content`)
 * and the answering actor's retrieval: the tools' inputs, the pool messages
 * that carry them with the caller's scope, and the shapes of the answers
 * (what a tool returns as its structured content). Decisions behind the
 * shapes: docs/mcp-read-tools.md. Schemas only; the handlers are beside
 * this folder (list-accounts.ts, list-emails.ts, search.ts, get-content.ts).
 *
 * Answer members (token-frugal, one rule everywhere): a member of an email
 * (summary, content entry, match) whose value is unknown or empty — null, an
 * empty list — is left out, never sent as null or []. Control members the
 * agent branches on (`nextCursor`, `synchronizedAt`, `wasSynchronized`) are
 * always present; `null` there means "none".
 */
import { z } from 'zod';
import type { ProtocolOf } from '../../../runtime/ref.ts';
import { QueryScope } from './query-scope.ts';
import { StoredEmailId } from './stored-email-id.ts';

/** Ranked results `search_emails` may be asked for (spec: at most 50; more is 51003, not a smaller window). */
export const MAX_SEARCH_RESULTS = 50;
/** Emails one `get_email_content` call reads, by ids or through a thread (spec: up to ten). */
export const MAX_CONTENT_EMAILS = 10;

// ---------------------------------------------------------------- tool inputs

// An IMAP atom (RFC 3501): what a keyword can be. Keeps keyword matching exact.
const keywordAtom = /^[^\s"(){%*\\\]\u0000-\u001f\u007f]+$/;
// `name@domain`, or `@domain` for a whole domain.
const addressOrDomain = /^[^\s@]*@[^\s@]+$/;

const Instant = z.iso.datetime({ offset: true });

const filterShape = {
  accounts: z.array(z.string().min(1).max(200)).min(1).max(50).optional().describe('Account ids; default all'),
  folders: z.array(z.string().min(1).max(200)).min(1).max(50).optional().describe('Folder aliases; default all'),
  senderAddress: z.string().max(320).regex(addressOrDomain).optional().describe('From address, or @domain'),
  recipientAddress: z.string().max(320).regex(addressOrDomain).optional().describe('To/Cc address, or @domain'),
  subjectFragment: z.string().min(1).max(200).optional().describe('Subject contains (case-insensitive)'),
  receivedOnOrAfter: Instant.optional().describe('ISO-8601 instant, inclusive'),
  receivedBefore: Instant.optional().describe('ISO-8601 instant, exclusive'),
  isSeen: z.boolean().optional().describe('Read or unread'),
  isFlagged: z.boolean().optional().describe('Flagged or not'),
  keyword: z.string().min(1).max(100).regex(keywordAtom).optional().describe('Has this IMAP keyword'),
  hasAttachments: z.boolean().optional().describe('Has non-inline attachments'),
};

export const ListAccountsInput = z.strictObject({});
export type ListAccountsInput = z.infer<typeof ListAccountsInput>;

export const ListEmailsInput = z.strictObject({
  ...filterShape,
  direction: z.enum(['newestFirst', 'oldestFirst']).default('newestFirst').describe('By received time'),
  pageSize: z.number().int().min(1).max(100).default(25).describe('1-100'),
  cursor: z.string().min(1).max(1000).optional().describe('nextCursor of the previous page; keep the same filters'),
});
export type ListEmailsInput = z.infer<typeof ListEmailsInput>;

export const SearchEmailsInput = z.strictObject({
  queryText: z.string().min(1).max(500).describe('Words (all must match), "exact phrase", prefix*, a OR b, -excluded'),
  ...filterShape,
  // Any positive whole number passes the schema: above 50 is the search's own
  // refusal (51003, "result limit"), not an invalid input (51001).
  resultLimit: z.number().int().positive().default(20).describe('1-50'),
});
export type SearchEmailsInput = z.infer<typeof SearchEmailsInput>;

export const GetEmailContentInput = z
  .strictObject({
    storedEmailIds: z
      .array(StoredEmailId)
      .min(1)
      .max(MAX_CONTENT_EMAILS)
      .refine((ids) => new Set(ids).size === ids.length, 'storedEmailIds must not repeat')
      .optional()
      .describe('1-10 ids; or give threadId'),
    threadId: z.string().min(1).max(200).optional().describe('A thread: its newest 10 emails, oldest first'),
    bodyOffset: z.number().int().nonnegative().optional().describe('nextBodyOffset, to read on; one storedEmailId only'),
  })
  .refine((input) => (input.storedEmailIds === undefined) !== (input.threadId === undefined), 'give exactly one of storedEmailIds or threadId')
  .refine((input) => input.bodyOffset === undefined || input.storedEmailIds?.length === 1, 'bodyOffset goes with exactly one storedEmailId');
export type GetEmailContentInput = z.infer<typeof GetEmailContentInput>;

// -------------------------------------------------------------- pool messages

// Each carries the caller's scope: the pool checks every read against it.
export const ListAccountsRequest = z.strictObject({ type: z.literal('mail-query.list-accounts'), scope: QueryScope, input: ListAccountsInput });
export const ListEmailsRequest = z.strictObject({ type: z.literal('mail-query.list-emails'), scope: QueryScope, input: ListEmailsInput });
/**
 * The query placed by the serving generation's provider (the embedding
 * actor's `PlacedQuery` when `available`): internal, never part of the
 * agent's input. With it the search ranks both ways (hybrid); without it the
 * search is lexical.
 */
export const SemanticQuery = z.strictObject({
  generation: z.number().int().positive(),
  vector: z.custom<Float32Array>((v) => v instanceof Float32Array, { error: 'a Float32Array' }),
});
export type SemanticQuery = z.infer<typeof SemanticQuery>;
export const SearchRequest = z.strictObject({
  type: z.literal('mail-query.search'),
  scope: QueryScope,
  input: SearchEmailsInput,
  semantic: SemanticQuery.optional(),
});
export const GetContentRequest = z.strictObject({
  type: z.literal('mail-query.get-content'),
  scope: QueryScope,
  input: GetEmailContentInput,
  /** Characters of body text each email's entry carries at most, from `bodyOffset`. */
  bodyCharacterBudget: z.number().int().min(1).max(10_000_000),
});
export type ListAccountsRequest = z.infer<typeof ListAccountsRequest>;
export type ListEmailsRequest = z.infer<typeof ListEmailsRequest>;
export type SearchRequest = z.infer<typeof SearchRequest>;
export type GetContentRequest = z.infer<typeof GetContentRequest>;

// -------------------------------------------------------------------- answers

const InstantOut = z.iso.datetime();
const Count = z.number().int().nonnegative();

export const FolderFreshness = z.strictObject({
  accountId: z.string(),
  folderAlias: z.string(),
  /** The folder holds a mirror: a synchronization pass completed, or mail was stored (a first catch-up under way). */
  wasSynchronized: z.boolean(),
  /** When the latest retained pass that caught the folder up with the server ended; null if none. */
  synchronizedAt: InstantOut.nullable(),
  /** Mirrored emails not parsed and indexed yet: no tool lists or finds them until they are. Omitted when none. */
  notYetIndexed: z.number().int().positive().optional(),
});
export type FolderFreshness = z.infer<typeof FolderFreshness>;

export const ListAccountsResult = z.strictObject({
  accounts: z.array(
    z.strictObject({
      accountId: z.string(),
      folders: z.array(
        z.strictObject({
          alias: z.string(),
          wasSynchronized: z.boolean(),
          synchronizedAt: InstantOut.nullable(),
          notYetIndexed: z.number().int().positive().optional(),
        }),
      ),
    }),
  ),
});
export type ListAccountsResult = z.infer<typeof ListAccountsResult>;

export const EmailSummary = z.strictObject({
  storedEmailId: z.string(),
  accountId: z.string(),
  folderAlias: z.string(),
  threadId: z.string().optional(),
  subject: z.string().optional(),
  senderAddress: z.string().optional(),
  senderDisplayName: z.string().optional(),
  /** In a summary at most 20; `toAddressCount` then says how many there are. */
  toAddresses: z.array(z.string()).optional(),
  toAddressCount: Count.optional(),
  sentAt: InstantOut.optional(),
  /** The server's internal date. */
  receivedAt: InstantOut.optional(),
  sizeBytes: Count.optional(),
  /** Non-inline attachments; absent while the message is not parsed (oversized, unreadable). */
  attachmentCount: Count.optional(),
  /** Remote system flags, e.g. `\Seen`, `\Flagged`: as the server holds them, or as changes not yet confirmed ask for them (`flagChangesPending`). */
  flags: z.array(z.string()).optional(),
  keywords: z.array(z.string()).optional(),
  /** Present (true) while changes asked with set_mail_flags are not yet confirmed by the server: flags and keywords show the requested state. */
  flagChangesPending: z.literal(true).optional(),
  /** Present only when the content is not held: too large to mirror, or not parseable. */
  contentState: z.enum(['oversized', 'unreadable']).optional(),
});
export type EmailSummary = z.infer<typeof EmailSummary>;

export const ListEmailsResult = z.strictObject({
  emails: z.array(EmailSummary),
  nextCursor: z.string().nullable(),
  folderFreshness: z.array(FolderFreshness),
});
export type ListEmailsResult = z.infer<typeof ListEmailsResult>;

export const SearchMatch = EmailSummary.extend({
  /** 1 = best. */
  rank: z.number().int().positive(),
  /** Short excerpts with matched terms in `**`; absent when only subject or addresses matched. */
  snippets: z.array(z.string()).optional(),
});
export type SearchMatch = z.infer<typeof SearchMatch>;

export const SearchEmailsResult = z.strictObject({
  matches: z.array(SearchMatch),
  folderFreshness: z.array(FolderFreshness),
  retrievalMode: z.enum(['hybrid', 'lexical']),
  semanticSearch: z.enum(['inactive', 'degraded', 'available']),
  /** Ours: of the searched folders' emails that have text, how many the answering generation has embedded; absent when semantic search is inactive. */
  semanticCoverage: z.strictObject({ embeddedEmailCount: Count, emailCount: Count }).optional(),
});
export type SearchEmailsResult = z.infer<typeof SearchEmailsResult>;

export const EmailBody = z.strictObject({
  text: z.string(),
  totalCharacters: Count,
  truncatedBy: z.literal('characterBudget').optional(),
  /** Pass as `bodyOffset` to read on. */
  nextBodyOffset: Count.optional(),
});
export type EmailBody = z.infer<typeof EmailBody>;

export const EmailAttachment = z.strictObject({
  /** Position in the email's attachment list; what an attachment download names. */
  index: Count,
  filename: z.string().optional(),
  contentType: z.string(),
  sizeBytes: Count,
  inline: z.boolean(),
  /** Added by the MCP layer where this deployment issues attachment links; never by the pool. */
  downloadUrl: z.string().optional(),
});

export const EmailContent = EmailSummary.extend({
  ccAddresses: z.array(z.string()).optional(),
  /** The Message-ID header. */
  messageId: z.string().optional(),
  inReplyTo: z.string().optional(),
  references: z.array(z.string()).optional(),
  /** Absent when the content is not held (`contentState`). */
  body: EmailBody.optional(),
  attachments: z.array(EmailAttachment).optional(),
});
export type EmailContent = z.infer<typeof EmailContent>;

/** An email of the request that could not be served: 53001 (no such email here) or 55001 (content missing or damaged). */
export const EmailContentError = z.strictObject({
  storedEmailId: z.string(),
  error: z.strictObject({ code: z.number().int(), message: z.string() }),
});
export type EmailContentError = z.infer<typeof EmailContentError>;

export const GetEmailContentResult = z.strictObject({
  emails: z.array(z.union([EmailContent, EmailContentError])),
  /** Thread requests only: emails of the thread in scope; more than 10 means only the newest 10 are here. */
  threadMessageCount: Count.optional(),
});
export type GetEmailContentResult = z.infer<typeof GetEmailContentResult>;

/** Content found missing or damaged: the caller has the sync actor record a durable repair request for each. */
export const RepairNeeded = z.strictObject({
  messageId: z.number().int().positive(),
  accountId: z.string(),
  reason: z.enum(['missing', 'damaged']),
});
export type RepairNeeded = z.infer<typeof RepairNeeded>;

/**
 * What the pool answers to `mail-query.get-content`: the tool's result plus
 * `repairs`, which is for the MCP layer only (it carries local row ids):
 * drop it before returning the result to the agent.
 */
export const GetContentReply = GetEmailContentResult.extend({ repairs: z.array(RepairNeeded) });
export type GetContentReply = z.infer<typeof GetContentReply>;

export type MailReadsProtocol = ProtocolOf<
  z.input<typeof ListAccountsRequest> | z.input<typeof ListEmailsRequest> | z.input<typeof SearchRequest> | z.input<typeof GetContentRequest>,
  {
    'mail-query.list-accounts': ListAccountsResult;
    'mail-query.list-emails': ListEmailsResult;
    'mail-query.search': SearchEmailsResult;
    'mail-query.get-content': GetContentReply;
  }
>;
