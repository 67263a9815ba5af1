/**
 * The scope of the maintenance routes (docs/admin-api.md "Rewind",
 * "Re-derivation", "Folder erasure"): a configured account, and a folder alias
 * that is optional for rewind and re-derivation (blank is an omission) and
 * required for erasure. An alias is written as configuration writes it
 * (config/schema/fields.ts `slug`), so text of any other shape is refused
 * before an actor is asked, and a sentence may name a well-formed alias.
 */
import type { z } from 'zod';
import { type ImapSyncProtocol, syncActorId } from '../../../actors/imap-sync/protocol.ts';
import type { Config } from '../../../config/schema.ts';
import type { Principal } from '../../auth/principal.ts';
import type { AdminDeps, AdminPermission } from '../route.ts';
import { invalidRequest, requireAccount, requirePrincipal } from './guard.ts';

/** What an alias looks like (the `slug` of config/schema/fields.ts). */
export const ALIAS_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;
/** Blank, or an alias: what the optional `folder` accepts. */
export const OPTIONAL_FOLDER_PATTERN = /^(?:\s*|[a-z0-9][a-z0-9_-]{0,62})$/;

export const FOLDER_SHAPE = 'Send folder as a folder alias (1 to 63 lower-case letters, digits, - or _, starting with a letter or digit).';
export const FOLDER_SHAPE_OR_OMIT =
  'Send folder as a folder alias (1 to 63 lower-case letters, digits, - or _, starting with a letter or digit), or leave it out for every folder.';
export const FOLDER_REQUIRED = 'Name the folder alias to erase in folder.';

/** An account, optionally narrowed to one folder alias. */
export type FolderScope = { account: string; folder?: string | null | undefined };

/** The configured account, or the 400. */
export function configuredAccount(config: Config, account: string): string {
  return requireAccount(
    config.Accounts.map((a) => a.Id),
    account,
  );
}

/** The alias, or null for "every folder": absent and blank are the same omission. */
export function optionalFolder(folder: string | null | undefined): string | null {
  if (folder === undefined || folder === null || folder.trim() === '') return null;
  if (!ALIAS_PATTERN.test(folder)) throw invalidRequest(FOLDER_SHAPE_OR_OMIT);
  return folder;
}

export function requiredFolder(folder: string | null | undefined): string {
  if (folder === undefined || folder === null || folder.trim() === '') throw invalidRequest(FOLDER_REQUIRED);
  if (!ALIAS_PATTERN.test(folder)) throw invalidRequest(FOLDER_SHAPE);
  return folder;
}

type ScopedMessage = 'imap-sync.rewind-assessment' | 'imap-sync.rewind' | 'imap-sync.rederive' | 'imap-sync.rederivation';

/**
 * The shape every scoped maintenance use case shares: ask again for the
 * permission, check the account and the optional folder, then ask the
 * account's sync actor (the writer of what the scope covers).
 */
export async function askScoped<K extends ScopedMessage>(
  deps: Pick<AdminDeps, 'config' | 'actor'>,
  principal: Principal | null,
  permission: AdminPermission,
  scope: FolderScope,
  request: { type: K; reply: z.ZodType<ImapSyncProtocol[K]['reply']>; deadlineMs: number },
): Promise<ImapSyncProtocol[K]['reply']> {
  requirePrincipal(principal, permission);
  const account = configuredAccount(deps.config, scope.account);
  const folder = optionalFolder(scope.folder);
  // Widened to the four: each takes the same `{ type, folder }`, which a generic type cannot show.
  const type: ScopedMessage = request.type;
  return deps.actor(syncActorId(account)).ask({ type, folder }, { reply: request.reply, deadlineMs: request.deadlineMs });
}
