/**
 * The change journal end to end on a real Dovecot: `set_mail_flags` through
 * the MCP SDK's own client, read back on the server with IMAP; the states a
 * change answers; request identifiers; a change racing one made on the
 * server; the other change kinds (relocate, copy, delete) asked of the sync
 * actor as mail rules will ask; refusals that dead-letter; the audit; and
 * that nothing of the mail reaches a log line.
 */
import { chownSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import Libsql from 'libsql';
import t, { type Test } from 'tap';
import { RecordChangesReply, type ChangeAsk } from '../../../actors/imap-sync/protocol.ts';
import { decodeStoredEmailId } from '../../../actors/mail-query/protocol/stored-email-id.ts';
import { startDovecot, type Dovecot } from '../../harness/dovecot.ts';
import { mailAdmin, mailboxDir } from '../../harness/doveadm.ts';
import { appendMessages } from '../../harness/place-mail.ts';
import { tempDir } from '../../helpers/daemon.ts';
import { adminCall, adminEndpointSection, query } from '../../helpers/admin-client.ts';
import { sensitiveStrings } from '../../helpers/privacy.ts';
import { startSyncService, type SyncService } from '../../helpers/sync-service.ts';
import { eventually } from '../../helpers/eventually.ts';

t.setTimeout(300_000);

type Json = Record<string, any>;
const FULL_KEY = 'key-full-0123456789abcdef';
const ADMIN_KEYS = { operator: 'key-operator-0123456789abcdef', reader: 'key-admin-reader-0123456789ab', nothing: 'key-admin-nothing-0123456789a' };
const READER_KEY = 'key-reader-0123456789abcdef';

function message(n: number, folder: string): Buffer {
  return Buffer.from(
    [
      `From: Orla Sender ${n} <orla.sender${n}@example.org>`,
      'To: Ann Owner <ann.owner@example.org>',
      `Subject: Quarterly budget ${folder} review number ${n}`,
      `Message-ID: <journal-${folder}-${n}@example.org>`,
      `Date: Mon, ${String(n + 1).padStart(2, '0')} Nov 2026 10:00:00 +0000`,
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset=utf-8',
      '',
      `Body of message ${n} in ${folder}: the invoice numbers are 4411-${n}.`,
      '',
    ].join('\r\n'),
  );
}

type Setup = { dovecot: Dovecot; sync: SyncService; full: Client; reader: Client; raws: Buffer[] };

/** Dovecot's ACL plugin, so a folder can be made read-only for its owner (a `dovecot-acl` file granting lookup and read only). */
const ACL_CONFIG = 'mail_plugins = $mail_plugins acl\nprotocol imap {\n  mail_plugins = $mail_plugins acl imap_acl\n}\nplugin {\n  acl = vfile\n}\n';

async function setup(t: Test, options: { locked?: boolean } = {}): Promise<Setup> {
  const dir = tempDir(t);
  const dovecot = await startDovecot({ users: [{ user: 'ann', password: 'pw-ann' }], ...(options.locked ? { extraConfig: ACL_CONFIG } : {}) });
  t.teardown(() => dovecot.stop());
  const admin = mailAdmin(dovecot);
  await admin.createMailbox('ann', 'Work');
  await admin.createMailbox('ann', 'Filed');
  if (options.locked) {
    await admin.createMailbox('ann', 'Locked');
    await appendMessages(dovecot, 'ann', 'Locked', [{ raw: message(9, 'locked') }]);
    const folder = mailboxDir(dovecot, 'ann', 'Locked');
    const acl = join(folder, 'dovecot-acl');
    writeFileSync(acl, 'owner lr\n');
    const owner = statSync(folder);
    chownSync(acl, owner.uid, owner.gid);
  }
  const raws = [...[1, 2, 3, 4].map((n) => message(n, 'inbox')), ...[1, 2].map((n) => message(n, 'work'))];
  await appendMessages(
    dovecot,
    'ann',
    'INBOX',
    raws.slice(0, 4).map((raw) => ({ raw })),
  );
  await appendMessages(
    dovecot,
    'ann',
    'Work',
    raws.slice(4).map((raw) => ({ raw, flags: ['$Label1'] })),
  );
  const key = (name: string, secret: string): string => {
    writeFileSync(join(dir, name), secret, { mode: 0o600 });
    return `file:${join(dir, name)}`;
  };
  const sync = await startSyncService(
    dir,
    dovecot,
    [
      {
        id: 'ann',
        user: 'ann',
        folders: [
          { Alias: 'inbox' },
          { Alias: 'work', Path: 'Work' },
          { Alias: 'filed', Path: 'Filed' },
          ...(options.locked ? [{ Alias: 'locked', Path: 'Locked' }] : []),
        ],
      },
    ],
    {
      McpEndpoint: {
        Enabled: true,
        BindAddress: '127.0.0.1',
        Port: 0,
        Authentication: [
          { ApiKey: { Name: 'agent-full', SecretReference: key('mcp-full.key', FULL_KEY), Lifetime: 'NoLimit' } },
          { ApiKey: { Name: 'agent-reader', SecretReference: key('mcp-reader.key', READER_KEY), Lifetime: 'NoLimit' }, Permissions: ['service.mail.read'] },
        ],
        RateLimiting: { TokenCapacity: 100_000, TokensPerReplenishmentPeriod: 100_000 },
      },
      AdminEndpoint: adminEndpointSection(dir, 0, ADMIN_KEYS),
      // Runs only when a test asks: what the tool writes must show without one.
      MailSynchronization: { Interval: '01:00:00' },
    },
  );
  t.teardown(() => sync.service.stop());
  await sync.syncNow('ann');
  const connect = async (secret: string): Promise<Client> => {
    const client = new Client({ name: 'journal-test', version: '1.0.0' });
    const url = new URL(`http://127.0.0.1:${sync.service.mcp!.port}/mcp`);
    await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${secret}` } } }));
    t.teardown(() => client.close());
    return client;
  };
  return { dovecot, sync, full: await connect(FULL_KEY), reader: await connect(READER_KEY), raws };
}

async function call(client: Client, name: string, args: Json): Promise<{ ok: boolean; value: Json; text: string }> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = result.content?.[0]?.type === 'text' ? result.content[0].text : '';
  return { ok: result.isError !== true, value: (result.structuredContent ?? {}) as Json, text };
}

async function listed(client: Client, folder: string): Promise<Json[]> {
  const { value } = await call(client, 'list_emails', { folders: [folder], direction: 'oldestFirst', pageSize: 100 });
  return value.emails as Json[];
}

/** The server's flags of a message, by its Message-ID, read over IMAP. */
async function serverFlags(dovecot: Dovecot, mailbox: string, n: number, folder: string): Promise<string[] | null> {
  const all = await mailAdmin(dovecot).fetchAll('ann', mailbox);
  const wanted = `<journal-${folder}-${n}@example.org>`;
  for (const m of all) {
    const raw = await rawOf(dovecot, mailbox, m.uid);
    if (raw.includes(wanted)) return [...m.flags].sort();
  }
  return null;
}

async function rawOf(dovecot: Dovecot, mailbox: string, uid: number): Promise<string> {
  const { withImap } = await import('../../harness/imap-client.ts');
  let text = '';
  await withImap(dovecot, 'ann', async (client) => {
    await client.mailboxOpen(mailbox, { readOnly: true });
    const msg = await client.fetchOne(String(uid), { source: true }, { uid: true });
    text = msg && msg.source !== undefined ? msg.source.toString('latin1') : '';
  });
  return text;
}

function auditRows(database: string): Json[] {
  const db = new Libsql(database, { readonly: true });
  try {
    return db
      .prepare('SELECT mutation, message_id, source_path, target_path, source_uid, target_uid, detail, requester, outcome FROM mutation_audit ORDER BY id')
      .all() as Json[];
  } finally {
    db.close();
  }
}

t.test('set_mail_flags: recorded at once, applied on the server, states and idempotence', async (t) => {
  const { dovecot, sync, full, reader, raws } = await setup(t);
  const inbox = await listed(full, 'inbox');
  t.equal(inbox.length, 4);
  const first = inbox[0]!;

  // A narrowed credential neither sees nor can call it.
  const readerTools = (await reader.listTools()).tools.map((tool) => tool.name);
  t.notOk(readerTools.includes('set_mail_flags'), 'absent from a read-only grant');
  await t.rejects(reader.callTool({ name: 'set_mail_flags', arguments: { storedEmailId: first.storedEmailId, seen: true } }), /Unknown tool: 'set_mail_flags'/);
  const tool = (await full.listTools()).tools.find((x) => x.name === 'set_mail_flags');
  t.same(tool?.annotations, { title: 'Set mail flags', readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true });

  const asked = await call(full, 'set_mail_flags', {
    storedEmailId: first.storedEmailId,
    seen: true,
    flagged: true,
    keywordChange: 'add',
    keywords: ['Project-X', '$Label2'],
    requestId: 'req-1',
  });
  t.ok(asked.ok, asked.text);
  const changes = asked.value.recordedChanges as Json[];
  t.same(
    changes.map((c) => [c.change, c.seen ?? c.flagged ?? c.keywords]),
    [
      ['set-seen', true],
      ['set-flagged', true],
      ['add-keywords', ['$label2', 'project-x']],
    ],
    'each change states the value it writes (keywords folded)',
  );
  t.ok(
    changes.every((c) => ['pending', 'converging', 'completed'].includes(c.state)),
    'answered before or while the server applies it',
  );

  // The local copy shows the requested state at once, marked unconfirmed until the server has it.
  const shown = (await listed(full, 'inbox'))[0]!;
  t.ok(shown.flags.includes('\\Seen') && shown.flags.includes('\\Flagged'), 'the listing shows the requested flags');

  const done = await eventually('the changes to complete', async () => {
    const again = await call(full, 'set_mail_flags', {
      storedEmailId: first.storedEmailId,
      flagged: true,
      seen: true,
      keywords: ['$label2', 'project-x'],
      keywordChange: 'add',
      requestId: 'req-1',
    });
    return (again.value.recordedChanges as Json[]).every((c) => c.state === 'completed') ? again.value : null;
  });
  t.same(
    (done.recordedChanges as Json[]).map((c) => c.changeId),
    changes.map((c) => c.changeId),
    'the same request answers the same records',
  );
  t.ok((done.recordedChanges as Json[]).every((c) => c.outcome === 'applied'));
  const onServer = await serverFlags(dovecot, 'INBOX', 1, 'inbox');
  t.same(onServer, ['$label2', '\\Flagged', '\\Seen', 'project-x'].sort(), 'the server holds the flags and keywords');
  const confirmed = (await listed(full, 'inbox'))[0]!;
  t.notOk(confirmed.flagChangesPending, 'no longer marked unconfirmed');
  t.ok(confirmed.flags.includes('\\Flagged'));
  const flaggedOnly = await call(full, 'list_emails', { isFlagged: true });
  t.same(
    (flaggedOnly.value.emails as Json[]).map((e) => e.storedEmailId),
    [first.storedEmailId],
    'the isFlagged filter reads it',
  );

  // The same identifier for another change is refused, and nothing is recorded.
  const conflict = await call(full, 'set_mail_flags', { storedEmailId: first.storedEmailId, seen: false, requestId: 'req-1' });
  t.notOk(conflict.ok);
  t.equal(conflict.value.code, 51004, conflict.text);

  // Clearing: the flags go away on the server; a replacement states the whole set.
  const cleared = await call(full, 'set_mail_flags', {
    storedEmailId: first.storedEmailId,
    seen: false,
    flagged: false,
    keywordChange: 'replace',
    keywords: [],
  });
  t.ok(cleared.ok, cleared.text);
  t.same((cleared.value.recordedChanges as Json[]).find((c) => c.change === 'set-keywords')?.keywords, [], 'the whole (empty) set is stated');
  await eventually('the flags to clear on the server', async () => {
    const flags = await serverFlags(dovecot, 'INBOX', 1, 'inbox');
    return flags !== null && flags.length === 0;
  });

  // Bad input: refused with a sentence, nothing recorded.
  const malformed = await call(full, 'set_mail_flags', { storedEmailId: 'not-an-id', seen: true });
  t.equal(malformed.value.code, 51001);
  const nothing = await call(full, 'set_mail_flags', { storedEmailId: first.storedEmailId });
  t.equal(nothing.value.code, 51001, 'a call that changes nothing is refused');
  const badKeyword = await call(full, 'set_mail_flags', { storedEmailId: first.storedEmailId, keywordChange: 'add', keywords: ['two words'] });
  t.equal(badKeyword.value.code, 51001);
  const unknown = await call(full, 'set_mail_flags', { storedEmailId: 'e9zzzz', seen: true });
  t.equal(unknown.value.code, 53001, 'a well-formed id naming nothing is not found');

  // The audit names each applied change, with the credential's name and no mail content.
  const audit = auditRows(sync.database);
  t.ok(audit.length >= 6, `audited (${audit.length})`);
  t.ok(
    audit.every((a) => a.requester === 'agent-full' && a.source_path === 'INBOX' && a.outcome === 'applied'),
    'requester, folder and outcome',
  );
  const logText = sync.logs.raw();
  for (const secret of [...sensitiveStrings(raws), FULL_KEY, READER_KEY, 'project-x'])
    t.notOk(logText.includes(secret), `the log does not carry ${secret.slice(0, 12)}…`);
});

t.test('a change racing one made on the server: the server wins on the same flag, not on another', async (t) => {
  const { dovecot, sync, full } = await setup(t);
  const inbox = await listed(full, 'inbox');
  const second = inbox[1]!;
  const third = inbox[2]!;
  const admin = mailAdmin(dovecot);
  const uidOf = (e: Json): Promise<number> => uidByMessageId(dovecot, 'INBOX', e);
  // Stop applying for a moment: hold the writer by asking while the server changes behind our back.
  // The server sets \Seen on the second message after the mirror last read it.
  await admin.addFlags('ann', 'INBOX', await uidOf(second), ['\\Seen']);
  const racing = await call(full, 'set_mail_flags', { storedEmailId: second.storedEmailId, seen: false });
  t.ok(racing.ok);
  const ended = await eventually('the racing change to end', async () => {
    const rows = auditRows(sync.database).filter((a) => a.message_id === decodeStoredEmailId(second.storedEmailId));
    return rows.length > 0 ? rows : null;
  });
  t.equal(ended[0]!.outcome, 'superseded', 'the server changed \\Seen after the agent read it: the server wins');
  t.same(await serverFlags(dovecot, 'INBOX', 2, 'inbox'), ['\\Seen'], 'the server keeps its own change');
  const after = (await listed(full, 'inbox')).find((e) => e.storedEmailId === second.storedEmailId)!;
  t.same(after.flags, ['\\Seen'], 'the local copy follows the server');
  t.notOk(after.flagChangesPending);

  // A change on another flag is no conflict: both stand.
  await admin.addFlags('ann', 'INBOX', await uidOf(third), ['\\Answered']);
  const orthogonal = await call(full, 'set_mail_flags', { storedEmailId: third.storedEmailId, flagged: true });
  t.ok(orthogonal.ok);
  await eventually('the orthogonal change to apply', async () => {
    const flags = await serverFlags(dovecot, 'INBOX', 3, 'inbox');
    return flags?.includes('\\Flagged') && flags.includes('\\Answered');
  });
});

async function uidByMessageId(dovecot: Dovecot, mailbox: string, email: Json): Promise<number> {
  const n = Number(/number (\d+)/.exec(email.subject)![1]);
  const folder = /budget (\w+) review/.exec(email.subject)![1]!;
  for (const m of await mailAdmin(dovecot).fetchAll('ann', mailbox))
    if ((await rawOf(dovecot, mailbox, m.uid)).includes(`<journal-${folder}-${n}@example.org>`)) return m.uid;
  throw new Error('not on the server');
}

/** Asks the account's sync actor for changes the way mail rules will. */
async function askChanges(sync: SyncService, messageId: number, changes: ChangeAsk[]): Promise<RecordChangesReply> {
  return sync.service.supervisor
    .ref('imap-sync:ann')
    .ask({ type: 'imap-sync.record-changes', messageId, requester: 'rule:test', requestId: null, changes }, { reply: RecordChangesReply });
}

t.test('relocate, copy and delete keep local ids and the audit consistent', async (t) => {
  const { dovecot, sync, full } = await setup(t);
  const inbox = await listed(full, 'inbox');
  const [toMove, toCopy, toDelete] = [inbox[0]!, inbox[1]!, inbox[2]!];
  const id = (e: Json): number => decodeStoredEmailId(e.storedEmailId)!;

  t.equal((await askChanges(sync, id(toMove), [{ kind: 'relocate', targetPath: 'Filed' }])).outcome, 'recorded');
  t.equal((await askChanges(sync, id(toCopy), [{ kind: 'copy', targetPath: 'Work' }])).outcome, 'recorded');
  t.equal((await askChanges(sync, id(toDelete), [{ kind: 'delete' }])).outcome, 'recorded');
  await eventually('three audit entries', async () => (auditRows(sync.database).length >= 3 ? true : null));
  const audit = auditRows(sync.database);
  t.same(
    audit.map((a) => [a.mutation, a.outcome, a.target_path]),
    [
      ['relocate', 'applied', 'Filed'],
      ['copy', 'applied', 'Work'],
      ['delete', 'applied', null],
    ],
  );
  t.ok(audit[0]!.target_uid > 0 && audit[1]!.target_uid > 0, 'target UIDs known from COPYUID');

  // The server: moved out of INBOX into Filed, copied into Work, deleted.
  t.equal(await serverFlags(dovecot, 'INBOX', 1, 'inbox'), null, 'moved away from INBOX');
  t.not(await serverFlags(dovecot, 'Filed', 1, 'inbox'), null, 'moved into Filed');
  t.not(await serverFlags(dovecot, 'INBOX', 2, 'inbox'), null, 'the copy left the original');
  t.not(await serverFlags(dovecot, 'Work', 2, 'inbox'), null, 'copied into Work');
  t.equal(await serverFlags(dovecot, 'INBOX', 3, 'inbox'), null, 'deleted');

  // Locally, without a refetch: the moved email keeps its id under its new folder.
  const filed = await listed(full, 'filed');
  t.same(
    filed.map((e) => e.storedEmailId),
    [toMove.storedEmailId],
    'the moved email keeps its storedEmailId',
  );
  const work = await listed(full, 'work');
  t.equal(work.length, 3, 'the copy is listed in work beside its two');
  t.notOk(
    (await listed(full, 'inbox')).some((e) => e.storedEmailId === toDelete.storedEmailId || e.storedEmailId === toMove.storedEmailId),
    'gone from inbox',
  );
  const content = await call(full, 'get_email_content', { storedEmailIds: [work.find((e) => e.subject === toCopy.subject)!.storedEmailId] });
  t.match(content.value.emails[0].body.text, /invoice numbers are 4411-2/, 'the copy carries its content');

  // A run after all this finds nothing twice.
  await sync.syncNow('ann');
  t.equal((await listed(full, 'filed')).length, 1, 'no duplicate in filed after a run');
  t.equal((await listed(full, 'work')).length, 3, 'no duplicate in work after a run');
  t.equal((await listed(full, 'inbox')).length, 2);
});

t.test('a change the server refuses is dead-lettered with a constant sentence; retry and drop', async (t) => {
  const { sync, full } = await setup(t);
  const inbox = await listed(full, 'inbox');
  const id = decodeStoredEmailId(inbox[0]!.storedEmailId)!;
  const reply = await askChanges(sync, id, [{ kind: 'relocate', targetPath: 'No/Such/Folder' }]);
  t.equal(reply.outcome, 'recorded');
  const changeId = reply.outcome === 'recorded' ? reply.changes[0]!.changeId : '';
  const db = (): InstanceType<typeof Libsql> => new Libsql(sync.database, { readonly: true });
  const dead = await eventually('the change to be dead-lettered', async () => {
    const conn = db();
    try {
      return conn.prepare("SELECT type, state, failure_class, failure_reason FROM jobs WHERE id = ? AND state = 'dead'").get([Number(changeId.slice(1))]) as
        | Json
        | undefined;
    } finally {
      conn.close();
    }
  });
  t.match(dead, {
    type: 'mailbox-change',
    state: 'dead',
    failure_class: 'server-refused',
    failure_reason: 'The server refused to place the message in the target folder.',
  });
  t.equal(auditRows(sync.database).at(-1)!.outcome, 'refused', 'the refusal is audited');
  t.ok(
    (await listed(full, 'inbox')).some((e) => e.storedEmailId === inbox[0]!.storedEmailId),
    'the message stays where it was',
  );
  // Through the administrative routes: listed as a dead letter of its own type, audited, retried (meets the same refusal), dropped.
  const admin = `http://127.0.0.1:${sync.service.admin!.port}/api/admin`;
  const operator = ADMIN_KEYS.operator;
  const deadLetters = (await adminCall(`${admin}/jobs/dead-letters${query({ type: 'mailbox-change', account: 'ann' })}`, { apiKey: operator })).json();
  t.match(deadLetters.jobs, [{ job: changeId, type: 'mailbox-change', account: 'ann', failureClassification: 'server-refused' }]);
  const audited = (await adminCall(`${admin}/mailbox/mutations/audit${query({ account: 'ann', mutation: 'relocate' })}`, { apiKey: operator })).json();
  t.match(audited.entries, [
    {
      mutation: 'relocate',
      storedEmailId: inbox[0]!.storedEmailId,
      sourceFolderPath: 'INBOX',
      targetFolderPath: 'No/Such/Folder',
      requester: 'rule:test',
      outcome: 'refused',
    },
  ]);
  const retried = await adminCall(`${admin}/jobs/dead-letters/retry`, { method: 'POST', apiKey: operator, json: { job: changeId } });
  t.same(retried.json(), { job: changeId, outcome: 'Accepted' });
  await eventually('the retried change to be refused again', async () => {
    const again = (await adminCall(`${admin}/mailbox/mutations/audit${query({ account: 'ann', mutation: 'relocate' })}`, { apiKey: operator })).json();
    return again.entries.length === 2 ? again : null;
  });
  await eventually('the change to be dead again', async () => {
    const page = (await adminCall(`${admin}/jobs/dead-letters${query({ type: 'mailbox-change' })}`, { apiKey: operator })).json();
    return page.jobs.length === 1 ? page : null;
  });
  t.same((await adminCall(`${admin}/jobs/dead-letters/drop`, { method: 'POST', apiKey: operator, json: { job: changeId } })).json(), {
    job: changeId,
    outcome: 'Accepted',
  });
  t.same((await adminCall(`${admin}/jobs/dead-letters/retry`, { method: 'POST', apiKey: operator, json: { job: changeId } })).json(), {
    job: changeId,
    outcome: 'JobNotDeadLettered',
  });
});

t.test('a folder that is read-only on the server: the flag change is dead-lettered, the local copy returns to the server state', async (t) => {
  const { sync, full } = await setup(t, { locked: true });
  const [locked] = await listed(full, 'locked');
  t.ok(locked, 'the read-only folder is mirrored');
  const asked = await call(full, 'set_mail_flags', { storedEmailId: locked!.storedEmailId, flagged: true, requestId: 'locked-1' });
  t.ok(asked.ok, asked.text);
  const ended = await eventually('the change to be dead-lettered', async () => {
    const again = await call(full, 'set_mail_flags', { storedEmailId: locked!.storedEmailId, flagged: true, requestId: 'locked-1' });
    const change = (again.value.recordedChanges as Json[])[0]!;
    return change.state === 'dead-lettered' ? change : null;
  });
  t.equal(ended.outcome, 'refused');
  const db = new Libsql(sync.database, { readonly: true });
  t.teardown(() => db.close());
  t.match(db.prepare("SELECT failure_class, failure_reason FROM jobs WHERE type = 'mailbox-change'").get([]), {
    failure_class: 'server-refused',
    failure_reason: 'The folder is read-only on the server.',
  });
  const after = (await listed(full, 'locked'))[0]!;
  t.notOk(after.flags?.includes('\\Flagged'), 'the requested flag is no longer shown');
  t.notOk(after.flagChangesPending);
  t.equal(auditRows(sync.database).at(-1)!.outcome, 'refused');
  t.ok(
    sync.logs.events('journal.change-refused').some((l) => l.reason === 'read-only'),
    'logged with its reason word',
  );
});
