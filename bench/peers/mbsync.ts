/**
 * The peers of the sync benchmarks, run as the user would: `mbsync` pulling
 * the folders into a Maildir, and `notmuch new` indexing that Maildir. Both
 * are Debian packages (isync, notmuch) installed by .ci/run; they are run
 * under GNU time (peers/process-stats.ts).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** `folders`: the server folders pulled (top-level names; default the INBOX alone). */
export function mbsyncConfig(dir: string, server: { port: number; user: string; password: string }, folders: readonly string[] = ['INBOX']): string {
  const maildir = join(dir, 'maildir');
  mkdirSync(maildir, { recursive: true });
  const file = join(dir, 'mbsyncrc');
  writeFileSync(
    file,
    [
      'IMAPAccount bench',
      'Host 127.0.0.1',
      `Port ${server.port}`,
      `User ${server.user}`,
      `Pass ${server.password}`,
      'SSLType None',
      'AuthMechs LOGIN',
      '',
      'IMAPStore remote',
      'Account bench',
      '',
      'MaildirStore local',
      `Path ${maildir}/`,
      `Inbox ${maildir}/INBOX`,
      // Past the INBOX mbsync lists the local folders too, and must be told what notmuch's `.notmuch/xapian` is.
      ...(folders.length > 1 ? ['SubFolders Verbatim'] : []),
      '',
      'Channel bench',
      'Far :remote:',
      'Near :local:',
      `Patterns ${folders.join(' ')}`,
      'Create Near',
      'Sync Pull',
      'SyncState *',
      '',
    ].join('\n'),
  );
  return file;
}

export function notmuchConfig(dir: string): string {
  const file = join(dir, 'notmuch-config');
  writeFileSync(file, ['[database]', `path=${join(dir, 'maildir')}`, '', '[new]', 'tags=inbox;', '', '[maildir]', 'synchronize_flags=true', ''].join('\n'));
  return file;
}
