/**
 * The query pool's contract with the admin answering audit route: the
 * message `mail-query.answering-audit` (`AnsweringAuditRequest` in,
 * `AnsweringAuditReply` out). Schemas only; the handler is
 * ../answering-audit.ts. The endings and degradations an entry may name are
 * the audit table's words (the answering actor publishes them too).
 */
import { z } from 'zod';
import type { ProtocolOf } from '../../../runtime/ref.ts';
import { RUN_DEGRADATIONS, RUN_ENDINGS } from '../../../runtime/store/answering/run-vocabulary.ts';
import { AuditPosition } from './audit-position.ts';

/** The answering audit's pages hold 1 to 100 entries (docs/admin-api.md "Answering audit"). */
export const ANSWERING_AUDIT_PAGE_MAX = 100;

export const AnsweringAuditRequest = z.strictObject({
  type: z.literal('mail-query.answering-audit'),
  account: z.string().min(1),
  /** Epoch ms: runs that ended at or after. */
  endedFrom: z.number().int().optional(),
  /** Epoch ms: runs that ended before. */
  endedBefore: z.number().int().optional(),
  after: AuditPosition.optional(),
  pageSize: z.number().int().min(1).max(ANSWERING_AUDIT_PAGE_MAX),
});
export type AnsweringAuditRequest = z.infer<typeof AnsweringAuditRequest>;

const Instant = z.iso.datetime();

export const AnsweringAuditRead = z.strictObject({
  position: z.number().int().nonnegative().describe('Order in which the run first reached the message, from 0'),
  storedEmailId: z.string().describe('The local email read (its `storedEmailId`)'),
  cited: z.boolean().describe('The answer cites it; false: read, not relied on'),
});
export type AnsweringAuditRead = z.infer<typeof AnsweringAuditRead>;

export const AnsweringAuditEntry = z.strictObject({
  runId: z.string().describe('The run; a question across several accounts leaves one entry per account sharing it'),
  accountId: z.string().describe('The account this entry is about'),
  endpointAlias: z.string().describe('The chat endpoint that answered'),
  instructionVersion: z.string().describe('Version of the instruction the model was given'),
  beganAt: Instant.describe('When the run began'),
  endedAt: Instant.describe('When it ended; the range filters apply to this'),
  ending: z.enum(RUN_ENDINGS).describe('How the run ended'),
  degradation: z.array(z.enum(RUN_DEGRADATIONS)).describe('How it degraded; empty when it did not'),
  reads: z.array(AnsweringAuditRead).describe("The account's messages the run read, by position; an erased message is gone from here"),
});
export type AnsweringAuditEntry = z.infer<typeof AnsweringAuditEntry>;

export const AnsweringAuditReply = z.strictObject({
  entries: z.array(AnsweringAuditEntry),
  /** Rows of the window naming an ending or degradation this build does not know. */
  omittedCount: z.number().int().nonnegative(),
  /** Where the next page starts; null: nothing follows. */
  next: AuditPosition.nullable(),
});
export type AnsweringAuditReply = z.infer<typeof AnsweringAuditReply>;

export type AnsweringAuditProtocol = ProtocolOf<z.input<typeof AnsweringAuditRequest>, { 'mail-query.answering-audit': AnsweringAuditReply }>;
