/**
 * The query pool's contract with the admin spam classifications route: the
 * message `mail-query.spam-classifications` (`SpamClassificationsRequest`
 * in, `SpamClassificationsReply` out). Schemas only; the handler is
 * ../spam-classifications.ts.
 */
import { z } from 'zod';
import type { ProtocolOf } from '../../../runtime/ref.ts';
import { AuditPosition } from './audit-position.ts';

export const SpamClassificationsRequest = z.strictObject({
  type: z.literal('mail-query.spam-classifications'),
  account: z.string().min(1),
  /** Epoch ms: verdicts recorded at or after. */
  endedFrom: z.number().int().optional(),
  /** Epoch ms: verdicts recorded before. */
  endedBefore: z.number().int().optional(),
  after: AuditPosition.optional(),
  pageSize: z.number().int().min(1).max(200),
});
export type SpamClassificationsRequest = z.infer<typeof SpamClassificationsRequest>;

const Instant = z.iso.datetime();

export const SpamChange = z.strictObject({
  changeId: z.string().describe('The change (its job id `j<n>`, as the dead-letter routes and the mutation audit name it)'),
  change: z.string().describe('What it asks: `add-keywords` or `relocate`'),
  state: z.enum(['pending', 'converging', 'completed', 'dead-lettered']).describe('Where the change stands'),
  outcome: z.string().nullable().describe('How it ended (`applied`, `gone`, `refused`...); null while under way'),
});

export const SpamClassificationEntry = z.strictObject({
  id: z.number().int().positive().describe('The entry, stable and never reused'),
  storedEmailId: z.string().describe('The email judged (its `storedEmailId`, kept after the email is erased)'),
  verdict: z.enum(['spam', 'ham']).describe('The verdict'),
  score: z.number().min(0).max(1).describe('Mapped score, 0 to 1 (engine score / its reject score, clamped); spam from Spam:Threshold'),
  source: z.enum(['trusted-header', 'engine']).describe("Which stage judged: a trusted server's verdict header, or the engine"),
  runId: z.number().int().positive().nullable().describe('The admin run that judged it; null: judged on arrival'),
  applied: z.boolean().describe('Whether the verdict could ask for changes (false: a dry run, a ham verdict, or Action None)'),
  conclusion: z
    .enum(['folder-unbound', 'message-gone', 'request-conflict'])
    .nullable()
    .describe(
      'Why an applying spam verdict asked for nothing: the move folder has no binding, the message was gone, or an earlier ask under the same request differed',
    ),
  changes: z.array(SpamChange).describe('The mailbox changes the verdict asked for, with their state'),
  classifiedAt: Instant.describe('When the verdict was recorded; the range filters apply to this'),
});
export type SpamClassificationEntry = z.infer<typeof SpamClassificationEntry>;

export const SpamClassificationsReply = z.strictObject({
  entries: z.array(SpamClassificationEntry),
  next: AuditPosition.nullable(),
});
export type SpamClassificationsReply = z.infer<typeof SpamClassificationsReply>;

export type SpamClassificationsProtocol = ProtocolOf<
  z.input<typeof SpamClassificationsRequest>,
  { 'mail-query.spam-classifications': SpamClassificationsReply }
>;
