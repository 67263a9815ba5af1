/**
 * Fixtures of the mail-query tests: a migrated database file with alice
 * (inbox, archive) and bob (inbox), mail written the way the sync actor
 * writes it (raw MIME parsed by the real parser, stored through storeBatch),
 * and the owner's scope.
 */
import { join } from 'node:path';
import type { z } from 'zod';
import type { ParsedMessage } from '../../../actors/mime-parse/protocol.ts';
import { parseMessage } from '../../../actors/mime-parse/parse-message.ts';
import { answer } from '../../../actors/mail-query/task.ts';
import { MailQueryMessage } from '../../../actors/mail-query/protocol.ts';
import type { QueryScope } from '../../../actors/mail-query/protocol/query-scope.ts';
import { reconcileAccounts } from '../../../runtime/store/accounts.ts';
import { syncBindings } from '../../../runtime/store/mailbox/bindings.ts';
import { progressEpoch } from '../../../runtime/store/mailbox/checkpoints.ts';
import { beginRun, endRun, recordFolderRun } from '../../../runtime/store/mailbox/runs.ts';
import { storeBatch, type FetchedMessage } from '../../../runtime/store/mailbox/store-batch.ts';
import { migrate } from '../../../runtime/store/migrate.ts';
import { openStore, type Database } from '../../../runtime/store/open.ts';
import { one } from '../../../runtime/store/rows.ts';
import type { StoreSlice } from '../../../runtime/store/store-slice.ts';
import { scratchDir, type TestLike } from '../../runtime/store/fixtures/scratch.ts';

export const T0 = Date.parse('2025-03-01T08:00:00Z');
export const HOUR = 3_600_000;

export type World = { db: Database; slice: StoreSlice; bindings: { aliceInbox: number; aliceArchive: number; bobInbox: number } };

export const scope: QueryScope = {
  accounts: [
    { id: 'alice', folders: ['inbox', 'archive'] },
    { id: 'bob', folders: ['inbox'] },
  ],
};

export function world(t: TestLike): World {
  const database = join(scratchDir(t, 'mailcairn-query-'), 'mail.db');
  const db = openStore({ database, busyTimeoutMs: 1000, synchronous: 'Full' });
  t.teardown(() => db.close());
  migrate(db);
  reconcileAccounts(db, ['alice', 'bob'], 1);
  const alice = syncBindings(
    db,
    'alice',
    [
      { alias: 'inbox', path: 'INBOX' },
      { alias: 'archive', path: 'Archive' },
    ],
    1,
  );
  const bob = syncBindings(db, 'bob', [{ alias: 'inbox', path: 'INBOX' }], 1);
  return {
    db,
    slice: { database, busyTimeoutMs: 1000, synchronous: 'Full' },
    bindings: {
      aliceInbox: alice.find((b) => b.alias === 'inbox')!.id,
      aliceArchive: alice.find((b) => b.alias === 'archive')!.id,
      bobInbox: bob[0]!.id,
    },
  };
}

export type Mail = {
  uid: number;
  subject?: string;
  from?: string;
  to?: string[];
  cc?: string[];
  body?: string;
  /** Internal date; null for none. Default T0 + uid hours. */
  at?: number | null;
  messageId?: string;
  inReplyTo?: string;
  references?: string[];
  attachment?: { filename: string; contentType: string; content: string };
  flags?: string[];
  keywords?: string[];
  state?: 'stored' | 'oversized' | 'unreadable';
  /** Stored as the sync actor stores it, before the derivation writer has parsed it. */
  underived?: true;
};

