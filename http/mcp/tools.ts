/**
 * The tools of the MCP surface as data: name, category, permission,
 * annotations, a short description (agents read it on every `tools/list`),
 * the input schema, and what a call does. `tools/list` publishes exactly
 * this table narrowed to the deployment and the caller's grant; a change to
 * it changes `test/http/mcp/tools.golden.json`, which is how a change to the
 * published surface stays deliberate.
 *
 * The read tools validate here (zod), then ask the read-only query pool:
 * the main thread never runs SQL.
 */
import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod';
import type { EmailLookupProtocol } from '../../actors/mail-query/protocol/email-lookup.ts';
import {
  GetContentReply,
  GetEmailContentInput,
  ListAccountsInput,
  ListAccountsResult,
  ListEmailsInput,
  ListEmailsResult,
  MAX_SEARCH_RESULTS,
  SearchEmailsInput,
  SearchEmailsResult,
  type EmailContent,
  type MailReadsProtocol,
  type RepairNeeded,
} from '../../actors/mail-query/protocol/mail-reads.ts';
import type { QueryScope } from '../../actors/mail-query/protocol/query-scope.ts';
import { decodeStoredEmailId } from '../../actors/mail-query/protocol/stored-email-id.ts';
import type { PlacedQuery } from '../../actors/embedding/protocol.ts';
import type { AskMailInput, AskMailResult, Availability } from '../../actors/answering/protocol.ts';
import { askTools } from './ask-tool.ts';
import type { ChangeAsk, RecordChangesReply } from '../../actors/imap-sync/protocol.ts';
import type { Askable } from '../../runtime/ref.ts';
import { flagTools } from './flag-tool.ts';
import { draftTools, sendTools } from './send-tools.ts';
import type { OutboxProtocol } from '../../actors/outbox/protocol.ts';

export type ToolCategory = 'mailbox' | 'flags' | 'sending' | 'drafts' | 'answering' | 'contacts';

/** What a tool call may use; built per request by the listener. */
export type ToolContext = {
  scope: QueryScope;
  /** The query pool: the reads and lookups the tools ask of it, each with the request's deadline. */
  queryPool: Askable<MailReadsProtocol & EmailLookupProtocol>;
  bodyCharacterBudget: number;
  /** Record durable repair requests (the account's sync actor writes them). */
  recordRepairs(repairs: readonly RepairNeeded[]): Promise<void>;
  /** The download address of an attachment, or null when this deployment issues no links. */
  attachmentLink(ref: { messageId: number; index: number; accountId: string }): string | null;
  /**
   * Record changes of one email in its account's change journal (the account's sync actor writes
   * them); the requester is the caller's name, for the audit.
   */
  recordChanges(accountId: string, request: { messageId: number; requestId: string | null; changes: ChangeAsk[] }): Promise<RecordChangesReply>;
  /** Who calls: the name audits and the outbox record, and the grant the outbox checks again. */
  caller: { identity: string; permissions: readonly string[] };
  /**
   * The query placed by the serving generation's provider (the embedding
   * actor). Never rejects: a failed ask answers `inactive` or `degraded`
   * (mcp-listener.ts), since search must not fail for its semantic half.
   */
  placeQuery(text: string): Promise<PlacedQuery>;
  /** The answering actor: whether `ask_mail` is offered now, and one run (within the request's deadline). */
  answering: { availability(): Promise<Availability>; ask(input: AskMailInput): Promise<AskMailResult> };
  /** The outbox actor (it records sends and drafts). */
  outbox: Askable<OutboxProtocol>;
  deadlineMs: number;
};

export type Tool = {
  name: string;
  title: string;
  description: string;
  category: ToolCategory;
  permission: string;
  annotations: ToolAnnotations;
  input: z.ZodType;
  /** Whether the tool is listed right now (absent: always, within the grant). A call while it is not is the tool's own refusal. */
  offered?(ctx: ToolContext): Promise<boolean>;
  run(input: unknown, ctx: ToolContext): Promise<Record<string, unknown>>;
};

const readOnly: ToolAnnotations = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };

