/** Alias resolution: paths, INBOX, SPECIAL-USE, and the two outcomes an operator fixes by writing a Path. */
import t from 'tap';
import { resolveAliases } from '../../../actors/imap-sync/folder-aliases.ts';

const remote = [
  { path: 'INBOX', specialUse: null, flags: [] },
  { path: 'Sent Items', specialUse: '\\Sent', flags: ['\\HasNoChildren'] },
  { path: 'Archive', specialUse: '\\Archive', flags: [] },
  { path: 'Old Archive', specialUse: null, flags: ['\\Archive'] },
  { path: 'Projects/2026', specialUse: null, flags: [] },
  { path: 'Papierkorb', specialUse: null, flags: ['\\trash'] },
];

t.test('aliases resolve by path, INBOX, or SPECIAL-USE; none and several are outcomes', async (t) => {
  t.same(
    resolveAliases(
      [
        { alias: 'inbox', path: null },
        { alias: 'sent', path: null },
        { alias: 'archive', path: null },
        { alias: 'drafts', path: null },
        { alias: 'projects', path: 'Projects/2026' },
        { alias: 'lower', path: 'inbox' },
        { alias: 'gone', path: 'Nope' },
        { alias: 'receipts', path: null },
        { alias: 'trash', path: null },
      ],
      remote,
    ),
    [
      { alias: 'inbox', outcome: 'ok', path: 'INBOX' },
      { alias: 'sent', outcome: 'ok', path: 'Sent Items' },
      { alias: 'archive', outcome: 'ambiguous-folder', path: null },
      { alias: 'drafts', outcome: 'no-such-folder', path: null },
      { alias: 'projects', outcome: 'ok', path: 'Projects/2026' },
      { alias: 'lower', outcome: 'ok', path: 'INBOX' },
      { alias: 'gone', outcome: 'no-such-folder', path: null },
      { alias: 'receipts', outcome: 'no-such-folder', path: null },
      { alias: 'trash', outcome: 'ok', path: 'Papierkorb' },
    ],
  );
});
