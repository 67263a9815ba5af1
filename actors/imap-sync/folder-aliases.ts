/**
 * Which server folder each configured alias names. Pure.
 *
 * An alias with a `Path` names that folder (INBOX case-insensitively, as
 * RFC 3501 says). An alias without one is resolved through the SPECIAL-USE
 * attributes (RFC 6154): `inbox` is INBOX, `sent` is the folder marked
 * `\Sent`, and so on; none marked is "matches no folder", several is
 * "matches several" — both fixed by writing a `Path`. `specialUse` is what
 * imapflow reports: the server's attribute, or on a server without
 * SPECIAL-USE (Courier) its guess from the folder's name (`INBOX.Sent`).
 */
export type RemoteFolder = { path: string; specialUse: string | null; flags: readonly string[] };

export type AliasResolution = { alias: string; outcome: 'ok'; path: string } | { alias: string; outcome: 'no-such-folder' | 'ambiguous-folder'; path: null };

const specialUseOf: Readonly<Record<string, string>> = {
  sent: '\\Sent',
  drafts: '\\Drafts',
  trash: '\\Trash',
  junk: '\\Junk',
  spam: '\\Junk',
  archive: '\\Archive',
  all: '\\All',
  flagged: '\\Flagged',
  important: '\\Important',
};

function isInbox(path: string): boolean {
  return path.toUpperCase() === 'INBOX';
}

export function resolveAliases(folders: ReadonlyArray<{ alias: string; path: string | null }>, remote: readonly RemoteFolder[]): AliasResolution[] {
  return folders.map(({ alias, path }) => {
    if (path !== null) {
      const found = remote.find((r) => r.path === path || (isInbox(path) && isInbox(r.path)));
      return found ? { alias, outcome: 'ok', path: found.path } : { alias, outcome: 'no-such-folder', path: null };
    }
    if (alias.toLowerCase() === 'inbox') {
      const inbox = remote.find((r) => isInbox(r.path));
      return inbox ? { alias, outcome: 'ok', path: inbox.path } : { alias, outcome: 'no-such-folder', path: null };
    }
    const attribute = specialUseOf[alias.toLowerCase()];
    if (attribute === undefined) return { alias, outcome: 'no-such-folder', path: null };
    // Attributes are case-insensitive (RFC 3501); Cyrus lists them in lower case.
    const wanted = attribute.toLowerCase();
    const matches = remote.filter((r) => r.specialUse?.toLowerCase() === wanted || r.flags.some((f) => f.toLowerCase() === wanted));
    if (matches.length === 1) return { alias, outcome: 'ok', path: matches[0]!.path };
    return { alias, outcome: matches.length === 0 ? 'no-such-folder' : 'ambiguous-folder', path: null };
  });
}
