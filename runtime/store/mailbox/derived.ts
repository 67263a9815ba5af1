/**
 * What a parsed message becomes in the store: the derived columns of
 * `messages`, its `search_documents` row and its `passages` (replacing
 * them deletes the passages' vectors, which a new parse invalidates). Shared by
 * storing (`store-batch.ts`) and re-derivation (`rederivation.ts`), so both
 * write the same shapes (docs/storage.md, "JSON column shapes"). Sole writer
 * of these rows: the account's sync actor; the functions here run inside its
 * transactions.
 *
 * Importable by modules under `runtime/store/mailbox/` only.
 */
import type { DerivedMessage, StoredAddress } from './derived-message.ts';
import type { Database } from '../open.ts';
import { run, type SqlValue } from '../rows.ts';
import { perConnection } from './prepared.ts';

/** Values of the derived columns, in `derivedColumnList` order. */
export const derivedColumnList = [
  'header_message_id',
  'in_reply_to',
  'references_json',
  'thread_id',
  'from_json',
  'to_json',
  'cc_json',
  'subject',
  'sent_at',
  'has_attachments',
  'attachments_json',
  'parse_version',
] as const;

export function derivedValues(parsed: DerivedMessage | null): SqlValue[] {
  if (parsed === null) return derivedColumnList.map(() => null);
  return [
    parsed.messageId,
    parsed.inReplyTo,
    JSON.stringify(parsed.references),
    parsed.threadId,
    addresses(parsed.from),
    addresses(parsed.to),
    addresses(parsed.cc),
    parsed.subject,
    parsed.sentAt,
    // Inline parts (images of an HTML body) are not what a reader calls an attachment.
    parsed.attachments.some((attachment) => !attachment.inline) ? 1 : 0,
    JSON.stringify(parsed.attachments.map((a) => ({ filename: a.filename, contentType: a.contentType, size: a.size, sha256: a.sha256, inline: a.inline }))),
    parsed.parseVersion,
  ];
}

function addresses(list: readonly StoredAddress[]): string {
  return JSON.stringify(list.map((a) => ({ name: a.name === '' ? null : a.name, address: a.address })));
}

function addressText(list: readonly StoredAddress[]): string {
  return list.map((a) => (a.name === '' ? a.address : `${a.name} ${a.address}`)).join(', ');
}

const statements = perConnection((db: Database) => ({
  upsertDocument: db.prepare(
    `INSERT INTO search_documents (message_id, subject, from_text, recipients_text, body_text, attachment_names) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (message_id) DO UPDATE SET subject = excluded.subject, from_text = excluded.from_text,
       recipients_text = excluded.recipients_text, body_text = excluded.body_text, attachment_names = excluded.attachment_names`,
  ),
  deleteDocument: db.prepare('DELETE FROM search_documents WHERE message_id = ?'),
  insertPassage: db.prepare('INSERT INTO passages (message_id, ordinal, text, parse_version) VALUES (?, ?, ?, ?)'),
  deleteVectors: db.prepare('DELETE FROM passage_vectors WHERE message_id = ?'),
  deletePassages: db.prepare('DELETE FROM passages WHERE message_id = ?'),
}));

/**
 * Writes the search document and passages of a message (replacing what it
 * had), or removes them when `parsed` is null. Caller holds the transaction.
 */
export function writeDerivedChildren(db: Database, messageId: number, parsed: DerivedMessage | null, replacing: boolean): void {
  const s = statements(db);
  if (replacing) {
    run(s.deleteVectors, [messageId]);
    run(s.deletePassages, [messageId]);
  }
  if (parsed === null) {
    if (replacing) run(s.deleteDocument, [messageId]);
    return;
  }
  const names = parsed.attachments.flatMap((a) => (a.filename === null ? [] : [a.filename])).join('\n');
  run(s.upsertDocument, [messageId, parsed.subject ?? '', addressText(parsed.from), addressText([...parsed.to, ...parsed.cc]), parsed.bodyText, names]);
  parsed.passages.forEach((text, ordinal) => {
    run(s.insertPassage, [messageId, ordinal, text, parsed.parseVersion]);
  });
}
