/**
 * Whose mail a query may read: the accounts the configured owner controls,
 * with each account's configured folder aliases, computed by the caller from
 * configuration for every call. Anything outside it reads exactly like
 * something that does not exist. Carried by the read and lookup contracts
 * (mail-reads.ts, email-lookup.ts) and by the answering actor's questions;
 * shape only.
 */
import { z } from 'zod';

export const QueryScope = z.strictObject({
  accounts: z.array(z.strictObject({ id: z.string().min(1), folders: z.array(z.string().min(1)) })),
});
export type QueryScope = z.infer<typeof QueryScope>;
