/**
 * Mailbox routes: the synchronization status, the refresh-token grant,
 * rewind and re-derivation (docs/admin-api.md for the
 * shapes; its reference section is generated from these schemas).
 */
import { z } from 'zod';
import { SynchronizationStatus } from '../../../runtime/store/mailbox/status.ts';
import { defineRoute, REFRESH_TOKEN_BODY_BYTES, WRITE_BODY_BYTES } from '../route.ts';
import { rederivationStatus, requestRederivation } from '../use-cases/rederivation.ts';
import { storeRefreshToken } from '../use-cases/refresh-token.ts';
import { rewind, rewindAssessment } from '../use-cases/rewind.ts';
import { FOLDER_SHAPE_OR_OMIT, OPTIONAL_FOLDER_PATTERN } from '../use-cases/scope.ts';
import { synchronizationStatus } from '../use-cases/synchronization.ts';
import { ADMIN_PREFIX } from './prefix.ts';

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

/** The optional folder of a rewind or re-derivation scope; blank is an omission. */
const OptionalFolder = z
  .string({ error: FOLDER_SHAPE_OR_OMIT })
  .regex(OPTIONAL_FOLDER_PATTERN, { error: FOLDER_SHAPE_OR_OMIT })
  .describe('A folder alias; absent or blank: every folder the account holds mail in, withdrawn mappings included');

/** The scope of rewind and re-derivation: in the query string of a GET, the body of a POST. */
export const ScopeQuery = z.strictObject({ account: AccountField, folder: OptionalFolder.optional() });
export const ScopeBody = z.strictObject({
  account: AccountField,
  folder: OptionalFolder.nullable()
    .optional()
    .describe('A folder alias; absent, null or blank: every folder the account holds mail in, withdrawn mappings included'),
});

const Count = z.number().int().nonnegative();
const AnsweredScope = {
  account: z.string().describe('The account'),
  folder: z.string().nullable().describe('The folder alias; null: every folder the account holds mail in'),
};

export const RewindAssessmentAnswer = z.strictObject({
  ...AnsweredScope,
  storedEmailCount: Count.describe('Stored emails of the scope a rewind would have the next run fetch again (tombstones are not counted)'),
});

export const RewindAnswer = z.strictObject({
  ...AnsweredScope,
  folders: z.array(z.string()).describe('Aliases whose progress was discarded, sorted; empty when none held any'),
});

export const RederivationRunAnswer = z.strictObject({
  ...AnsweredScope,
  requestedAt: z.iso.datetime().describe('When the run was asked for'),
  isOutstanding: z.boolean().describe('The run is under way; false once it reached the end of its scope'),
  rederivedEmailCount: Count.describe('Emails re-read from their raw MIME so far'),
  unreadableEmailCount: Count.describe('Emails whose raw MIME the parser could not read (they stay unreadable)'),
  missingContentEmailCount: Count.describe('Emails whose raw MIME was missing or damaged'),
  endedAt: z.iso.datetime().nullable().describe('When the run ended; null while under way'),
});

export const RederivationAnswer = z.strictObject({
  started: z.boolean().describe('This request started the run; false when it returned the run under way, and always false on GET'),
  carriage: z
    .enum(['carried', 'queue-at-capacity', 'stopped'])
    .nullable()
    .describe(
      'How the run is carried: `carried` by a background job; `queue-at-capacity`: the job queue had no room for it; `stopped`: its job was dead-lettered (outstanding) or dropped (ended). Null with no run',
    ),
  run: RederivationRunAnswer.nullable().describe("The scope's latest run; null for a scope never asked about"),
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
  defineRoute({
    method: 'GET',
    path: `${ADMIN_PREFIX}/mailbox/rewind`,
    permission: 'service.admin.read',
    summary: "How much stored mail discarding the scope's synchronization progress would have fetched again; discards nothing",
    query: ScopeQuery,
    answer: RewindAssessmentAnswer,
    async handle({ principal, deadlineMs, query }, deps) {
      return { status: 200, json: await rewindAssessment(deps, principal, query, deadlineMs) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: `${ADMIN_PREFIX}/mailbox/rewind`,
    permission: 'service.admin.operate',
    summary: "Discards the synchronization progress of the scope's folder bindings, so the next run fetches those folders again; erases no mail",
    body: ScopeBody,
    bodyLimit: WRITE_BODY_BYTES,
    answer: RewindAnswer,
    async handle({ principal, deadlineMs, body }, deps) {
      return { status: 200, json: await rewind(deps, principal, body, deadlineMs) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: `${ADMIN_PREFIX}/mailbox/rederivation`,
    permission: 'service.admin.operate',
    summary: "Records a run re-reading the scope's stored raw MIME into its derived properties, or returns the run under way",
    body: ScopeBody,
    bodyLimit: WRITE_BODY_BYTES,
    answer: RederivationAnswer,
    async handle({ principal, deadlineMs, body }, deps) {
      return { status: 200, json: await requestRederivation(deps, principal, body, deadlineMs) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: `${ADMIN_PREFIX}/mailbox/rederivation`,
    permission: 'service.admin.read',
    summary: "Progress or ending of the scope's latest re-derivation run",
    query: ScopeQuery,
    answer: RederivationAnswer,
    async handle({ principal, deadlineMs, query }, deps) {
      return { status: 200, json: await rederivationStatus(deps, principal, query, deadlineMs) };
    },
  }),
];
