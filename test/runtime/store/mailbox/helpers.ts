/** Shared fixtures of the mailbox store tests: a migrated file database, fetched messages, counting and searching. */
import { join } from 'node:path';
import type { ParsedMessage } from '../../../../actors/mime-parse/protocol.ts';
import { reconcileAccounts } from '../../../../runtime/store/accounts.ts';
import { syncBindings, type Binding } from '../../../../runtime/store/mailbox/bindings.ts';
import type { FetchedMessage } from '../../../../runtime/store/mailbox/store-batch.ts';
import { migrate } from '../../../../runtime/store/migrate.ts';
import { openStore, type Database } from '../../../../runtime/store/open.ts';
import { many, one, type SqlValue } from '../../../../runtime/store/rows.ts';
import { scratchDir, type TestLike } from '../fixtures/scratch.ts';

/** A real database file in a temporary directory, migrated, with accounts alice and bob. */
export function freshStore(t: TestLike): Database {
  const db = openStore({ database: join(scratchDir(t, 'mailcairn-mailbox-'), 'mail.db'), busyTimeoutMs: 1000, synchronous: 'Full' });
  t.teardown(() => db.close());
  migrate(db);
  reconcileAccounts(db, ['alice', 'bob'], 1);
  return db;
}

/** alice with INBOX mirrored as `inbox` and Archive as `archive`. */
export function aliceFolders(db: Database): { inbox: Binding; archive: Binding } {
  const bindings = syncBindings(
    db,
    'alice',
    [
      { alias: 'inbox', path: 'INBOX' },
      { alias: 'archive', path: 'Archive' },
    ],
    1,
  );
  return { inbox: bindings.find((b) => b.alias === 'inbox')!, archive: bindings.find((b) => b.alias === 'archive')! };
}

export type Letter = { subject: string; from?: string; to?: string; body?: string; attachment?: string };

export function parsedOf(uid: number, letter: Letter): ParsedMessage {
  const body = letter.body ?? `Body of ${letter.subject}`;
  return {
    parseVersion: 1,
    messageId: `<m${uid}@example.org>`,
    inReplyTo: null,
    references: [],
    threadId: `t${uid}`,
    subject: letter.subject,
    from: [{ name: 'Sender', address: letter.from ?? 'sender@example.org' }],
    sender: [],
    replyTo: [],
    to: [{ name: '', address: letter.to ?? 'alice@example.org' }],
    cc: [],
    bcc: [],
    bulk: false,
    sentAt: 1_700_000_000_000 + uid,
    attachments:
      letter.attachment === undefined
        ? []
        : [{ filename: letter.attachment, contentType: 'application/pdf', size: 10, sha256: 'ab'.repeat(32), inline: false }],
    bodyText: body,
    passages: [body, `${body} (second passage)`],
  };
}

export function rawOf(letter: Letter): Buffer {
  return Buffer.from(`From: ${letter.from ?? 'sender@example.org'}\r\nSubject: ${letter.subject}\r\n\r\n${letter.body ?? ''}\r\n`);
}

/** A stored message with its parse; `state` other than stored gives the oversized or unreadable shape. */
export function fetched(uid: number, letter: Letter = { subject: `Letter ${uid}` }, state: FetchedMessage['state'] = 'stored'): FetchedMessage {
  const raw = rawOf(letter);
  return {
    uid,
    flags: ['\\Seen'],
    keywords: [],
    modseq: BigInt(uid),
    internalDate: 1_700_000_000_000 + uid,
    size: raw.length,
    state,
    raw: state === 'oversized' ? null : raw,
    parsed: state === 'stored' ? parsedOf(uid, letter) : null,
  };
}

export function count(db: Database, table: string, where = '1', params: SqlValue[] = []): number {
  return one<{ n: number }>(db.prepare(`SELECT count(*) AS n FROM ${table} WHERE ${where}`), params)?.n ?? -1;
}

/** Message ids the FTS index finds. */
export function search(db: Database, query: string): number[] {
  return many<{ id: number }>(
    db.prepare('SELECT k.message_id AS id FROM search_index CROSS JOIN search_keys k ON k.key = search_index.rowid WHERE search_index MATCH ? ORDER BY id'),
    [query],
  ).map((row) => row.id);
}

export function idOf(db: Database, bindingId: number, uid: number): number {
  return one<{ id: number }>(db.prepare('SELECT id FROM messages WHERE binding_id = ? AND uid = ?'), [bindingId, uid])!.id;
}
