/**
 * The `mailbox` tools (permission `service.mail.read`): list accounts, list,
 * search and read emails. Each asks the read-only query pool with the
 * caller's scope (the main thread never runs SQL); decisions behind the
 * answers: docs/mcp-read-tools.md.
 */
import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import type { PlacedQuery } from '../../../actors/embedding/protocol.ts';
import {
  type EmailContent,
  GetContentReply,
  GetEmailContentInput,
  ListAccountsInput,
  ListAccountsResult,
  ListEmailsInput,
  ListEmailsResult,
  MAX_SEARCH_RESULTS,
  SearchEmailsInput,
  SearchEmailsResult,
} from '../../../actors/mail-query/protocol/mail-reads.ts';
import { decodeStoredEmailId } from '../../../actors/mail-query/protocol/stored-email-id.ts';
import { defineTool, type Tool, type ToolContext } from '../tool.ts';

/** What the pool is asked with when no query was placed. */
const NOT_PLACED: PlacedQuery = { semanticSearch: 'inactive' };

const readOnly: ToolAnnotations = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };

export const mailboxTools: readonly Tool[] = [
  defineTool({
    name: 'list_accounts',
    title: 'List mail accounts',
    description: 'Mail accounts available here, with folder aliases and when each was last synchronized.',
    category: 'mailbox',
    permission: 'service.mail.read',
    annotations: { title: 'List mail accounts', ...readOnly },
    input: ListAccountsInput,
    run: (input, ctx) =>
      ctx.queryPool.ask({ type: 'mail-query.list-accounts', scope: ctx.scope, input }, { reply: ListAccountsResult, deadlineMs: ctx.deadlineMs }),
  }),
  defineTool({
    name: 'list_emails',
    title: 'List emails',
    description: 'Emails newest first (or oldest first), filtered; pages with nextCursor. Answers from the local mirror.',
    category: 'mailbox',
    permission: 'service.mail.read',
    annotations: { title: 'List emails', ...readOnly },
    input: ListEmailsInput,
    run: (input, ctx) =>
      ctx.queryPool.ask({ type: 'mail-query.list-emails', scope: ctx.scope, input }, { reply: ListEmailsResult, deadlineMs: ctx.deadlineMs }),
  }),
  defineTool({
    name: 'search_emails',
    title: 'Search emails',
    description:
      'Ranked search of the local mirror: full text, plus meaning when semanticSearch is available; same filters as list_emails; at most 50 results.',
    category: 'mailbox',
    permission: 'service.mail.read',
    annotations: { title: 'Search emails', ...readOnly },
    input: SearchEmailsInput,
    async run(input, ctx) {
      // Only a placed query travels; otherwise the pool answers lexically and reads from its own
      // snapshot whether a generation serves (degraded) or none does (inactive).
      const search = (placed: PlacedQuery) =>
        ctx.queryPool.ask(
          {
            type: 'mail-query.search',
            scope: ctx.scope,
            input,
            ...(placed.semanticSearch === 'available' ? { semantic: { generation: placed.generation, vector: placed.vector } } : {}),
          },
          { reply: SearchEmailsResult, deadlineMs: ctx.deadlineMs },
        );
      // A limit the pool refuses (51003) spends no provider call on placing the query.
      if (input.resultLimit > MAX_SEARCH_RESULTS) return search(NOT_PLACED);
      // Nothing served at the last search: the pool first, the query placed only if a generation serves now (placement-gate.ts).
      const gate = ctx.placementGate;
      if (gate?.nothingServes()) {
        const lexical = await search(NOT_PLACED);
        gate.observe(null, lexical.semanticSearch);
        if (lexical.semanticSearch === 'inactive') return lexical;
      }
      const placed = await ctx.placeQuery(input.queryText);
      const answer = await search(placed);
      gate?.observe(placed.semanticSearch, answer.semanticSearch);
      return answer;
    },
  }),
  defineTool({
    name: 'get_email_content',
    title: 'Read emails',
    description: 'Headers, readable body and attachments of up to 10 emails by storedEmailId, or of one thread. Long bodies are cut; read on with bodyOffset.',
    category: 'mailbox',
    permission: 'service.mail.read',
    annotations: { title: 'Read emails', ...readOnly },
    input: GetEmailContentInput,
    async run(input, ctx) {
      const { repairs, ...result } = await ctx.queryPool.ask(
        { type: 'mail-query.get-content', scope: ctx.scope, input, bodyCharacterBudget: ctx.bodyCharacterBudget },
        { reply: GetContentReply, deadlineMs: ctx.deadlineMs },
      );
      if (repairs.length > 0) await ctx.recordRepairs(repairs);
      return { ...result, emails: result.emails.map((entry) => ('error' in entry ? entry : withLinks(entry, ctx))) };
    },
  }),
];

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
