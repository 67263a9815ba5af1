/**
 * The change journal against a real server other than Dovecot (Cyrus,
 * Courier: change-journal-cyrus.test.ts, change-journal-courier.test.ts):
 * carol's mail on the server, the service mirroring it with an MCP
 * endpoint, changes asked of the account's sync actor the way mail rules
 * ask (`imap-sync.record-changes`) and read back on the server over IMAP.
 * `everyChangeKind` is the walk through every kind both files run; each
 * file adds what its server's missing capabilities make different.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Test } from 'tap';
import { RecordChangesReply, type ChangeAsk } from '../../../actors/imap-sync/protocol.ts';
import { decodeStoredEmailId } from '../../../actors/mail-query/protocol/stored-email-id.ts';
import { fetchAllOverImap, imapAdmin } from '../../harness/imap-admin.ts';
import { type ImapPeer, withImap } from '../../harness/imap-client.ts';
import { appendMessages } from '../../harness/place-mail.ts';
import { tempDir } from '../../helpers/daemon.ts';
import { readRows as query } from '../../helpers/database.ts';
import { readMirror } from '../../helpers/mirror.ts';
import { startSyncService, type SyncService } from '../../helpers/sync-service.ts';

type Folder = 'Work' | 'Filed' | 'Elsewhere';

/** A server under test. */
export type JournalPeer = {
  /** As subjects, requesters and assertions name it (`Cyrus`). */
  name: string;
  /** The server with user carol (stopped at the test's end); `variant` is its own way of hiding capabilities. */
  start(t: Test, variant?: string): Promise<ImapPeer>;
  /** Where a folder lives on it (Courier: under `INBOX.`). */
  folder(name: Folder): string;
};

export type Json = Record<string, any>;
const INBOX_MESSAGES = 10;

function message(peer: JournalPeer, n: number, folder: string): Buffer {
  return Buffer.from(
    [
      `From: Peer ${n} <peer${n}@example.net>`,
      'To: Carol <carol@example.net>',
      `Subject: ${peer.name} journal ${folder} ${n}`,
      `Message-ID: <cj-${folder}-${n}@example.net>`,
      `Date: Tue, ${String(n + 1).padStart(2, '0')} Nov 2026 09:00:00 +0000`,
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset=utf-8',
      '',
      `Body ${n} of ${folder}: reference 7731-${n}.`,
      '',
    ].join('\r\n'),
  );
}

export type Setup = {
  peer: JournalPeer;
  server: ImapPeer;
  /** The server's paths of the folders the tests use. */
  path: Record<Folder, string>;
  sync: SyncService;
  mcp: Client;
  capabilities: string[];
  /** Local id by message number of INBOX. */
  id(n: number): number;
  storedEmailId(n: number): string;
};

