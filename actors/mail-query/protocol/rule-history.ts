/**
 * The query pool's contract with the admin rule-history route: the message
 * `mail-query.rule-history` (`RuleHistoryRequest` in, `RuleHistoryReply`
 * out). Schemas only; the handler is ../rule-history.ts.
 */
import { z } from 'zod';
import type { ProtocolOf } from '../../../runtime/ref.ts';
import { AuditPosition } from './audit-position.ts';

export const RuleHistoryRequest = z.strictObject({
  type: z.literal('mail-query.rule-history'),
  account: z.string().min(1),
  /** Epoch ms: conclusions written at or after. */
  endedFrom: z.number().int().optional(),
  /** Epoch ms: conclusions written before. */
  endedBefore: z.number().int().optional(),
  after: AuditPosition.optional(),
  pageSize: z.number().int().min(1).max(200),
});
export type RuleHistoryRequest = z.infer<typeof RuleHistoryRequest>;

const Instant = z.iso.datetime();

export const RuleChange = z.strictObject({
  changeId: z.string().describe('The change (its job id, as the dead-letter routes name it)'),
  change: z.string().describe('Its kind, as the mailbox-change audit names it'),
  state: z.string().describe('pending, converging, completed or dead-lettered'),
  outcome: z.string().nullable().describe('How it ended (applied, superseded, gone, refused, failed); null while under way'),
});

export const RuleHistoryEntry = z.strictObject({
  id: z.number().int().positive().describe('The entry, stable and never reused'),
  rule: z.string().describe("The rule's Name"),
  rulePosition: z.number().int().positive().describe('Its place in run order when it concluded'),
  storedEmailId: z.string().describe('The email it judged'),
  source: z.enum(['Arrival', 'Run']).describe('Judged on arrival, or by a rule run'),
  runId: z.number().int().positive().nullable().describe('The rule run; null on arrival'),
  asked: z
    .strictObject({
      moveTo: z.string().optional(),
      seen: z.boolean().optional(),
      flagged: z.boolean().optional(),
      keywords: z.array(z.string()).optional(),
    })
    .describe('What the rule asked: a folder alias to move to, seen, flagged, keywords to add'),
  note: z
    .string()
    .nullable()
    .describe(
      'Why part or all of it was not recorded: no-folder (the alias is bound to no folder now), already-there, not-found (the email was gone), request-conflict; null otherwise',
    ),
  changes: z.array(RuleChange).describe('The changes recorded for it, with their state and outcome now'),
  concludedAt: Instant.describe('When the conclusion was written; the range filters apply to this'),
});
export type RuleHistoryEntry = z.infer<typeof RuleHistoryEntry>;

export const RuleHistoryReply = z.strictObject({
  entries: z.array(RuleHistoryEntry),
  next: AuditPosition.nullable(),
});
export type RuleHistoryReply = z.infer<typeof RuleHistoryReply>;

export type RuleHistoryProtocol = ProtocolOf<z.input<typeof RuleHistoryRequest>, { 'mail-query.rule-history': RuleHistoryReply }>;
