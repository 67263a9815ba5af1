/** IMAP flags split the way agents read them: system flags (`\Seen`…) and keywords (`$Label1`, `NonJunk`…). Pure. */
export type FlagSplit = { flags: string[]; keywords: string[] };

export function splitFlags(all: Iterable<string> | undefined): FlagSplit {
  const flags: string[] = [];
  const keywords: string[] = [];
  for (const f of all ?? []) {
    if (f === '\\Recent') continue; // session-bound, not a property of the message
    if (f.startsWith('\\')) flags.push(f);
    else keywords.push(f);
  }
  flags.sort();
  keywords.sort();
  return { flags, keywords };
}

export function sameFlags(a: FlagSplit, b: FlagSplit): boolean {
  return a.flags.join('\0') === b.flags.join('\0') && a.keywords.join('\0') === b.keywords.join('\0');
}