/** The server started with carol's folders and mail, the service mirroring it with an MCP endpoint, and the SDK's client connected. */
export async function setup(t: Test, peer: JournalPeer, variant?: string): Promise<Setup> {
  const dir = tempDir(t);
  const lower = peer.name.toLowerCase();
  const key = `key-${lower}-journal-0123456789abcdef`;
  const server = await peer.start(t, variant);
  const path = { Work: peer.folder('Work'), Filed: peer.folder('Filed'), Elsewhere: peer.folder('Elsewhere') };
  const admin = imapAdmin(server);
  for (const box of Object.values(path)) await admin.createMailbox('carol', box);
  await appendMessages(
    server,
    'carol',
    'INBOX',
    Array.from({ length: INBOX_MESSAGES }, (_, i) => ({ raw: message(peer, i + 1, 'inbox'), flags: i + 1 === 3 ? ['\\Flagged'] : [] })),
  );
  await appendMessages(server, 'carol', path.Work, [{ raw: message(peer, 1, 'work') }]);
  const capabilities = await withImap(server, 'carol', async (c) => [...c.capabilities.keys()].sort());

  writeFileSync(join(dir, 'mcp.key'), key, { mode: 0o600 });
  const sync = await startSyncService(
    dir,
    server,
    [{ id: 'carol', user: 'carol', folders: [{ Alias: 'inbox' }, { Alias: 'work', Path: path.Work }, { Alias: 'filed', Path: path.Filed }] }],
    {
      McpEndpoint: {
        Enabled: true,
        BindAddress: '127.0.0.1',
        Port: 0,
        Authentication: [{ ApiKey: { Name: `agent-${lower}`, SecretReference: `file:${join(dir, 'mcp.key')}`, Lifetime: 'NoLimit' } }],
        RateLimiting: { TokenCapacity: 100_000, TokensPerReplenishmentPeriod: 100_000 },
      },
      // Runs only when the test asks: the journal's effects must show without one.
      MailSynchronization: { Interval: '01:00:00' },
    },
  );
  t.teardown(() => sync.service.stop());
  await sync.syncNow('carol');
  const mcp = new Client({ name: `${lower}-journal-test`, version: '1.0.0' });
  await mcp.connect(
    new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${sync.service.mcp!.port}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${key}` } },
    }),
  );
  t.teardown(() => mcp.close());
  const listed = await listEmails(mcp, 'inbox');
  if (listed.length !== INBOX_MESSAGES) throw new Error(`mirrored ${listed.length} of ${INBOX_MESSAGES}`);
  const ids = new Map(listed.map((e) => [Number(/inbox (\d+)$/.exec(e.subject)![1]), e.storedEmailId as string]));
  return {
    peer,
    server,
    path,
    sync,
    mcp,
    capabilities,
    storedEmailId: (n) => ids.get(n)!,
    id: (n) => decodeStoredEmailId(ids.get(n)!)!,
  };
}

export async function call(client: Client, name: string, args: Json): Promise<Json> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = result.content?.[0]?.type === 'text' ? result.content[0].text : '';
  if (result.isError === true) throw new Error(`${name} failed: ${text}`);
  return (result.structuredContent ?? {}) as Json;
}

export async function listEmails(client: Client, folder: string): Promise<Json[]> {
  return (await call(client, 'list_emails', { folders: [folder], direction: 'oldestFirst', pageSize: 100 })).emails as Json[];
}

type OnServer = { uid: number; flags: string[]; messageId: string };

/** The server's messages of one folder, by Message-ID, read over IMAP. */
export async function onServer(server: ImapPeer, mailbox: string): Promise<Map<string, OnServer[]>> {
  return withImap(server, 'carol', async (c) => {
    const out = new Map<string, OnServer[]>();
    const box = await c.mailboxOpen(mailbox, { readOnly: true });
    if (box.exists === 0) return out;
    for await (const m of c.fetch('1:*', { uid: true, flags: true, envelope: true }, { uid: true })) {
      const messageId = m.envelope?.messageId ?? '';
      const entry = { uid: m.uid, flags: [...(m.flags ?? [])].filter((f) => f !== '\\Recent').sort(), messageId };
      out.set(messageId, [...(out.get(messageId) ?? []), entry]);
    }
    return out;
  });
}

export const mid = (n: number, folder = 'inbox'): string => `<cj-${folder}-${n}@example.net>`;

/** Asks the account's sync actor for changes the way mail rules will; answers the change ids. */
export async function ask(s: Setup, n: number, changes: ChangeAsk[]): Promise<number[]> {
  const reply = await s.sync.service.supervisor
    .ref('imap-sync:carol')
    .ask(
      { type: 'imap-sync.record-changes', messageId: s.id(n), requester: `rule:${s.peer.name.toLowerCase()}`, requestId: null, changes },
      { reply: RecordChangesReply },
    );
  if (reply.outcome !== 'recorded') throw new Error(`not recorded: ${reply.outcome}`);
  return reply.changes.map((c) => Number(c.changeId.slice(1)));
}

type Ended = { id: number; state: string; failure_reason: string | null; outcome: string | null; target_uid: number | null };

/** Waits until the changes ended (done or dead-lettered); answers each with its audit entry's outcome. */
export async function ended(s: Setup, jobIds: number[], timeoutMs = 30_000): Promise<Ended[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const rows = query<Ended>(
      s.sync.database,
      `SELECT j.id, j.state, j.failure_reason, a.outcome, a.target_uid FROM jobs j
       LEFT JOIN mutation_audit a ON a.message_id = json_extract(j.payload, '$.messageId') AND a.mutation = json_extract(j.payload, '$.effect.kind')
         AND a.requested_at = json_extract(j.payload, '$.requestedAt')
       WHERE j.id IN (SELECT value FROM json_each(?)) ORDER BY j.id`,
      [JSON.stringify(jobIds)],
    );
    if (rows.length === jobIds.length && rows.every((r) => (r.state === 'done' || r.state === 'dead') && r.outcome !== null)) return rows;
    if (Date.now() > deadline) throw new Error(`changes did not end: ${JSON.stringify(rows)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Live local rows of a message (by Message-ID), with their folder alias. */
export function localRows(s: Setup, messageId: string): Array<{ id: number; alias: string }> {
  return query(
    s.sync.database,
    `SELECT m.id, b.alias FROM messages m JOIN folder_bindings b ON b.id = m.binding_id
     WHERE m.state <> 'tombstoned' AND m.header_message_id = ? ORDER BY b.alias, m.id`,
    [messageId],
  );
}

/** After a run: the mirror of each mapped folder equals the server (same UIDs, flags, bytes): nothing twice, nothing missing. */
export async function mirrorEqualsServer(t: Test, s: Setup, when: string): Promise<void> {
  await s.sync.syncNow('carol');
  for (const [alias, box] of [
    ['inbox', 'INBOX'],
    ['work', s.path.Work],
    ['filed', s.path.Filed],
  ] as const) {
    const server = (await fetchAllOverImap(s.server, 'carol', box)).map((m) => ({ uid: m.uid, flags: [...m.flags].sort(), sha256: m.sha256 }));
    t.same(readMirror(s.sync.database, 'carol', alias), server, `${alias}: the mirror equals ${s.peer.name} ${when}`);
  }
}

/** Every change kind asked the way mail rules ask, read back on the server, followed locally, audited; a run afterwards duplicates nothing. */
export async function everyChangeKind(t: Test, s: Setup): Promise<void> {
  const lower = s.peer.name.toLowerCase();
  t.comment(`${s.peer.name} offers: ${s.capabilities.filter((c) => /^(MOVE|UIDPLUS|CONDSTORE|QRESYNC)$/.test(c)).join(' ')}`);
  const flagsOf = async (n: number): Promise<string[] | undefined> => (await onServer(s.server, 'INBOX')).get(mid(n))?.[0]?.flags;

  // The flag kinds, one after another on the server.
  const seen = await ended(s, await ask(s, 1, [{ kind: 'set-seen', value: true }]));
  t.same(
    seen.map((e) => [e.state, e.outcome]),
    [['done', 'applied']],
  );
  t.same(await flagsOf(1), ['\\Seen'], 'set-seen');
  await ended(s, await ask(s, 2, [{ kind: 'set-flagged', value: true }]));
  t.same(await flagsOf(2), ['\\Flagged'], 'set-flagged');
  await ended(s, await ask(s, 3, [{ kind: 'add-keywords', keywords: ['alpha', 'beta', '$label1'] }]));
  t.same(await flagsOf(3), ['$label1', '\\Flagged', 'alpha', 'beta'], 'add-keywords, the system flag kept');
  await ended(s, await ask(s, 3, [{ kind: 'remove-keywords', keywords: ['alpha'] }]));
  t.same(await flagsOf(3), ['$label1', '\\Flagged', 'beta'], 'remove-keywords');
  await ended(s, await ask(s, 3, [{ kind: 'set-keywords', keywords: ['gamma'] }]));
  t.same(await flagsOf(3), ['\\Flagged', 'gamma'], 'set-keywords replaces the keywords only');
  await ended(s, await ask(s, 1, [{ kind: 'set-seen', value: false }]));
  t.same(await flagsOf(1), [], 'set-seen false clears it');
  // Two changes of one request touching the same keyword: the second is not the server's change.
  const pair = await ended(
    s,
    await ask(s, 4, [
      { kind: 'add-keywords', keywords: ['delta'] },
      { kind: 'remove-keywords', keywords: ['delta'] },
    ]),
  );
  t.same(
    pair.map((e) => e.outcome),
    ['applied', 'applied'],
    'both changes of one request applied in order',
  );
  t.same(await flagsOf(4), [], 'the keyword added then removed');

  // The local copy follows the server's answers without a run.
  const inbox = await listEmails(s.mcp, 'inbox');
  const local = (n: number): Json => inbox.find((e) => e.storedEmailId === s.storedEmailId(n))!;
  t.same(local(2).flags, ['\\Flagged']);
  t.same([local(3).flags, local(3).keywords], [['\\Flagged'], ['gamma']]);
  t.ok(
    inbox.every((e) => !e.flagChangesPending),
    'nothing left unconfirmed',
  );

  // relocate into a mapped folder: the local id follows the message.
  const [moved] = await ended(s, await ask(s, 5, [{ kind: 'relocate', targetPath: s.path.Filed }]));
  t.equal(moved!.outcome, 'applied');
  const filed = await onServer(s.server, s.path.Filed);
  t.notOk((await onServer(s.server, 'INBOX')).has(mid(5)), 'relocate: left INBOX');
  t.equal(filed.get(mid(5))?.length, 1, 'relocate: once in Filed');
  t.equal(moved!.target_uid, filed.get(mid(5))![0]!.uid, 'the audit names its UID in Filed (COPYUID)');
  t.same(
    (await listEmails(s.mcp, 'filed')).map((e) => e.storedEmailId),
    [s.storedEmailId(5)],
    'listed under filed with the same storedEmailId',
  );
  t.same(localRows(s, mid(5)), [{ id: s.id(5), alias: 'filed' }], 'one local row, the same one');

  // relocate into a folder the account does not map: it leaves the mirror.
  const [away] = await ended(s, await ask(s, 6, [{ kind: 'relocate', targetPath: s.path.Elsewhere }]));
  t.equal(away!.outcome, 'applied');
  t.equal((await onServer(s.server, s.path.Elsewhere)).get(mid(6))?.length, 1, 'relocate: in Elsewhere on the server');
  t.notOk((await onServer(s.server, 'INBOX')).has(mid(6)));
  t.same(localRows(s, mid(6)), [], 'no longer mirrored');
  t.notOk(
    (await listEmails(s.mcp, 'inbox')).some((e) => e.storedEmailId === s.storedEmailId(6)),
    'gone from list_emails',
  );

  // copy into a mapped folder: stored under the target without a refetch.
  const [copied] = await ended(s, await ask(s, 7, [{ kind: 'copy', targetPath: s.path.Work }]));
  t.equal(copied!.outcome, 'applied');
  const work = await onServer(s.server, s.path.Work);
  t.equal(work.get(mid(7))?.length, 1, 'copy: once in Work');
  t.equal((await onServer(s.server, 'INBOX')).get(mid(7))?.length, 1, 'copy: the original stays');
  t.same(
    localRows(s, mid(7)).map((r) => r.alias),
    ['inbox', 'work'],
    'one local row in each folder',
  );
  const workListed = await listEmails(s.mcp, 'work');
  const copy = workListed.find((e) => e.subject === `${s.peer.name} journal inbox 7`);
  t.ok(copy, 'the copy is listed under work');
  t.not(copy?.storedEmailId, s.storedEmailId(7), 'under an id of its own');
  const content = await call(s.mcp, 'get_email_content', { storedEmailIds: [copy!.storedEmailId] });
  t.match(content.emails[0].body.text, /reference 7731-7/, 'the copy carries its content');

  // delete: tombstoned locally, expunged on the server, no other message touched.
  const [deleted] = await ended(s, await ask(s, 8, [{ kind: 'delete' }]));
  t.equal(deleted!.outcome, 'applied');
  t.notOk((await onServer(s.server, 'INBOX')).has(mid(8)), 'delete: expunged');
  t.same(localRows(s, mid(8)), []);
  t.equal(query(s.sync.database, 'SELECT state FROM messages WHERE id = ?', [s.id(8)])[0]?.state, 'tombstoned', 'the row is tombstoned');
  t.notOk((await listEmails(s.mcp, 'inbox')).some((e) => e.storedEmailId === s.storedEmailId(8)));

  // set_mail_flags through MCP once.
  const asked = await call(s.mcp, 'set_mail_flags', {
    storedEmailId: s.storedEmailId(9),
    seen: true,
    flagged: true,
    keywordChange: 'add',
    keywords: [`${s.peer.name}-Tool`],
    requestId: `${lower}-1`,
  });
  t.equal((asked.recordedChanges as Json[]).length, 3);
  const deadline = Date.now() + 30_000;
  let states: string[] = [];
  while (Date.now() < deadline) {
    const again = await call(s.mcp, 'set_mail_flags', {
      storedEmailId: s.storedEmailId(9),
      seen: true,
      flagged: true,
      keywordChange: 'add',
      keywords: [`${lower}-tool`],
      requestId: `${lower}-1`,
    });
    states = (again.recordedChanges as Json[]).map((c) => c.state);
    if (states.every((x) => x === 'completed')) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  t.same(states, ['completed', 'completed', 'completed'], 'the same request reads completed');
  t.same(await flagsOf(9), ['\\Flagged', '\\Seen', `${lower}-tool`], `set_mail_flags: on ${s.peer.name}`);

  // The audit: one entry per change, the requester named, no content.
  const audit = query(s.sync.database, 'SELECT mutation, requester, outcome, detail FROM mutation_audit ORDER BY id');
  t.equal(audit.length, 15, 'one entry per change');
  t.ok(
    audit.every((a) => a.outcome === 'applied'),
    'every one applied',
  );
  t.same([...new Set(audit.map((a) => a.requester))], [`rule:${lower}`, `agent-${lower}`]);
  t.notOk(JSON.stringify(audit).includes('7731'), 'no content in the audit');

  await mirrorEqualsServer(t, s, 'after a run');
  t.equal(localRows(s, mid(5)).length, 1, 'the relocated message once after the run');
  t.equal(localRows(s, mid(7)).length, 2, 'the copy and its original once each after the run');
}