export function rawMime(mail: Mail): Buffer {
  const headers = [
    `From: ${mail.from ?? 'Ann Example <ann@example.org>'}`,
    `To: ${(mail.to ?? ['alice@example.org']).join(', ')}`,
    ...(mail.cc ? [`Cc: ${mail.cc.join(', ')}`] : []),
    `Subject: ${mail.subject ?? `Letter ${mail.uid}`}`,
    `Date: ${new Date(T0 + mail.uid * HOUR - 60_000).toUTCString()}`,
    `Message-ID: ${mail.messageId ?? `<m${mail.uid}@example.org>`}`,
    ...(mail.inReplyTo ? [`In-Reply-To: ${mail.inReplyTo}`] : []),
    ...(mail.references ? [`References: ${mail.references.join(' ')}`] : []),
    'MIME-Version: 1.0',
  ];
  const body = mail.body ?? `Hello, this is letter ${mail.uid}.`;
  if (!mail.attachment)
    return Buffer.from([...headers, 'Content-Type: text/plain; charset=utf-8', 'Content-Transfer-Encoding: 8bit', '', body, ''].join('\r\n'));
  const a = mail.attachment;
  return Buffer.from(
    [
      ...headers,
      'Content-Type: multipart/mixed; boundary="XyZ"',
      '',
      '--XyZ',
      'Content-Type: text/plain; charset=utf-8',
      'Content-Transfer-Encoding: 8bit',
      '',
      body,
      '--XyZ',
      `Content-Type: ${a.contentType}; name="${a.filename}"`,
      `Content-Disposition: attachment; filename="${a.filename}"`,
      'Content-Transfer-Encoding: base64',
      '',
      Buffer.from(a.content).toString('base64'),
      '--XyZ--',
      '',
    ].join('\r\n'),
  );
}

export function parsed(raw: Uint8Array, account: string): ParsedMessage {
  const reply = parseMessage(raw, account);
  if (!reply.ok) throw new Error('fixture mail did not parse');
  return reply.message;
}

export function fetchedOf(mail: Mail, account: string): FetchedMessage {
  const raw = rawMime(mail);
  const state = mail.state ?? 'stored';
  return {
    uid: mail.uid,
    flags: mail.flags ?? [],
    keywords: mail.keywords ?? [],
    modseq: BigInt(mail.uid),
    internalDate: mail.at === undefined ? T0 + mail.uid * HOUR : mail.at,
    size: raw.length,
    state,
    raw: state === 'oversized' ? null : raw,
    parsed: state === 'stored' && !mail.underived ? parsed(raw, account) : null,
  };
}

/** Stores mail into a binding as one batch of a synchronization run. */
export function deliver(db: Database, accountId: string, bindingId: number, mails: readonly Mail[], uidValidity = 7): void {
  const result = storeBatch(db, {
    accountId,
    bindingId,
    uidValidity,
    expectedEpoch: progressEpoch(db, bindingId),
    messages: mails.map((m) => fetchedOf(m, accountId)),
    advanceTo: { lastUid: Math.max(0, ...mails.map((m) => m.uid)), highestModseq: null },
    now: T0,
  });
  if (!result.ok) throw new Error('fixture batch refused');
}

/** Records a synchronization run of an account whose folders ended as given. */
export function recordRun(
  db: Database,
  accountId: string,
  at: number,
  folders: ReadonlyArray<{ bindingId: number; outcome: 'ok' | 'unexpected'; hasMore?: boolean }>,
): void {
  const runId = beginRun(db, accountId, at - 1000);
  for (const f of folders) {
    recordFolderRun(db, runId, f.bindingId, {
      startedAt: at - 1000,
      endedAt: at,
      outcome: f.outcome,
      stored: 0,
      oversized: 0,
      unreadable: 0,
      hasMore: f.hasMore ?? false,
    });
  }
  endRun(db, runId, { endedAt: at, outcome: 'ok', foldersFailed: 0, consecutiveFailures: 0, nextDueAt: null });
}

export function idOf(db: Database, bindingId: number, uid: number): number {
  return one<{ id: number }>(db.prepare('SELECT id FROM messages WHERE binding_id = ? AND uid = ?'), [bindingId, uid])!.id;
}

type In = Exclude<z.input<typeof MailQueryMessage>, { type: 'mail-query.attachment' }>;
type Ask = { [K in In['type']]: Omit<Extract<In, { type: K }>, 'scope'> & { scope?: QueryScope } }[In['type']];

/** Answers a message in this thread the way the pool task does: parsed by the pool's schema first. */
export function ask<T>(w: World, msg: Ask): T {
  const parsed = MailQueryMessage.parse({ scope, ...msg });
  if (parsed.type === 'mail-query.attachment') throw new Error('not a read tool message');
  return answer(w.db, parsed) as T;
}

/** The AppError code a call throws, or 'answered'. */
export function refusalCode(fn: () => unknown): string {
  try {
    fn();
    return 'answered';
  } catch (err) {
    return (err as { code?: string }).code ?? `foreign: ${String(err)}`;
  }
}
