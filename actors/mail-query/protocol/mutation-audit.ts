/**
 * The query pool's contract with the admin mailbox-change audit route: the
 * message `mail-query.mutation-audit` (`MutationAuditRequest` in,
 * `MutationAuditReply` out). Schemas only; the handler is
 * ../mutation-audit.ts.
 */
import { z } from 'zod';
import type { ProtocolOf } from '../../../runtime/ref.ts';
import { AuditPosition } from './audit-position.ts';

/** The changes this build permits (docs/admin-api.md "Mailbox-change audit": the eight kinds). */
export const MUTATION_KINDS = ['relocate', 'delete', 'set-seen', 'copy', 'set-flagged', 'add-keywords', 'remove-keywords', 'set-keywords'] as const;
export const MutationKind = z.enum(MUTATION_KINDS);
export type MutationKind = z.infer<typeof MutationKind>;

export const MutationAuditRequest = z.strictObject({
  type: z.literal('mail-query.mutation-audit'),
  account: z.string().min(1),
  mutation: MutationKind.optional(),
  /** Epoch ms: entries that ended at or after. */
  endedFrom: z.number().int().optional(),
  /** Epoch ms: entries that ended before. */
  endedBefore: z.number().int().optional(),
  after: AuditPosition.optional(),
  pageSize: z.number().int().min(1).max(200),
});
export type MutationAuditRequest = z.infer<typeof MutationAuditRequest>;

const Instant = z.iso.datetime();
const Uid = z.number().int().nonnegative().nullable();

export const MutationAuditEntry = z.strictObject({
  id: z.number().int().positive().describe('The entry, stable and never reused'),
  mutation: MutationKind.describe('The change'),
  storedEmailId: z
    .string()
    .nullable()
    .describe('The local email the change was made to (its `storedEmailId`, kept after the email is erased); null when none was stored'),
  sourceFolderPath: z.string().nullable().describe('The remote folder path the message was in'),
  targetFolderPath: z.string().nullable().describe('The remote folder path it went to (`relocate`, `copy`); null otherwise'),
  uidValidity: Uid.describe('UIDVALIDITY of the source folder'),
  sourceUid: Uid.describe('UID in the source folder'),
  targetUid: Uid.describe('UID in the target folder, where the server reported one'),
  requester: z.string().describe('Who asked for the change'),
  requestedAt: Instant.describe('When the change was asked for'),
  endedAt: Instant.describe('When it ended; the range filters apply to this'),
  outcome: z.string().describe('How it ended'),
});
export type MutationAuditEntry = z.infer<typeof MutationAuditEntry>;

export const MutationAuditReply = z.strictObject({
  entries: z.array(MutationAuditEntry),
  /** Rows of the window naming a change this build does not know. */
  omittedCount: z.number().int().nonnegative(),
  /** Where the next page starts; null: nothing follows. */
  next: AuditPosition.nullable(),
});
export type MutationAuditReply = z.infer<typeof MutationAuditReply>;

export type MutationAuditProtocol = ProtocolOf<z.input<typeof MutationAuditRequest>, { 'mail-query.mutation-audit': MutationAuditReply }>;
