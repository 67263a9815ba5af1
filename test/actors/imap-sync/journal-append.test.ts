/**
 * The journal's placements end to end on a real Dovecot (issue 13): the
 * outbox's sent copies and drafts appended through the account's sync
 * actor, and the removal of what an append placed. The outbox's rows are
 * written here with SQL, as the outbox actor will write them.
 *
 * - a sent copy goes to the folder mapped under `sent` (not the SPECIAL-USE
 *   one), once, with `\Seen`; the sync stores it once; asking again with
 *   the same requestId answers the same job; the audit names it;
 * - without a mapping, to the folder marked `\Sent`, mirrored or not;
 * - a draft with `\Draft` in the drafts folder; an update appends the new
 *   revision and removes the old one by the UID the server reported;
 * - an APPEND whose answer is lost (the connection cut while the server's
 *   answer is held) is not repeated: the retry finds the copy by Message-ID;
 * - no sent folder at all: `no-folder`, ended, not retried;
 * - an append dead-lettered by the server's refusal: listed as a dead
 *   letter, its removal ends `gone` with nothing removed, and an operator's
 *   retry after that places nothing (`withdrawn`); the admin audit listing
 *   leaves placements out without a warning;
 * - the access token for SMTP: refused for a password account, answered
 *   (and renewed when asked) for an OAuth one.
 */
import { chownSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import Libsql from 'libsql';
import t, { type Test } from 'tap';
import {
  AccessTokenReply,
  PlacementReply,
  RecordPlacementReply,
  StoreRefreshTokenReply,
  type RecordAppend,
  type RecordRemoval,
} from '../../../actors/imap-sync/protocol.ts';
import { newKeyRing } from '../../../runtime/keyring/keyring.ts';
import { readPlacement } from '../../../runtime/store/mailbox/placements.ts';
import { openStore } from '../../../runtime/store/open.ts';
import { startService } from '../../../service/app.ts';
import { mailAdmin, mailboxDir } from '../../harness/doveadm.ts';
import { startDovecot, type Dovecot } from '../../harness/dovecot.ts';
import { startFaultProxy, type FaultProxy } from '../../harness/fault-proxy.ts';
import { withImap } from '../../harness/imap-client.ts';
import { adminCall, adminEndpointSection, query } from '../../helpers/admin-client.ts';
import { tempDir, writeConfig } from '../../helpers/daemon.ts';
import { captureLog } from '../../helpers/log-capture.ts';
import { startSyncService, type SyncService } from '../../helpers/sync-service.ts';
import { eventually } from '../../helpers/eventually.ts';

t.setTimeout(300_000);

type Json = Record<string, any>;
const ADMIN_KEYS = { operator: 'key-operator-0123456789abcdef', reader: 'key-admin-reader-0123456789ab', nothing: 'key-admin-nothing-0123456789a' };
/** Dovecot's ACL plugin, so a folder can refuse APPEND to its owner (a `dovecot-acl` granting lookup and read only). */
const ACL_CONFIG = 'mail_plugins = $mail_plugins acl\nprotocol imap {\n  mail_plugins = $mail_plugins acl imap_acl\n}\nplugin {\n  acl = vfile\n}\n';
/** The harness's Sent folder neither created nor marked: an account with no sent folder at all. */
const NO_SENT = 'namespace inbox {\n  mailbox Sent {\n    special_use =\n    auto = no\n  }\n}\n';

function mime(messageId: string, subject: string): Buffer {
  return Buffer.from(
    [
      'From: Ann Owner <ann.owner@example.org>',
      'To: Orla Recipient <orla@example.org>',
      `Subject: ${subject}`,
      `Message-ID: ${messageId}`,
      'Date: Mon, 23 Nov 2026 10:00:00 +0000',
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset=utf-8',
      '',
      `The body of ${subject}.`,
      '',
    ].join('\r\n'),
  );
}

type Setup = { dovecot: Dovecot; sync: SyncService; proxy: FaultProxy | null; dir: string };

async function setup(
  t: Test,
  o: { folders: Array<{ Alias: string; Path?: string }>; extraConfig?: string; proxy?: boolean; admin?: boolean; create?: string[] },
): Promise<Setup> {
  const dir = tempDir(t);
  const dovecot = await startDovecot({ users: [{ user: 'ann', password: 'pw-ann' }], ...(o.extraConfig ? { extraConfig: o.extraConfig } : {}) });
  t.teardown(() => dovecot.stop());
  for (const folder of o.create ?? []) await mailAdmin(dovecot).createMailbox('ann', folder);
  const proxy = o.proxy ? await startFaultProxy({ host: dovecot.host, port: dovecot.port }) : null;
  if (proxy) t.teardown(() => proxy.close());
  const sync = await startSyncService(dir, dovecot, [{ id: 'ann', user: 'ann', folders: o.folders, ...(proxy ? { port: proxy.port } : {}) }], {
    ...(o.admin ? { AdminEndpoint: adminEndpointSection(dir, 0, ADMIN_KEYS) } : {}),
    // Runs only when a test asks (and when the watch sees a mapped folder change).
    MailSynchronization: { Interval: '01:00:00' },
  });
  t.teardown(() => sync.service.stop());
  await sync.syncNow('ann');
  return { dovecot, sync, proxy, dir };
}

const actor = (sync: SyncService) => sync.service.supervisor.ref('imap-sync:ann');

function recordAppend(sync: SyncService, msg: Omit<RecordAppend, 'type'>): Promise<RecordPlacementReply> {
  return actor(sync).ask({ type: 'imap-sync.record-append', ...msg }, { reply: RecordPlacementReply });
}

function recordRemoval(sync: SyncService, msg: Omit<RecordRemoval, 'type'>): Promise<RecordPlacementReply> {
  return actor(sync).ask({ type: 'imap-sync.record-removal', ...msg }, { reply: RecordPlacementReply });
}

function placementOf(sync: SyncService, job: number): Promise<PlacementReply> {
  return actor(sync).ask({ type: 'imap-sync.placement', job }, { reply: PlacementReply });
}

/** Waits until the job has ended one way or another, and answers its placement. */
async function ended(sync: SyncService, job: number, timeoutMs = 30_000): Promise<PlacementReply> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const placement = await placementOf(sync, job);
    if (['completed', 'dead-lettered', 'dropped'].includes(placement.state)) return placement;
    if (Date.now() > deadline) throw new Error(`job ${job} did not end: ${JSON.stringify(placement)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function withDb<T>(database: string, fn: (db: InstanceType<typeof Libsql>) => T): T {
  const db = new Libsql(database, { timeout: 5_000 });
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

/** An outgoing email as the outbox records it (stage Sent): its id and Message-ID. */
function insertOutgoing(database: string, n: number): { id: number; messageId: string } {
  const messageId = `<sent-copy-${n}.${Date.now()}@example.org>`;
  const raw = mime(messageId, `Sent copy number ${n}`);
  const id = withDb(database, (db) =>
    Number(
      db
        .prepare(
          `INSERT INTO outgoing_emails (account_id, requester, idempotency_key, fingerprint, origin, message_id, envelope_from, raw_mime, size_bytes,
             stage, due_at, recorded_at, ended_at)
           VALUES ('ann', 'agent-test', ?, 'fp', 'new', ?, 'ann.owner@example.org', ?, ?, 'Sent', 0, 0, 0)`,
        )
        .run([`key-${n}`, messageId, raw, raw.length]).lastInsertRowid,
    ),
  );
  return { id, messageId };
}

/** A held draft (revision 1): its id and Message-ID. */
function insertDraft(database: string, n: number): { id: number; messageId: string } {
  const messageId = `<draft-${n}-r1@example.org>`;
  const id = withDb(database, (db) =>
    Number(
      db
        .prepare(
          `INSERT INTO drafts (account_id, requester, message_id, raw_mime, recipients, state, created_at, updated_at)
           VALUES ('ann', 'agent-test', ?, ?, '[]', 'held', 0, 0)`,
        )
        .run([messageId, mime(messageId, `Draft ${n} revision 1`)]).lastInsertRowid,
    ),
  );
  return { id, messageId };
}

/** The draft's next revision, in place (as the outbox keeps only the current one), with a new Message-ID. */
function reviseDraft(database: string, id: number, n: number, revision: number): string {
  const messageId = `<draft-${n}-r${revision}@example.org>`;
  withDb(database, (db) =>
    db
      .prepare('UPDATE drafts SET revision = ?, message_id = ?, raw_mime = ?, updated_at = 1 WHERE id = ?')
      .run([revision, messageId, mime(messageId, `Draft ${n} revision ${revision}`), id]),
  );
  return messageId;
}

/** Every copy on the server of the message with this Message-ID in the folder: UID and flags. */
async function serverCopies(dovecot: Dovecot, mailbox: string, messageId: string): Promise<Array<{ uid: number; flags: string[] }>> {
  return withImap(dovecot, 'ann', async (client) => {
    await client.mailboxOpen(mailbox, { readOnly: true });
    const copies: Array<{ uid: number; flags: string[] }> = [];
    for await (const msg of client.fetch('1:*', { uid: true, flags: true, envelope: true })) {
      if (msg.envelope?.messageId === messageId) copies.push({ uid: msg.uid, flags: [...(msg.flags ?? [])].filter((f) => f !== '\\Recent').sort() });
    }
    return copies;
  }).catch((err: { responseStatus?: string }) => {
    if (err.responseStatus === 'NO') return [];
    throw err;
  });
}

async function folderSize(dovecot: Dovecot, mailbox: string): Promise<number> {
  return (await mailAdmin(dovecot).status('ann', mailbox)).messages;
}

/** Live rows of the mirror holding this Message-ID, with the alias they are stored under. */
function storedCopies(database: string, messageId: string): Array<{ id: number; alias: string; uid: number }> {
  return withDb(
    database,
    (db) =>
      db
        .prepare(
          `SELECT m.id, b.alias, m.uid FROM messages m JOIN folder_bindings b ON b.id = m.binding_id
           WHERE m.header_message_id = ? AND m.state <> 'tombstoned' ORDER BY m.id`,
        )
        .all([messageId]) as Array<{ id: number; alias: string; uid: number }>,
  );
}

function auditRows(database: string): Json[] {
  return withDb(
    database,
    (db) =>
      db
        .prepare(
          'SELECT mutation, message_id, source_path, target_path, uidvalidity, source_uid, target_uid, detail, requester, outcome FROM mutation_audit ORDER BY id',
        )
        .all([]) as Json[],
  );
}

function jobRow(database: string, job: number): Json {
  return withDb(database, (db) => db.prepare('SELECT state, attempt_count, failure_class, failure_reason, progress FROM jobs WHERE id = ?').get([job]) as Json);
}

t.test('sent copies and drafts in mapped folders: placed once, stored once, removed by UID', async (t) => {
  const { dovecot, sync } = await setup(t, {
    folders: [{ Alias: 'inbox' }, { Alias: 'sent', Path: 'Outgoing' }, { Alias: 'drafts' }],
    create: ['Outgoing'],
  });

  await t.test('a sent copy goes to the folder mapped under sent, with \\Seen, once', async (t) => {
    const sent = insertOutgoing(sync.database, 1);
    const ask: Omit<RecordAppend, 'type'> = {
      requester: 'agent-test',
      requestId: 'sent-copy-1',
      target: 'sent',
      source: { table: 'outgoing_emails', id: sent.id },
      flags: ['\\Seen'],
      messageIdHeader: sent.messageId,
    };
    const recorded = await recordAppend(sync, ask);
    t.ok(['pending', 'converging', 'completed'].includes(recorded.state), 'answered once durable');
    const placement = await ended(sync, recorded.job);
    t.equal(placement.state, 'completed');
    t.equal(placement.outcome, 'applied');
    const onServer = await serverCopies(dovecot, 'Outgoing', sent.messageId);
    t.same(
      onServer.map((c) => c.flags),
      [['\\Seen']],
      'one copy on the server, seen',
    );
    t.same(placement.placed, { path: 'Outgoing', uidValidity: (await mailAdmin(dovecot).status('ann', 'Outgoing')).uidvalidity, uid: onServer[0]!.uid });
    t.same(await serverCopies(dovecot, 'Sent', sent.messageId), [], 'not in the SPECIAL-USE folder: the mapping wins');

    // The same request again: the same job, its state now; another ask under the same identifier is refused.
    t.same(await recordAppend(sync, ask), { job: recorded.job, state: 'completed' });
    await t.rejects(recordAppend(sync, { ...ask, target: 'drafts' }), { code: 'E_TOOL_REQUEST_CONFLICT' });
    await t.rejects(
      recordAppend(sync, { ...ask, requestId: 'sent-copy-1b', messageIdHeader: '<another@example.org>' }),
      { code: 'E_NOT_FOUND' },
      'a Message-ID the row does not hold',
    );
    await t.rejects(recordAppend(sync, { ...ask, requestId: 'sent-copy-1c', source: { table: 'outgoing_emails', id: 999 } }), { code: 'E_NOT_FOUND' });

    // The mirror: the watch wakes a run for the new message; it is stored once, under sent, and a later run stores nothing twice.
    await sync.syncNow('ann');
    await sync.syncNow('ann');
    t.same(
      storedCopies(sync.database, sent.messageId).map((r) => [r.alias, r.uid]),
      [['sent', onServer[0]!.uid]],
      'stored once, under the sent alias, by the sync',
    );
    t.same(await serverCopies(dovecot, 'Outgoing', sent.messageId), onServer, 'still one copy on the server');

    // The audit names it without its Message-ID; the outbox may read the same state on its own connection.
    const audit = auditRows(sync.database).filter((a) => a.mutation === 'append');
    t.match(audit, [
      {
        mutation: 'append',
        message_id: null,
        source_path: null,
        target_path: 'Outgoing',
        target_uid: onServer[0]!.uid,
        requester: 'agent-test',
        outcome: 'applied',
      },
    ]);
    t.same(JSON.parse(audit[0]!.detail), { target: 'sent', flags: ['\\Seen'], source: 'outgoing_emails', sourceId: sent.id });
    t.notOk(sync.logs.raw().includes(sent.messageId), 'the Message-ID reaches no log line');
    const reader = openStore({ database: sync.database, busyTimeoutMs: 5_000, synchronous: 'Normal' });
    t.teardown(() => reader.close());
    t.same(readPlacement(reader, recorded.job), placement, 'readPlacement answers what imap-sync.placement answers');
    t.equal(readPlacement(reader, recorded.job, 'someone-else'), null, 'only for its own account');
  });

  await t.test('a draft with \\Draft; an update appends the new revision and removes the old one by UID', async (t) => {
    const draft = insertDraft(sync.database, 1);
    const first = await recordAppend(sync, {
      requester: 'agent-test',
      requestId: 'draft-1-r1',
      target: 'drafts',
      source: { table: 'drafts', id: draft.id },
      flags: ['\\Draft'],
      messageIdHeader: draft.messageId,
    });
    const placedFirst = await ended(sync, first.job);
    t.match(placedFirst, { state: 'completed', outcome: 'applied', placed: { path: 'Drafts' } });
    t.same(
      (await serverCopies(dovecot, 'Drafts', draft.messageId)).map((c) => [c.uid, c.flags]),
      [[placedFirst.placed!.uid, ['\\Draft']]],
    );
    await sync.syncNow('ann');
    t.equal(storedCopies(sync.database, draft.messageId).length, 1, 'the mirrored draft, once');

    // The update: the row now holds revision 2; its append, then the removal of revision 1's.
    const second = reviseDraft(sync.database, draft.id, 1, 2);
    const appendSecond = await recordAppend(sync, {
      requester: 'agent-test',
      requestId: 'draft-1-r2',
      target: 'drafts',
      source: { table: 'drafts', id: draft.id },
      flags: ['\\Draft'],
      messageIdHeader: second,
    });
    const removal = await recordRemoval(sync, { requester: 'agent-test', requestId: 'draft-1-r1-removal', appendJob: first.job });
    // Asked again: the same job (its state is whatever it is by now: the journal may be applying it).
    t.equal((await recordRemoval(sync, { requester: 'agent-test', requestId: 'draft-1-r1-removal', appendJob: first.job })).job, removal.job);
    await t.rejects(recordRemoval(sync, { requester: 'agent-test', requestId: 'draft-1-r1-removal', appendJob: appendSecond.job }), {
      code: 'E_TOOL_REQUEST_CONFLICT',
    });
    const removed = await ended(sync, removal.job);
    t.same(removed, { state: 'completed', outcome: 'applied', placed: placedFirst.placed }, 'removed by the UID the server reported');
    t.match(await placementOf(sync, appendSecond.job), { state: 'completed', outcome: 'applied' }, 'the new revision was applied first');
    t.same(await serverCopies(dovecot, 'Drafts', draft.messageId), [], 'revision 1 is gone from the server');
    t.equal((await serverCopies(dovecot, 'Drafts', second)).length, 1, 'revision 2 is there');
    t.equal(await folderSize(dovecot, 'Drafts'), 1);
    t.same(storedCopies(sync.database, draft.messageId), [], 'the mirrored revision 1 is tombstoned at once');
    await sync.syncNow('ann');
    t.equal(storedCopies(sync.database, second).length, 1, 'revision 2 stored once');
    t.match(
      auditRows(sync.database)
        .filter((a) => a.mutation === 'remove-appended')
        .map((a) => ({ ...a, detail: JSON.parse(a.detail) })),
      [{ source_path: 'Drafts', source_uid: placedFirst.placed!.uid, target_path: null, outcome: 'applied', detail: { appendJob: first.job } }],
    );
    // A removal names an append of this account.
    await t.rejects(recordRemoval(sync, { requester: 'agent-test', requestId: 'not-an-append', appendJob: removal.job }), { code: 'E_NOT_FOUND' });
  });
});

t.test('no mapping: the folder marked \\Sent, mirrored or not; the access token is refused for a password login', async (t) => {
  const { dovecot, sync } = await setup(t, { folders: [{ Alias: 'inbox' }] });
  const sent = insertOutgoing(sync.database, 2);
  const recorded = await recordAppend(sync, {
    requester: 'agent-test',
    requestId: 'sent-copy-2',
    target: 'sent',
    source: { table: 'outgoing_emails', id: sent.id },
    flags: ['\\Seen'],
    messageIdHeader: sent.messageId,
  });
  const placement = await ended(sync, recorded.job);
  t.match(placement, { state: 'completed', outcome: 'applied', placed: { path: 'Sent' } });
  t.same(
    (await serverCopies(dovecot, 'Sent', sent.messageId)).map((c) => [c.uid, c.flags]),
    [[placement.placed!.uid, ['\\Seen']]],
    'one copy in the SPECIAL-USE sent folder',
  );
  await sync.syncNow('ann');
  t.same(storedCopies(sync.database, sent.messageId), [], 'not mirrored: nothing stored locally');

  await t.rejects(actor(sync).ask({ type: 'imap-sync.access-token' }, { reply: AccessTokenReply }), {
    code: 'E_IMAP_AUTH',
    details: { cause: 'no-oauth-configured' },
  });
});

t.test('an APPEND whose answer is lost is not repeated: the retry finds the copy by Message-ID', async (t) => {
  const { dovecot, sync, proxy } = await setup(t, { folders: [{ Alias: 'inbox' }, { Alias: 'sent' }], proxy: true });
  const sent = insertOutgoing(sync.database, 3);
  // Every chunk waits: the moment between the mark made durable and the server's answer is wide enough to hold the answer back.
  proxy!.delay(300);
  const recorded = await recordAppend(sync, {
    requester: 'agent-test',
    requestId: 'sent-copy-3',
    target: 'sent',
    source: { table: 'outgoing_emails', id: sent.id },
    flags: ['\\Seen'],
    messageIdHeader: sent.messageId,
  });
  await eventually('the mark before APPEND', () => JSON.parse(jobRow(sync.database, recorded.job).progress ?? '{}').placement, 60_000);
  proxy!.stall();
  await eventually('the APPEND to reach the server', async () => (await serverCopies(dovecot, 'Sent', sent.messageId)).length === 1);
  t.equal(jobRow(sync.database, recorded.job).state, 'queued', 'the server has it; the journal has no answer yet');
  proxy!.cutAll();
  proxy!.delay(0);
  proxy!.resume();

  const placement = await ended(sync, recorded.job);
  const copies = await serverCopies(dovecot, 'Sent', sent.messageId);
  t.equal(copies.length, 1, 'one copy on the server: the APPEND was not made again');
  t.same(placement, {
    state: 'completed',
    outcome: 'applied',
    placed: { path: 'Sent', uidValidity: (await mailAdmin(dovecot).status('ann', 'Sent')).uidvalidity, uid: copies[0]!.uid },
  });
  t.match(jobRow(sync.database, recorded.job), { state: 'done', attempt_count: 1, failure_class: 'server-unresponsive' }, 'one attempt was lost on the wire');
  t.ok(sync.logs.events('journal.attempt-failed').length >= 1);
  await sync.syncNow('ann');
  t.equal(storedCopies(sync.database, sent.messageId).length, 1, 'stored once');
});

t.test('no sent folder; an append the server refuses, its removal, retry and the admin routes', async (t) => {
  const { dovecot, sync } = await setup(t, {
    folders: [{ Alias: 'inbox' }, { Alias: 'drafts', Path: 'Locked' }],
    extraConfig: `${ACL_CONFIG}${NO_SENT}`,
    create: ['Locked'],
    admin: true,
  });
  // The drafts folder the account maps lets its owner look and read only: APPEND is refused.
  const folder = mailboxDir(dovecot, 'ann', 'Locked');
  const acl = join(folder, 'dovecot-acl');
  writeFileSync(acl, 'owner lr\n');
  const owner = statSync(folder);
  chownSync(acl, owner.uid, owner.gid);

  await t.test('no sent folder at all: no-folder, ended, not retried', async (t) => {
    const sent = insertOutgoing(sync.database, 4);
    const recorded = await recordAppend(sync, {
      requester: 'agent-test',
      requestId: 'sent-copy-4',
      target: 'sent',
      source: { table: 'outgoing_emails', id: sent.id },
      flags: ['\\Seen'],
      messageIdHeader: sent.messageId,
    });
    t.same(await ended(sync, recorded.job), { state: 'completed', outcome: 'no-folder', placed: null });
    t.match(jobRow(sync.database, recorded.job), { state: 'done', attempt_count: 0, failure_class: null }, 'not retried, not a dead letter');
    t.match(auditRows(sync.database).at(-1), { mutation: 'append', target_path: null, target_uid: null, outcome: 'no-folder' });
    t.ok(sync.logs.events('journal.change-ended').some((l) => l.outcome === 'no-folder' && l.level === 40));
  });

  await t.test('a refused append is a dead letter; its removal removes nothing; a retry after it places nothing', async (t) => {
    const draft = insertDraft(sync.database, 5);
    const appended = await recordAppend(sync, {
      requester: 'agent-test',
      requestId: 'draft-5-r1',
      target: 'drafts',
      source: { table: 'drafts', id: draft.id },
      flags: ['\\Draft'],
      messageIdHeader: draft.messageId,
    });
    t.same(await ended(sync, appended.job), { state: 'dead-lettered', outcome: 'refused', placed: null });
    t.match(jobRow(sync.database, appended.job), {
      state: 'dead',
      failure_class: 'server-refused',
      failure_reason: 'The server refused to place the message in the target folder.',
    });
    t.equal(await folderSize(dovecot, 'Locked'), 0);

    const admin = `http://127.0.0.1:${sync.service.admin!.port}/api/admin`;
    const operator = ADMIN_KEYS.operator;
    const deadLetters = (await adminCall(`${admin}/jobs/dead-letters${query({ type: 'mailbox-change', account: 'ann' })}`, { apiKey: operator })).json();
    t.match(
      deadLetters.jobs,
      [{ job: `j${appended.job}`, type: 'mailbox-change', account: 'ann', failureClassification: 'server-refused' }],
      'listed as a dead letter',
    );

    const removal = await recordRemoval(sync, { requester: 'agent-test', requestId: 'draft-5-r1-removal', appendJob: appended.job });
    t.same(await ended(sync, removal.job), { state: 'completed', outcome: 'gone', placed: null }, 'nothing to remove');
    t.equal(await folderSize(dovecot, 'Locked'), 0);

    // The operator retries the dead append after its removal ended: placing it now would leave a copy nobody removes.
    t.same((await adminCall(`${admin}/jobs/dead-letters/retry`, { method: 'POST', apiKey: operator, json: { job: `j${appended.job}` } })).json(), {
      job: `j${appended.job}`,
      outcome: 'Accepted',
    });
    t.same(await ended(sync, appended.job), { state: 'completed', outcome: 'withdrawn', placed: null });
    t.equal(await folderSize(dovecot, 'Locked'), 0);

    // The admin audit lists the eight kinds of the surface: placements are left out, and no warning says entries were omitted.
    const page = await adminCall(`${admin}/mailbox/mutations/audit${query({ account: 'ann' })}`, { apiKey: operator });
    t.equal(page.status, 200);
    t.same(page.json().entries, [], 'placements are not listed');
    t.same(sync.logs.events('admin.audit-entries-omitted'), [], 'and not counted as omitted');
    t.same(
      auditRows(sync.database).map((a) => [a.mutation, a.outcome]),
      [
        ['append', 'no-folder'],
        ['append', 'refused'],
        ['remove-appended', 'gone'],
        ['append', 'withdrawn'],
      ],
      'all audited in the table',
    );
  });
});

