/**
 * What an MCP tool is, as data: name, title, a short description (agents
 * read it on every `tools/list`), its category and permission (the names the
 * configuration uses: `McpEndpoint:PublishedToolCategories`, a credential's
 * `Permissions`), annotations, the input schema, and what a call does.
 * `defineTool` types the call by the tool's own input schema, as
 * `defineRoute` does for the admin routes, and the schema is the one check
 * of a call's arguments: the handler never sees what it refused.
 *
 * Each category's tools are in `tools/<category>.ts`; `tools.ts` lists them
 * in the order `tools/list` publishes them.
 */
import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod';
import type { AskMailInput, AskMailResult, Availability } from '../../actors/answering/protocol.ts';
import type { PlacedQuery } from '../../actors/embedding/protocol.ts';
import type { ContactsProtocol } from '../../actors/contacts/protocol.ts';
import type { ChangeAsk, RecordChangesReply } from '../../actors/imap-sync/protocol.ts';
import type { EmailLookupProtocol } from '../../actors/mail-query/protocol/email-lookup.ts';
import type { MailReadsProtocol, RepairNeeded } from '../../actors/mail-query/protocol/mail-reads.ts';
import type { QueryScope } from '../../actors/mail-query/protocol/query-scope.ts';
import type { OutboxProtocol } from '../../actors/outbox/protocol.ts';
import type { McpPermissions } from '../../config/permissions.ts';
import type { ToolCategories } from '../../config/schema/mcp-endpoint.ts';
import { AppError } from '../../runtime/errors.ts';
import { describeIssues } from '../../runtime/input-issues.ts';
import type { Askable } from '../../runtime/ref.ts';
import type { PlacementGate } from './placement-gate.ts';

export type ToolCategory = (typeof ToolCategories)[number];
export type McpPermission = (typeof McpPermissions)[number];

/** A tool's structured content (its text is the same JSON). */
export type ToolAnswer = Record<string, unknown>;

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
  /** The surface's gate on placing queries (placement-gate.ts); absent: every search places its query first. */
  placementGate?: PlacementGate;
  /** The answering actor: whether `ask_mail` is offered now, and one run (within the request's deadline). */
  answering: { availability(): Promise<Availability>; ask(input: AskMailInput): Promise<AskMailResult> };
  /** The outbox actor (it records sends and drafts). */
  outbox: Askable<OutboxProtocol>;
  /** The contacts actor (the contact book's writer; it answers the book's reads too). */
  contacts: Askable<ContactsProtocol>;
  deadlineMs: number;
};

type Published = {
  readonly name: string;
  readonly title: string;
  readonly description: string;
  readonly category: ToolCategory;
  readonly permission: McpPermission;
  readonly annotations: ToolAnnotations;
  /** Whether the tool is listed right now (absent: always, within the grant). A call while it is not is the tool's own refusal. */
  offered?(ctx: ToolContext): Promise<boolean>;
};

export type Tool = Published & {
  readonly input: z.ZodType;
  /** Check the arguments with `input` (51001 naming what failed), then run the tool with what the schema gave. */
  call(args: unknown, ctx: ToolContext): Promise<ToolAnswer>;
};

/** A tool whose handler is typed by its own input schema. */
export function defineTool<I extends z.ZodType>(
  definition: Published & { readonly input: I; run(input: z.output<I>, ctx: ToolContext): Promise<ToolAnswer> },
): Tool {
  const { run, ...published } = definition;
  return {
    ...published,
    async call(args, ctx) {
      const parsed = definition.input.safeParse(args);
      if (!parsed.success) throw new AppError('E_TOOL_INVALID_INPUT', { message: `The tool input is invalid: ${describeIssues(parsed.error, 'input')}` });
      return run(parsed.data, ctx);
    },
  };
}
