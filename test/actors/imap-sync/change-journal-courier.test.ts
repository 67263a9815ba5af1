/**
 * The change journal against the third real server, Courier: every change
 * kind asked of the account's sync actor the way mail rules will ask
 * (`imap-sync.record-changes`), read back on the server over IMAP, the
 * local rows followed without a refetch, a run afterwards duplicating
 * nothing, and `set_mail_flags` once through the MCP SDK's client.
 *
 * Courier as Debian ships it has neither MOVE nor CONDSTORE, so these are
 * the fallback paths: a relocation is COPY, `\Deleted` and `UID EXPUNGE` of
 * that UID (UIDPLUS), flags are stored without UNCHANGEDSINCE, and folders
 * live under the `INBOX.` namespace. A message another client marked
 * `\Deleted` is never expunged by ours. Then Courier announcing no UIDPLUS
 * either: no COPYUID (the copy is found by what the placement recorded), a
 * deletion and a relocation refused, since a plain EXPUNGE would remove
 * every message marked `\Deleted` in the folder.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import Libsql from 'libsql';
import t, { type Test } from 'tap';
import { RecordChangesReply, type ChangeAsk } from '../../../actors/imap-sync/protocol.ts';
import { decodeStoredEmailId } from '../../../actors/mail-query/protocol/stored-email-id.ts';
import { COURIER_DEBIAN_CAPABILITY, courierAvailable, startCourier, type Courier } from '../../harness/courier.ts';
import { fetchAllOverImap, imapAdmin } from '../../harness/imap-admin.ts';
import { withImap } from '../../harness/imap-client.ts';
import { appendMessages } from '../../harness/place-mail.ts';
import { tempDir } from '../../helpers/daemon.ts';
import { readMirror } from '../../helpers/mirror.ts';
import { startSyncService, type SyncService } from '../../helpers/sync-service.ts';

t.setTimeout(300_000);

const skip = !courierAvailable() && 'Courier is not installed (see .ci/run)';
/** Debian's IMAP_CAPABILITY without UIDPLUS. */
const WITHOUT_UIDPLUS = COURIER_DEBIAN_CAPABILITY.replace(' UIDPLUS', '');

type Json = Record<string, any>;
const KEY = 'key-courier-journal0123456789abcdef';
const INBOX_MESSAGES = 10;

