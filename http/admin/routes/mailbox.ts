/**
 * Mailbox routes: the synchronization status and the refresh-token grant
 * (DECISIONS.md "Administrative surface" for the shapes).
 */
import { z } from 'zod';
import { SynchronizationStatus } from '../../../runtime/store/mailbox/status.ts';
import { defineRoute } from '../route.ts';
import { storeRefreshToken } from '../use-cases/refresh-token.ts';
import { synchronizationStatus } from '../use-cases/synchronization.ts';
import { ADMIN_PREFIX } from './prefix.ts';

/** Body limits (admin-surface "Body limits"): the refresh-token route, and every other write. */
export const REFRESH_TOKEN_BODY_BYTES = 16 * 1024;
export const WRITE_BODY_BYTES = 4 * 1024;

/** A configured account identifier, as a member or query parameter. */
export const AccountField = z
  .string({ error: 'Name the account in account (one of the configured Accounts:Id values).' })
  .trim()
  .min(1, { error: 'Name the account in account (one of the configured Accounts:Id values).' })
  .describe('A configured `Accounts:Id`');

export const RefreshTokenGrant = z.strictObject({
  account: AccountField,
  refreshToken: z
    .string({ error: 'Put the mailbox refresh token in refreshToken (non-empty text).' })
    .refine((v) => v.trim() !== '', { error: 'Put the mailbox refresh token in refreshToken (non-empty text).' })
    .describe('The mailbox refresh token the provider issued; never answered back'),
});

export const mailboxRoutes = [
  defineRoute({
    method: 'GET',
    path: `${ADMIN_PREFIX}/mailbox/synchronization`,
    permission: 'service.admin.read',
    summary: 'Synchronization status per account and mapped folder',
    answer: SynchronizationStatus,
    async handle({ principal, deadlineMs }, deps) {
      return { status: 200, json: await synchronizationStatus(deps, principal, deadlineMs) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: `${ADMIN_PREFIX}/mailbox/refresh-token`,
    permission: 'service.admin.credentials.write',
    summary: 'Stores a mailbox refresh token for one configured account, sealed under the key ring; answers 204 with no body',
    body: RefreshTokenGrant,
    bodyLimit: REFRESH_TOKEN_BODY_BYTES,
    async handle({ principal, deadlineMs, body }, deps) {
      await storeRefreshToken(deps, principal, body, deadlineMs);
      // No body: nothing stored can be read back.
      return { status: 204 };
    },
  }),
];
