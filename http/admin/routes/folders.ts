/** Folder routes: erasure of a folder the account no longer mirrors, one bounded pass per request. */
import { z } from 'zod';
import { defineRoute, WRITE_BODY_BYTES } from '../route.ts';
import { ERASURE_PASS_MESSAGES, eraseFolderPass } from '../use-cases/folder-erasure.ts';
import { ALIAS_PATTERN, FOLDER_REQUIRED, FOLDER_SHAPE } from '../use-cases/scope.ts';
import { AccountField } from './mailbox.ts';
import { ADMIN_PREFIX } from './prefix.ts';

export const ErasureBody = z.strictObject({
  account: AccountField,
  folder: z
    .string({ error: FOLDER_REQUIRED })
    .refine((v) => v.trim() !== '', { error: FOLDER_REQUIRED })
    .regex(ALIAS_PATTERN, { error: FOLDER_SHAPE })
    .describe('The folder alias whose stored mail is erased; the account must no longer map it'),
});

const Count = z.number().int().nonnegative();

export const ErasureAnswer = z.strictObject({
  account: z.string().describe('The account'),
  folder: z.string().describe('The folder alias'),
  erasedEmailCount: Count.describe(`Stored emails this pass erased (at most ${ERASURE_PASS_MESSAGES}; tombstones go too, uncounted)`),
  emailsRemain: z
    .boolean()
    .describe('More stored mail of the folder is left: ask again. False once the folder is empty (its checkpoint went with the last pass)'),
  remainingEmailCount: Count.describe(
    "Stored emails of the folder left after this pass (tombstones uncounted); with the passes' `erasedEmailCount`, the erasure's total, so a client can show its progress",
  ),
});

export const folderRoutes = [
  defineRoute({
    method: 'POST',
    path: `${ADMIN_PREFIX}/folders/erasure`,
    permission: 'service.admin.erase',
    summary: `Erases one bounded pass (at most ${ERASURE_PASS_MESSAGES} messages) of the mail stored for a folder the account no longer mirrors; irreversible`,
    body: ErasureBody,
    bodyLimit: WRITE_BODY_BYTES,
    answer: ErasureAnswer,
    async handle({ principal, deadlineMs, body }, deps) {
      return { status: 200, json: await eraseFolderPass(deps, principal, body, deadlineMs) };
    },
  }),
];