t.test('the access token for SMTP over XOAUTH2: the account’s own, renewed when asked', async (t) => {
  const dir = tempDir(t);
  let issued = 0;
  const endpoint = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const form = new URLSearchParams(body);
      if (form.get('grant_type') !== 'refresh_token' || form.get('refresh_token') !== 'refresh-token-0123456789') {
        res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":"invalid_grant"}');
        return;
      }
      issued += 1;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ access_token: `access-token-${issued}`, expires_in: 3600 }));
    });
  });
  await new Promise<void>((resolve) => endpoint.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => endpoint.close(() => resolve())));
  const keyRing = join(dir, 'keyring.json');
  writeFileSync(keyRing, newKeyRing(), { mode: 0o600 });
  const logs = captureLog();
  const service = await startService({
    configFile: writeConfig(dir, {
      HealthEndpoints: { Port: 0 },
      Storage: { Database: join(dir, 'mailcairn.db') },
      DataEncryption: { KeyRing: `file:${keyRing}` },
      MailSynchronization: { Enabled: false },
      Accounts: [
        {
          Id: 'ann',
          Imap: {
            Host: '127.0.0.1',
            Port: 1,
            Security: 'None',
            Username: 'ann@example.org',
            OAuth: { TokenEndpoint: `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}/token`, ClientId: 'mailcairn', Scopes: [] },
          },
          Folders: [{ Alias: 'inbox' }],
        },
      ],
    }),
    env: {},
    log: logs.log,
    hostLogSink: logs.write,
  });
  t.teardown(() => service.stop());
  const ref = service.supervisor.ref('imap-sync:ann');
  await t.rejects(ref.ask({ type: 'imap-sync.access-token' }, { reply: AccessTokenReply }), { code: 'E_OAUTH_REFRESH_MISSING' }, 'no refresh token stored yet');
  t.same(await ref.ask({ type: 'imap-sync.store-refresh-token', refreshToken: 'refresh-token-0123456789' }, { reply: StoreRefreshTokenReply }), {
    stored: true,
  });
  t.same(await ref.ask({ type: 'imap-sync.access-token' }, { reply: AccessTokenReply }), { accessToken: 'access-token-1', username: 'ann@example.org' });
  t.same(
    await ref.ask({ type: 'imap-sync.access-token' }, { reply: AccessTokenReply }),
    { accessToken: 'access-token-1', username: 'ann@example.org' },
    'held while valid',
  );
  t.same(
    await ref.ask({ type: 'imap-sync.access-token', fresh: true }, { reply: AccessTokenReply }),
    { accessToken: 'access-token-2', username: 'ann@example.org' },
    'redeemed afresh when the one held was refused',
  );
  t.equal(issued, 2);
  for (const secret of ['access-token-1', 'access-token-2', 'refresh-token-0123456789']) t.notOk(logs.raw().includes(secret), 'no token is logged');
});
