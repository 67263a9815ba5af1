/**
 * The ordered list of migrations this build knows. Append one entry per new
 * file `NNNN-name.ts`; versions run 1, 2, 3… without gaps (checked by
 * `migrate.ts` and its test). Never edit or reorder a shipped entry.
 *
 * Imported by `migrate.ts` only.
 */
import { sql as initial } from './0001-initial.ts';
import { sql as mailboxWrites } from './0002-mailbox-writes.ts';
import { sql as deploymentSecrets } from './0003-deployment-secrets.ts';
import { sql as mailboxChanges } from './0004-mailbox-changes.ts';
import { sql as outbox } from './0005-outbox.ts';
import { sql as searchRecency } from './0006-search-recency.ts';
import { sql as passageVectors } from './0007-passage-vectors.ts';
import { sql as embeddingSpend } from './0008-embedding-spend.ts';
import { sql as vectorSequence } from './0009-vector-sequence.ts';
import { sql as questionAllowance } from './0010-question-allowance.ts';
import { sql as answeringPruneIndex } from './0011-answering-prune-index.ts';
import { sql as contacts } from './0012-contacts.ts';
import { sql as outboxRetention } from './0013-outbox-retention.ts';
import { sql as journalDroppedIndex } from './0014-journal-dropped-index.ts';
import { sql as folderServerCounts } from './0015-folder-server-counts.ts';
import { sql as mailRules } from './0016-mail-rules.ts';
import { sql as spam } from './0017-spam.ts';
import { sql as passageTextHash } from './0018-passage-text-hash.ts';
import { sql as messageSenders } from './0019-message-senders.ts';

export type Migration = { readonly version: number; readonly name: string; readonly sql: string };

export const migrations: readonly Migration[] = [
  { version: 1, name: 'initial', sql: initial },
  { version: 2, name: 'mailbox-writes', sql: mailboxWrites },
  { version: 3, name: 'deployment-secrets', sql: deploymentSecrets },
  { version: 4, name: 'mailbox-changes', sql: mailboxChanges },
  { version: 5, name: 'outbox', sql: outbox },
  { version: 6, name: 'search-recency', sql: searchRecency },
  { version: 7, name: 'passage-vectors', sql: passageVectors },
  { version: 8, name: 'embedding-spend', sql: embeddingSpend },
  { version: 9, name: 'vector-sequence', sql: vectorSequence },
  { version: 10, name: 'question-allowance', sql: questionAllowance },
  { version: 11, name: 'answering-prune-index', sql: answeringPruneIndex },
  { version: 12, name: 'contacts', sql: contacts },
  { version: 13, name: 'outbox-retention', sql: outboxRetention },
  { version: 14, name: 'journal-dropped-index', sql: journalDroppedIndex },
  { version: 15, name: 'folder-server-counts', sql: folderServerCounts },
  { version: 16, name: 'mail-rules', sql: mailRules },
  { version: 17, name: 'spam', sql: spam },
  { version: 18, name: 'passage-text-hash', sql: passageTextHash },
  { version: 19, name: 'message-senders', sql: messageSenders },
];