export const readTools: readonly Tool[] = [
  {
    name: 'list_accounts',
    title: 'List mail accounts',
    description: 'Mail accounts available here, with folder aliases and when each was last synchronized.',
    category: 'mailbox',
    permission: 'service.mail.read',
    annotations: { title: 'List mail accounts', ...readOnly },
    input: ListAccountsInput,
    run: (input, ctx) =>
      ctx.queryPool.ask(
        { type: 'mail-query.list-accounts', scope: ctx.scope, input: input as ListAccountsInput },
        { reply: ListAccountsResult, deadlineMs: ctx.deadlineMs },
      ),
  },
  {
    name: 'list_emails',
    title: 'List emails',
    description: 'Emails newest first (or oldest first), filtered; pages with nextCursor. Answers from the local mirror.',
    category: 'mailbox',
    permission: 'service.mail.read',
    annotations: { title: 'List emails', ...readOnly },
    input: ListEmailsInput,
    run: (input, ctx) =>
      ctx.queryPool.ask(
        { type: 'mail-query.list-emails', scope: ctx.scope, input: input as ListEmailsInput },
        { reply: ListEmailsResult, deadlineMs: ctx.deadlineMs },
      ),
  },
  {
    name: 'search_emails',
    title: 'Search emails',
    description:
      'Ranked search of the local mirror: full text, plus meaning when semanticSearch is available; same filters as list_emails; at most 50 results.',
    category: 'mailbox',
    permission: 'service.mail.read',
    annotations: { title: 'Search emails', ...readOnly },
    input: SearchEmailsInput,
    async run(raw, ctx) {
      const input = raw as SearchEmailsInput;
      const { queryText, resultLimit } = input;
      // A limit the pool refuses (51003) spends no provider call on placing the query.
      const placed: PlacedQuery = resultLimit > MAX_SEARCH_RESULTS ? { semanticSearch: 'inactive' } : await ctx.placeQuery(queryText);
      // Only a placed query travels; otherwise the pool answers lexically and reads from its own
      // snapshot whether a generation serves (degraded) or none does (inactive).
      const semantic = placed.semanticSearch === 'available' ? { semantic: { generation: placed.generation, vector: placed.vector } } : {};
      return ctx.queryPool.ask({ type: 'mail-query.search', scope: ctx.scope, input, ...semantic }, { reply: SearchEmailsResult, deadlineMs: ctx.deadlineMs });
    },
  },
  {
    name: 'get_email_content',
    title: 'Read emails',
    description: 'Headers, readable body and attachments of up to 10 emails by storedEmailId, or of one thread. Long bodies are cut; read on with bodyOffset.',
    category: 'mailbox',
    permission: 'service.mail.read',
    annotations: { title: 'Read emails', ...readOnly },
    input: GetEmailContentInput,
    async run(input, ctx) {
      const { repairs, ...result } = await ctx.queryPool.ask(
        { type: 'mail-query.get-content', scope: ctx.scope, input: input as GetEmailContentInput, bodyCharacterBudget: ctx.bodyCharacterBudget },
        { reply: GetContentReply, deadlineMs: ctx.deadlineMs },
      );
      if (repairs.length > 0) await ctx.recordRepairs(repairs);
      return { ...result, emails: result.emails.map((entry) => ('error' in entry ? entry : withLinks(entry, ctx))) };
    },
  },
];

/** Every tool this build offers, in the order `tools/list` publishes them (narrowed per deployment and grant). */
export const allTools: readonly Tool[] = [...readTools, ...askTools, ...flagTools, ...sendTools, ...draftTools];

/** Each attachment gains `downloadUrl` where this deployment issues links. */
function withLinks(email: EmailContent, ctx: ToolContext): EmailContent {
  if (!email.attachments) return email;
  const messageId = decodeStoredEmailId(email.storedEmailId);
  if (messageId === null) return email;
  return {
    ...email,
    attachments: email.attachments.map((a) => {
      const url = ctx.attachmentLink({ messageId, index: a.index, accountId: email.accountId });
      return url === null ? a : { ...a, downloadUrl: url };
    }),
  };
}