function message(n: number, folder: string): Buffer {
  return Buffer.from(
    [
      `From: Peer ${n} <peer${n}@example.net>`,
      'To: Carol <carol@example.net>',
      `Subject: Courier journal ${folder} ${n}`,
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

type Setup = {
  courier: Courier;
  sync: SyncService;
  mcp: Client;
  capabilities: string[];
  /** Local id by message number of INBOX. */
  id(n: number): number;
  storedEmailId(n: number): string;
};

async function setup(t: Test, capability?: string): Promise<Setup> {
  const dir = tempDir(t);
  const courier = await startCourier({ users: [{ user: 'carol', password: 'pw-carol' }], ...(capability ? { capability } : {}) });
  t.teardown(() => courier.stop());
  const admin = imapAdmin(courier);
  for (const box of ['INBOX.Work', 'INBOX.Filed', 'INBOX.Elsewhere']) await admin.createMailbox('carol', box);
  await appendMessages(
    courier,
    'carol',
    'INBOX',
    Array.from({ length: INBOX_MESSAGES }, (_, i) => ({ raw: message(i + 1, 'inbox'), flags: i + 1 === 3 ? ['\\Flagged'] : [] })),
  );
  await appendMessages(courier, 'carol', 'INBOX.Work', [{ raw: message(1, 'work') }]);
  const capabilities = await withImap(courier, 'carol', async (c) => [...c.capabilities.keys()].sort());

  writeFileSync(join(dir, 'mcp.key'), KEY, { mode: 0o600 });
  const sync = await startSyncService(
    dir,
    courier,
    [{ id: 'carol', user: 'carol', folders: [{ Alias: 'inbox' }, { Alias: 'work', Path: 'INBOX.Work' }, { Alias: 'filed', Path: 'INBOX.Filed' }] }],
    {
      McpEndpoint: {
        Enabled: true,
        BindAddress: '127.0.0.1',
        Port: 0,
        Authentication: [{ ApiKey: { Name: 'agent-courier', SecretReference: `file:${join(dir, 'mcp.key')}`, Lifetime: 'NoLimit' } }],
        RateLimiting: { TokenCapacity: 100_000, TokensPerReplenishmentPeriod: 100_000 },
      },
      // Runs only when the test asks: the journal's effects must show without one.
      MailSynchronization: { Interval: '01:00:00' },
    },
  );
  t.teardown(() => sync.service.stop());
  await sync.syncNow('carol');
  const mcp = new Client({ name: 'courier-journal-test', version: '1.0.0' });
  await mcp.connect(
    new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${sync.service.mcp!.port}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${KEY}` } },
    }),
  );
  t.teardown(() => mcp.close());
  const listed = await listEmails(mcp, 'inbox');
  if (listed.length !== INBOX_MESSAGES) throw new Error(`mirrored ${listed.length} of ${INBOX_MESSAGES}`);
  const ids = new Map(listed.map((e) => [Number(/inbox (\d+)$/.exec(e.subject)![1]), e.storedEmailId as string]));
  return {
    courier,
    sync,
    mcp,
    capabilities,
    storedEmailId: (n) => ids.get(n)!,
    id: (n) => decodeStoredEmailId(ids.get(n)!)!,
  };
}

async function call(client: Client, name: string, args: Json): Promise<Json> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = result.content?.[0]?.type === 'text' ? result.content[0].text : '';
  if (result.isError === true) throw new Error(`${name} failed: ${text}`);
  return (result.structuredContent ?? {}) as Json;
}

async function listEmails(client: Client, folder: string): Promise<Json[]> {
  return (await call(client, 'list_emails', { folders: [folder], direction: 'oldestFirst', pageSize: 100 })).emails as Json[];
}

type OnServer = { uid: number; flags: string[]; messageId: string };

/** The server's messages of one folder, by Message-ID, read over IMAP. */
async function onServer(courier: Courier, mailbox: string): Promise<Map<string, OnServer[]>> {
  return withImap(courier, 'carol', async (c) => {
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

const mid = (n: number, folder = 'inbox'): string => `<cj-${folder}-${n}@example.net>`;

function query<T = Json>(database: string, sql: string, params: unknown[] = []): T[] {
  const db = new Libsql(database, { readonly: true, timeout: 5_000 });
  try {
    return db.prepare(sql).all(params) as T[];
  } finally {
    db.close();
  }
}

/** Asks the account's sync actor for changes the way mail rules will; answers the change ids. */
async function ask(s: Setup, n: number, changes: ChangeAsk[]): Promise<number[]> {
  const reply = await s.sync.service.supervisor
    .ref('imap-sync:carol')
    .ask({ type: 'imap-sync.record-changes', messageId: s.id(n), requester: 'rule:courier', requestId: null, changes }, { reply: RecordChangesReply });
  if (reply.outcome !== 'recorded') throw new Error(`not recorded: ${reply.outcome}`);
  return reply.changes.map((c) => Number(c.changeId.slice(1)));
}

type Ended = { id: number; state: string; failure_reason: string | null; outcome: string | null; target_uid: number | null };

/** Waits until the changes ended (done or dead-lettered); answers each with its audit entry's outcome. */
async function ended(s: Setup, jobIds: number[], timeoutMs = 30_000): Promise<Ended[]> {
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
function localRows(s: Setup, messageId: string): Array<{ id: number; alias: string }> {
  return query(
    s.sync.database,
    `SELECT m.id, b.alias FROM messages m JOIN folder_bindings b ON b.id = m.binding_id
     WHERE m.state <> 'tombstoned' AND m.header_message_id = ? ORDER BY b.alias, m.id`,
    [messageId],
  );
}

/** After a run: the mirror of each mapped folder equals Courier (same UIDs, flags, bytes): nothing twice, nothing missing. */
async function mirrorEqualsServer(t: Test, s: Setup, when: string): Promise<void> {
  await s.sync.syncNow('carol');
  for (const [alias, box] of [
    ['inbox', 'INBOX'],
    ['work', 'INBOX.Work'],
    ['filed', 'INBOX.Filed'],
  ] as const) {
    const server = (await fetchAllOverImap(s.courier, 'carol', box)).map((m) => ({ uid: m.uid, flags: [...m.flags].sort(), sha256: m.sha256 }));
    t.same(readMirror(s.sync.database, 'carol', alias), server, `${alias}: the mirror equals Courier ${when}`);
  }
}

t.test('Courier: every change kind applied, followed locally, and a run duplicates nothing', { skip }, async (t) => {
  const s = await setup(t);
  t.notOk(s.capabilities.includes('MOVE') || s.capabilities.includes('CONDSTORE'), 'the paths without MOVE and CONDSTORE run');
  t.comment(`Courier offers: ${s.capabilities.filter((c) => /^(MOVE|UIDPLUS|CONDSTORE|QRESYNC)$/.test(c)).join(' ')}`);
  const flagsOf = async (n: number): Promise<string[] | undefined> => (await onServer(s.courier, 'INBOX')).get(mid(n))?.[0]?.flags;

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
  const [moved] = await ended(s, await ask(s, 5, [{ kind: 'relocate', targetPath: 'INBOX.Filed' }]));
  t.equal(moved!.outcome, 'applied');
  const filed = await onServer(s.courier, 'INBOX.Filed');
  t.notOk((await onServer(s.courier, 'INBOX')).has(mid(5)), 'relocate: left INBOX');
  t.equal(filed.get(mid(5))?.length, 1, 'relocate: once in Filed');
  t.equal(moved!.target_uid, filed.get(mid(5))![0]!.uid, 'the audit names its UID in INBOX.Filed (COPYUID)');
  t.same(
    (await listEmails(s.mcp, 'filed')).map((e) => e.storedEmailId),
    [s.storedEmailId(5)],
    'listed under filed with the same storedEmailId',
  );
  t.same(localRows(s, mid(5)), [{ id: s.id(5), alias: 'filed' }], 'one local row, the same one');

  // relocate into a folder the account does not map: it leaves the mirror.
  const [away] = await ended(s, await ask(s, 6, [{ kind: 'relocate', targetPath: 'INBOX.Elsewhere' }]));
  t.equal(away!.outcome, 'applied');
  t.equal((await onServer(s.courier, 'INBOX.Elsewhere')).get(mid(6))?.length, 1, 'relocate: in Elsewhere on the server');
  t.notOk((await onServer(s.courier, 'INBOX')).has(mid(6)));
  t.same(localRows(s, mid(6)), [], 'no longer mirrored');
  t.notOk(
    (await listEmails(s.mcp, 'inbox')).some((e) => e.storedEmailId === s.storedEmailId(6)),
    'gone from list_emails',
  );

  // copy into a mapped folder: stored under the target without a refetch.
  const [copied] = await ended(s, await ask(s, 7, [{ kind: 'copy', targetPath: 'INBOX.Work' }]));
  t.equal(copied!.outcome, 'applied');
  const work = await onServer(s.courier, 'INBOX.Work');
  t.equal(work.get(mid(7))?.length, 1, 'copy: once in Work');
  t.equal((await onServer(s.courier, 'INBOX')).get(mid(7))?.length, 1, 'copy: the original stays');
  t.same(
    localRows(s, mid(7)).map((r) => r.alias),
    ['inbox', 'work'],
    'one local row in each folder',
  );
  const workListed = await listEmails(s.mcp, 'work');
  const copy = workListed.find((e) => e.subject === 'Courier journal inbox 7');
  t.ok(copy, 'the copy is listed under work');
  t.not(copy?.storedEmailId, s.storedEmailId(7), 'under an id of its own');
  const content = await call(s.mcp, 'get_email_content', { storedEmailIds: [copy!.storedEmailId] });
  t.match(content.emails[0].body.text, /reference 7731-7/, 'the copy carries its content');

  // delete: tombstoned locally, expunged on the server, no other message touched.
  const [deleted] = await ended(s, await ask(s, 8, [{ kind: 'delete' }]));
  t.equal(deleted!.outcome, 'applied');
  t.notOk((await onServer(s.courier, 'INBOX')).has(mid(8)), 'delete: expunged');
  t.same(localRows(s, mid(8)), []);
  t.equal(query(s.sync.database, 'SELECT state FROM messages WHERE id = ?', [s.id(8)])[0]?.state, 'tombstoned', 'the row is tombstoned');
  t.notOk((await listEmails(s.mcp, 'inbox')).some((e) => e.storedEmailId === s.storedEmailId(8)));

  // set_mail_flags through MCP once.
  const asked = await call(s.mcp, 'set_mail_flags', {
    storedEmailId: s.storedEmailId(9),
    seen: true,
    flagged: true,
    keywordChange: 'add',
    keywords: ['Courier-Tool'],
    requestId: 'courier-1',
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
      keywords: ['courier-tool'],
      requestId: 'courier-1',
    });
    states = (again.recordedChanges as Json[]).map((c) => c.state);
    if (states.every((x) => x === 'completed')) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  t.same(states, ['completed', 'completed', 'completed'], 'the same request reads completed');
  t.same(await flagsOf(9), ['\\Flagged', '\\Seen', 'courier-tool'], 'set_mail_flags: on Courier');

  // The audit: one entry per change, the requester named, no content.
  const audit = query(s.sync.database, 'SELECT mutation, requester, outcome, detail FROM mutation_audit ORDER BY id');
  t.equal(audit.length, 15, 'one entry per change');
  t.ok(
    audit.every((a) => a.outcome === 'applied'),
    'every one applied',
  );
  t.same([...new Set(audit.map((a) => a.requester))], ['rule:courier', 'agent-courier']);
  t.notOk(JSON.stringify(audit).includes('7731'), 'no content in the audit');

  await mirrorEqualsServer(t, s, 'after a run');
  t.equal(localRows(s, mid(5)).length, 1, 'the relocated message once after the run');
  t.equal(localRows(s, mid(7)).length, 2, 'the copy and its original once each after the run');
});

t.test('Courier as shipped: a relocation and a deletion expunge their own UID only, never a message another client marked deleted', { skip }, async (t) => {
  const s = await setup(t);
  t.ok(s.capabilities.includes('UIDPLUS'), 'UIDPLUS offered');
  // Another client marked a message deleted without expunging it: no change of ours may remove it.
  await imapAdmin(s.courier).addFlags('carol', 'INBOX', (await onServer(s.courier, 'INBOX')).get(mid(10))![0]!.uid, ['\\Deleted']);

  const [flag] = await ended(s, await ask(s, 1, [{ kind: 'set-flagged', value: true }]));
  t.equal(flag!.outcome, 'applied');
  t.same((await onServer(s.courier, 'INBOX')).get(mid(1))?.[0]?.flags, ['\\Flagged'], 'set-flagged without CONDSTORE');

  const [moved] = await ended(s, await ask(s, 2, [{ kind: 'relocate', targetPath: 'INBOX.Filed' }]));
  t.equal(moved!.outcome, 'applied');
  const inbox = await onServer(s.courier, 'INBOX');
  t.notOk(inbox.has(mid(2)), 'left INBOX');
  t.equal((await onServer(s.courier, 'INBOX.Filed')).get(mid(2))?.length, 1, 'once in INBOX.Filed');
  t.ok(inbox.has(mid(10)), 'the message another client marked deleted is still there');
  t.same(localRows(s, mid(2)), [{ id: s.id(2), alias: 'filed' }], 'the local id follows');

  const [deleted] = await ended(s, await ask(s, 3, [{ kind: 'delete' }]));
  t.equal(deleted!.outcome, 'applied');
  const after = await onServer(s.courier, 'INBOX');
  t.notOk(after.has(mid(3)), 'deleted');
  t.ok(after.has(mid(10)), 'UID EXPUNGE left the other deleted message alone');
  await mirrorEqualsServer(t, s, 'after a run');
});

t.test('Courier without UIDPLUS (neither MOVE nor UIDPLUS): a copy is found without COPYUID; a relocation and a deletion are refused', { skip }, async (t) => {
  const s = await setup(t, WITHOUT_UIDPLUS);
  t.notOk(s.capabilities.includes('MOVE') || s.capabilities.includes('UIDPLUS'), `both absent (${s.capabilities.join(' ')})`);
  await imapAdmin(s.courier).addFlags('carol', 'INBOX', (await onServer(s.courier, 'INBOX')).get(mid(10))![0]!.uid, ['\\Deleted']);

  const [moved] = await ended(s, await ask(s, 1, [{ kind: 'relocate', targetPath: 'INBOX.Filed' }]));
  t.ok((await onServer(s.courier, 'INBOX')).has(mid(10)), 'the message another client marked deleted is still there');
  t.match(moved, {
    state: 'dead',
    outcome: 'refused',
    failure_reason: 'The server can neither move a message nor expunge one alone (no MOVE, no UIDPLUS), so nothing was moved.',
  });
  t.ok((await onServer(s.courier, 'INBOX')).has(mid(1)), 'nothing moved');
  t.notOk((await onServer(s.courier, 'INBOX.Filed')).has(mid(1)), 'no copy left behind');
  t.same(localRows(s, mid(1)), [{ id: s.id(1), alias: 'inbox' }]);

  // A copy needs neither: found by what the placement recorded.
  const [copied] = await ended(s, await ask(s, 2, [{ kind: 'copy', targetPath: 'INBOX.Work' }]));
  t.equal(copied!.outcome, 'applied');
  const work = await onServer(s.courier, 'INBOX.Work');
  t.equal(work.get(mid(2))?.length, 1, 'copied once');
  t.equal(copied!.target_uid, work.get(mid(2))![0]!.uid, 'its UID found without COPYUID');

  const [deleted] = await ended(s, await ask(s, 3, [{ kind: 'delete' }]));
  t.match(deleted, { state: 'dead', outcome: 'refused', failure_reason: 'The server cannot expunge one message alone (no UIDPLUS), so nothing was deleted.' });
  const inbox = await onServer(s.courier, 'INBOX');
  t.ok(inbox.has(mid(3)), 'nothing deleted');
  t.ok(inbox.has(mid(10)), 'and the other deleted message is still there');
  t.same(localRows(s, mid(3)), [{ id: s.id(3), alias: 'inbox' }], 'still mirrored');
  await mirrorEqualsServer(t, s, 'after a run');
});
