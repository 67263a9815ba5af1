/**
 * The scope of the maintenance routes (admin-surface "Re-derivation and
 * rewind", "Folder erasure"): a configured account, and a folder alias that
 * is optional for rewind and re-derivation (blank is an omission) and
 * required for erasure. An alias is written as configuration writes it
 * (config/schema/fields.ts `slug`), so text of any other shape is refused
 * before an actor is asked, and a sentence may name a well-formed alias.
 */
import type { Config } from '../../../config/schema.ts';
import { InvalidRequest, requireAccount } from './guard.ts';

/** What an alias looks like (the `slug` of config/schema/fields.ts). */
export const ALIAS_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;
/** Blank, or an alias: what the optional `folder` accepts. */
export const OPTIONAL_FOLDER_PATTERN = /^(?:\s*|[a-z0-9][a-z0-9_-]{0,62})$/;

export const FOLDER_SHAPE = 'Send folder as a folder alias (1 to 63 lower-case letters, digits, - or _, starting with a letter or digit).';
export const FOLDER_SHAPE_OR_OMIT = 'Send folder as a folder alias (1 to 63 lower-case letters, digits, - or _, starting with a letter or digit), or leave it out for every folder.';
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
  if (!ALIAS_PATTERN.test(folder)) throw new InvalidRequest(FOLDER_SHAPE_OR_OMIT);
  return folder;
}

export function requiredFolder(folder: string | null | undefined): string {
  if (folder === undefined || folder === null || folder.trim() === '') throw new InvalidRequest(FOLDER_REQUIRED);
  if (!ALIAS_PATTERN.test(folder)) throw new InvalidRequest(FOLDER_SHAPE);
  return folder;
}
