/**
 * The query pool's contract with the MCP write tools (`set_mail_flags`, the
 * reply, forward and draft tools): which account holds a live email in the
 * caller's scope, before the tool asks that account's actors to act on it.
 * Schemas only; the handler is ../locate-email.ts.
 */
import { z } from 'zod';
import type { ProtocolOf } from '../../../runtime/ref.ts';
import { QueryScope } from './query-scope.ts';

export const LocateEmailRequest = z.strictObject({ type: z.literal('mail-query.locate-email'), scope: QueryScope, messageId: z.number().int().positive() });
export type LocateEmailRequest = z.infer<typeof LocateEmailRequest>;

/** `email: null` reads as not found. */
export const LocateEmailReply = z.strictObject({ email: z.strictObject({ accountId: z.string(), folderAlias: z.string() }).nullable() });
export type LocateEmailReply = z.infer<typeof LocateEmailReply>;

export type EmailLookupProtocol = ProtocolOf<z.input<typeof LocateEmailRequest>, { 'mail-query.locate-email': LocateEmailReply }>;
