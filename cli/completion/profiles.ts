/**
 * The profile names completion offers (docs/cli.md "Shell completion"): the
 * names in the credential file, sorted; none when there is no file or it
 * cannot be read, because a completion must never print an error over the
 * command line being typed. Imports only what reading the file needs, so an
 * entry point may answer `completion --profiles` without loading the commands.
 */
import { configDir } from '../config-dir.ts';
import { readCredentialFile } from '../credential-file.ts';
import { isValidName } from '../profiles.ts';

export function storedProfileNames(dir: string = configDir()): string[] {
  try {
    return Object.keys(readCredentialFile(dir).profiles)
      .filter(isValidName)
      .sort((a, b) => a.localeCompare(b));
  } catch {
    return [];
  }
}
