/**
 * Crash safety of the mailbox change journal with a real mailcairnd killed
 * with SIGKILL (issue 12): between record and apply, during apply, and
 * after apply but before the completion is written. After a restart the
 * server ends in the requested state, once (one `applied` audit entry per
 * change, the copy made once), and nothing unrecorded is applied (every
 * other flag on the server is as it was).
 *
 * The account reaches Dovecot through a fault proxy: refusing new
 * connections keeps the journal's writing session (opened on demand) from
 * ever applying; a delay on every chunk widens the moments of an attempt
 * so a kill can be aimed at each. The flag kinds are asked through
 * `set_mail_flags` with the MCP SDK's client; copy, relocate and delete
 * (not offered to agents) are recorded with the journal's own
 * `recordChanges` while the daemon is down, then applied by a daemon that
 * is killed once the server shows the effect.
 *
 * Every test prints a `kill9 tally: journal ...` line
 * (test/helpers/kill-tally.ts) with its kills: 27 in all, 20 of them at
 * random moments. "Lost" counts changes not applied: a recorded change with
 * no `applied` audit entry, or a flag, keyword, copy or move asked of the
 * server that it does not hold. "Duplicated" counts changes applied more
 * than once or never asked: audit entries beyond one per change, a copy
 * present twice, a flag or keyword on the server that was not asked last.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ImapFlow } from 'imapflow';
import t, { type Test } from 'tap';
import { decodeStoredEmailId } from '../../../actors/mail-query/protocol/stored-email-id.ts';
import { seededRandom } from '../../../runtime/clock.ts';
import type { ChangeEffect } from '../../../runtime/store/mailbox/change-effect.ts';
import { recordChanges } from '../../../runtime/store/mailbox/changes.ts';
import { openStore } from '../../../runtime/store/open.ts';
import { startDovecot, type Dovecot } from '../../harness/dovecot.ts';
import { mailAdmin } from '../../harness/doveadm.ts';
import { startFaultProxy, type FaultProxy } from '../../harness/fault-proxy.ts';
import { imapClient } from '../../harness/imap-client.ts';
import { appendMessages } from '../../harness/place-mail.ts';
import { compiledDaemon, listenerPort, spawnDaemon, tempDir, writeConfig } from '../../helpers/daemon.ts';
import { reportKills } from '../../helpers/kill-tally.ts';
import { eventually } from '../../helpers/eventually.ts';
import { readRows as query } from '../../helpers/database.ts';

// Every kill is followed by a restart of a real process: minutes on a small machine.
t.setTimeout(1_200_000);

type Json = Record<string, any>;
const KEY = 'key-kill9-0123456789abcdef';
const MESSAGES = 6;

function message(n: number): Buffer {
  return Buffer.from(
    [
      `From: Orla Sender <orla.sender${n}@example.org>`,
      'To: Ann Owner <ann.owner@example.org>',
      `Subject: Kill nine message ${n}`,
      `Message-ID: <k9-${n}@example.org>`,
      `Date: Mon, ${String(n + 1).padStart(2, '0')} Nov 2026 10:00:00 +0000`,
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset=utf-8',
      '',
      `Body of message ${n}.`,
      '',
    ].join('\r\n'),
  );
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

type Incarnation = { daemon: ReturnType<typeof spawnDaemon>; mcp: Client };

type Setup = {
  dovecot: Dovecot;
  proxy: FaultProxy;
  database: string;
  config: string;
  /** Our own IMAP session straight to Dovecot (not through the proxy): the server's truth. */
  watcher(): Promise<ImapFlow>;
  /** storedEmailId by message number. */
  ids: Map<number, string>;
  start(): Promise<Incarnation>;
  kill(i: Incarnation): Promise<void>;
};

async function setup(t: Test): Promise<Setup> {
  const dir = tempDir(t);
  const dovecot = await startDovecot({ users: [{ user: 'ann', password: 'pw-ann' }] });
  t.teardown(() => dovecot.stop());
  await mailAdmin(dovecot).createMailbox('ann', 'Filed');
  await appendMessages(
    dovecot,
    'ann',
    'INBOX',
    Array.from({ length: MESSAGES }, (_, i) => ({ raw: message(i + 1) })),
  );
  const proxy = await startFaultProxy({ host: dovecot.host, port: dovecot.port });
  t.teardown(() => proxy.close());
  const database = join(dir, 'mailcairn.db');
  writeFileSync(join(dir, 'pw'), 'pw-ann');
  writeFileSync(join(dir, 'mcp.key'), KEY, { mode: 0o600 });
  const config = writeConfig(dir, {
    HealthEndpoints: { Port: 0 },
    Storage: { Database: database },
    McpEndpoint: {
      Enabled: true,
      BindAddress: '127.0.0.1',
      Port: 0,
      Authentication: [{ ApiKey: { Name: 'agent-kill9', SecretReference: `file:${join(dir, 'mcp.key')}`, Lifetime: 'NoLimit' } }],
      RateLimiting: { TokenCapacity: 100_000, TokensPerReplenishmentPeriod: 100_000 },
    },
    // Only the first run at start: what the journal writes must not depend on a later one.
    MailSynchronization: { Interval: '01:00:00' },
    Accounts: [
      {
        Id: 'ann',
        Imap: { Host: '127.0.0.1', Port: proxy.port, Security: 'None', Username: 'ann', Password: `file:${join(dir, 'pw')}` },
        Folders: [{ Alias: 'inbox' }, { Alias: 'filed', Path: 'Filed' }],
      },
    ],
  });
  // Connected again whenever Dovecot or the socket timeout closed it (a test spends minutes restarting daemons).
  let held: ImapFlow | null = null;
  const watcher = async (): Promise<ImapFlow> => {
    if (held?.usable) return held;
    held?.close();
    const client = imapClient(dovecot, 'ann', { socketTimeout: 600_000 });
    client.on('error', () => {});
    await client.connect();
    held = client;
    return client;
  };
  t.teardown(() => held?.logout().catch(() => held?.close()));

  const live = new Set<Incarnation>();
  t.teardown(async () => {
    for (const i of live) {
      i.daemon.child.kill('SIGKILL');
      await i.daemon.exited;
    }
  });
  // The emitted JavaScript: under tsx every start costs about three times as long, and every kill is followed by one.
  const compiled = await compiledDaemon();
  const start = async (): Promise<Incarnation> => {
    const daemon = spawnDaemon(['--config', config], { compiled });
    const incarnation: Incarnation = { daemon, mcp: new Client({ name: 'kill9-test', version: '1.0.0' }) };
    live.add(incarnation);
    const port = await listenerPort(daemon, 'McpEndpoint', 180_000).catch((err: Error) => {
      throw new Error(`${err.message}: ${daemon.stderr().slice(-2_000)} ${daemon.stdout().slice(-2_000)}`);
    });
    await eventually('service.ready', () => daemon.lines().some((l) => l.event === 'service.ready') || daemon.child.exitCode !== null, 180_000);
    if (daemon.child.exitCode !== null) throw new Error(`mailcairnd exited: ${daemon.stderr()}`);
    const url = new URL(`http://127.0.0.1:${port}/mcp`);
    await incarnation.mcp.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${KEY}` } } }));
    return incarnation;
  };
  const kill = async (i: Incarnation): Promise<void> => {
    i.daemon.child.kill('SIGKILL');
    await i.daemon.exited;
    live.delete(i);
    await i.mcp.close().catch(() => {});
  };

  // The first incarnation mirrors the mailbox; the storedEmailIds stay across restarts.
  const first = await start();
  const listed = await eventually(
    'the first mirror',
    async () => {
      const emails = await listEmails(first.mcp, 'inbox');
      return emails.length === MESSAGES ? emails : null;
    },
    180_000,
  );
  const ids = new Map(listed.map((e) => [Number(/message (\d+)/.exec(e.subject)![1]), e.storedEmailId as string]));
  await kill(first);
  return { dovecot, proxy, database, config, watcher, ids, start, kill };
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

/** The server's flags and keywords by message number, for one folder: read over IMAP on our own session. */
async function serverState(session: () => Promise<ImapFlow>, mailbox = 'INBOX'): Promise<Map<number, { uid: number; flags: string[] }[]>> {
  const watcher = await session();
  const out = new Map<number, { uid: number; flags: string[] }[]>();
  const status = await watcher.status(mailbox, { messages: true });
  if (status === false || !status.messages) return out;
  const lock = await watcher.getMailboxLock(mailbox, { readOnly: true });
  try {
    for await (const msg of watcher.fetch('1:*', { uid: true, flags: true, envelope: true }, { uid: true })) {
      const n = Number(/<k9-(\d+)@/.exec(msg.envelope?.messageId ?? '')?.[1]);
      const flags = [...(msg.flags ?? [])].filter((f) => f !== '\\Recent').sort();
      out.set(n, [...(out.get(n) ?? []), { uid: msg.uid, flags }]);
    }
  } finally {
    lock.release();
  }
  return out;
}

async function flagsOf(watcher: () => Promise<ImapFlow>, n: number): Promise<string[] | null> {
  return (await serverState(watcher)).get(n)?.[0]?.flags ?? null;
}

const jobs = (database: string): Json[] =>
  query(
    database,
    "SELECT id, state, attempt_count, progress, json_extract(payload, '$.effect.kind') AS kind FROM jobs WHERE type = 'mailbox-change' ORDER BY id",
  );
const audit = (database: string): Json[] =>
  query(database, 'SELECT mutation, message_id, source_path, target_path, source_uid, target_uid, requester, outcome FROM mutation_audit ORDER BY id');

/** Waits until every change is done (or fails the test naming the ones that are not). */
async function allDone(t: Test, database: string, timeoutMs = 180_000): Promise<Json[]> {
  try {
    return await eventually(
      'every change to be done',
      () => {
        const all = jobs(database);
        return all.length > 0 && all.every((j) => j.state === 'done') ? all : null;
      },
      timeoutMs,
    );
  } catch (err) {
    t.comment(JSON.stringify(jobs(database)));
    throw err;
  }
}

/** Exactly one audit entry per change, each `applied`; returns the changes not applied (lost) and the entries beyond one per change (duplicated). */
function auditedOnce(t: Test, database: string): { lost: number; duplicated: number } {
  const done = jobs(database);
  const entries = audit(database);
  const applied = entries.filter((a) => a.outcome === 'applied').length;
  const counted = { lost: Math.max(0, done.length - applied), duplicated: Math.max(0, entries.length - done.length) };
  t.equal(entries.length, done.length, `one audit entry per change (${entries.length} for ${done.length})`);
  t.same(
    entries.map((a) => a.outcome),
    done.map(() => 'applied'),
    'every change applied',
  );
  return counted;
}

/** Flags asked (lost when the server lacks one) against flags held (duplicated when the server holds one not asked). */
function flagDifference(asked: string[], held: string[] | null | undefined): { lost: number; duplicated: number } {
  const have = new Set(held ?? []);
  const want = new Set(asked);
  return { lost: asked.filter((f) => !have.has(f)).length, duplicated: [...have].filter((f) => !want.has(f)).length };
}

function sum(...tallies: Array<{ lost: number; duplicated: number }>): { lost: number; duplicated: number } {
  return tallies.reduce((a, b) => ({ lost: a.lost + b.lost, duplicated: a.duplicated + b.duplicated }), { lost: 0, duplicated: 0 });
}

t.test('kill -9 between record and apply: after restart the server ends in the requested state, once', async (t) => {
  const s = await setup(t);
  const before = await serverState(s.watcher);
  const daemon = await s.start();
  // Nothing can reach the server any more: the writing session is opened on demand, through the proxy.
  s.proxy.refuse(true);
  const first = await call(daemon.mcp, 'set_mail_flags', {
    storedEmailId: s.ids.get(1),
    seen: true,
    flagged: true,
    keywordChange: 'add',
    keywords: ['Kill-Nine'],
  });
  t.same(
    (first.recordedChanges as Json[]).map((c) => c.state),
    ['pending', 'pending', 'pending'],
    'answered as recorded, not yet applied',
  );
  // Two requests on the same flag of one message, both before anything applied: the later one is what is asked last.
  await call(daemon.mcp, 'set_mail_flags', { storedEmailId: s.ids.get(2), flagged: true });
  await call(daemon.mcp, 'set_mail_flags', { storedEmailId: s.ids.get(2), flagged: false, seen: true });
  await eventually('an attempt to fail on the refused connection', () => jobs(s.database).some((j) => j.attempt_count > 0));
  await s.kill(daemon);

  t.same(await serverState(s.watcher), before, 'nothing reached the server before the kill');
  const recorded = jobs(s.database);
  t.equal(recorded.length, 6, 'six changes recorded');
  t.ok(
    recorded.every((j) => j.state === 'queued' || j.state === 'running'),
    'none ended',
  );
  t.same(audit(s.database), [], 'nothing audited');

  s.proxy.refuse(false);
  const again = await s.start();
  await allDone(t, s.database);
  const [one, two_] = [await flagsOf(s.watcher, 1), await flagsOf(s.watcher, 2)];
  t.same(one, ['\\Flagged', '\\Seen', 'kill-nine'], 'message 1 holds what was asked');
  t.same(two_, ['\\Seen'], 'message 2: the later request on \\Flagged stands');
  const after = await serverState(s.watcher);
  for (const n of [3, 4, 5, 6]) t.same(after.get(n), before.get(n), `message ${n} untouched`);
  const audited = auditedOnce(t, s.database);
  reportKills(
    t,
    {
      actor: 'journal',
      kills: 1,
      ...sum(audited, flagDifference(['\\Flagged', '\\Seen', 'kill-nine'], one), flagDifference(['\\Seen'], two_)),
    },
    1,
  );
  const listed = await listEmails(again.mcp, 'inbox');
  const two = listed.find((e) => e.storedEmailId === s.ids.get(2))!;
  t.same(two.flags, ['\\Seen'], 'the local copy follows');
  t.notOk(two.flagChangesPending, 'and is confirmed');
  await s.kill(again);
});

t.test('kill -9 during apply (the attempt under way, the server not yet changed)', async (t) => {
  const s = await setup(t);
  const daemon = await s.start();
  // Every chunk takes 150 ms each way: connecting, logging in and selecting take over a second.
  s.proxy.delay(150);
  const acceptedBefore = s.proxy.accepted;
  await call(daemon.mcp, 'set_mail_flags', { storedEmailId: s.ids.get(3), flagged: true, keywordChange: 'add', keywords: ['during'] });
  // The attempt begins by opening the journal's writing session: a new connection through the proxy.
  await eventually('the attempt to begin', () => s.proxy.accepted > acceptedBefore, 60_000);
  await sleep(300);
  await s.kill(daemon);
  const atKill = jobs(s.database);
  t.ok(
    atKill.every((j) => j.state !== 'done'),
    'killed with the attempt under way (nothing ended)',
  );
  t.same(await flagsOf(s.watcher, 3), [], 'the server did not have it yet');

  s.proxy.delay(0);
  const again = await s.start();
  await allDone(t, s.database);
  const three = await flagsOf(s.watcher, 3);
  t.same(three, ['\\Flagged', 'during']);
  reportKills(t, { actor: 'journal', kills: 1, ...sum(auditedOnce(t, s.database), flagDifference(['\\Flagged', 'during'], three)) }, 1);
  await s.kill(again);
});

t.test('kill -9 after apply, before the completion is written', async (t) => {
  const s = await setup(t);
  const daemon = await s.start();
  s.proxy.delay(150);
  await call(daemon.mcp, 'set_mail_flags', { storedEmailId: s.ids.get(4), seen: true, keywordChange: 'add', keywords: ['after'] });
  // The STORE's answer and the read that observes it still take 150 ms each way through the proxy.
  await eventually('the server to hold \\Seen', async () => (await flagsOf(s.watcher, 4))?.includes('\\Seen'), 60_000);
  await s.kill(daemon);
  const atKill = jobs(s.database);
  t.not(atKill[0]!.state, 'done', 'killed with the server changed and the completion not written');
  t.same(audit(s.database), [], 'nothing audited yet');

  s.proxy.delay(0);
  const again = await s.start();
  await allDone(t, s.database);
  const four = await flagsOf(s.watcher, 4);
  t.same(four, ['\\Seen', 'after']);
  reportKills(t, { actor: 'journal', kills: 1, ...sum(auditedOnce(t, s.database), flagDifference(['\\Seen', 'after'], four)) }, 1);
  await s.kill(again);
});

/** Whether the message's change has made its placement durable (the target's UIDNEXT before COPY or MOVE). */
function placed(database: string, messageId: number): boolean {
  return (
    query(
      database,
      `SELECT 1 FROM jobs WHERE type = 'mailbox-change' AND json_extract(payload, '$.messageId') = ? AND json_extract(progress, '$.placement') IS NOT NULL`,
      [messageId],
    ).length > 0
  );
}

/** A change recorded in the journal by its own function, with the daemon down (copy, relocate and delete are not offered to agents). */
function recordDirectly(database: string, messageId: number, effect: ChangeEffect): void {
  const db = openStore({ database, busyTimeoutMs: 5_000, synchronous: 'Full' });
  try {
    const result = recordChanges(db, { accountId: 'ann', messageId, requester: 'rule:kill9', requestId: null, changes: [effect], now: Date.now() });
    if (result.outcome !== 'recorded') throw new Error(`not recorded: ${result.outcome}`);
  } finally {
    db.close();
  }
}

t.test('kill -9 after COPY, MOVE or EXPUNGE reached the server, before the completion: made once', async (t) => {
  const s = await setup(t);
  const id = (n: number): number => decodeStoredEmailId(s.ids.get(n)!)!;
  const rounds: Array<{ what: string; n: number; effect: ChangeEffect; landed(): Promise<boolean> }> = [
    { what: 'copy', n: 1, effect: { kind: 'copy', targetPath: 'Filed' }, landed: async () => (await serverState(s.watcher, 'Filed')).has(1) },
    { what: 'relocate', n: 2, effect: { kind: 'relocate', targetPath: 'Filed' }, landed: async () => (await serverState(s.watcher, 'Filed')).has(2) },
    { what: 'delete', n: 3, effect: { kind: 'delete' }, landed: async () => !(await serverState(s.watcher)).has(3) },
    // Killed once the placement is durable, before (or while) its COPY is on the wire: the next attempt copies once.
    { what: 'copy (placement recorded)', n: 4, effect: { kind: 'copy', targetPath: 'Filed' }, landed: async () => placed(s.database, id(4)) },
  ];
  for (const round of rounds) {
    recordDirectly(s.database, id(round.n), round.effect);
    s.proxy.delay(150);
    const daemon = await s.start();
    await eventually(`the ${round.what} to reach the server`, round.landed, 90_000);
    await s.kill(daemon);
    s.proxy.delay(0);
    const job = jobs(s.database).at(-1)!;
    t.not(job.state, 'done', `${round.what}: killed before the completion was written (${job.state})`);
    t.comment(`${round.what}: on the server at the kill: ${JSON.stringify([...(await serverState(s.watcher, 'Filed')).keys()])} in Filed`);
  }

  const again = await s.start();
  await allDone(t, s.database);
  const inbox = await serverState(s.watcher);
  const filed = await serverState(s.watcher, 'Filed');
  t.equal(inbox.get(1)?.length, 1, 'the copied message stays in INBOX');
  t.equal(filed.get(1)?.length, 1, 'copied into Filed exactly once');
  t.notOk(inbox.has(2), 'the relocated message left INBOX');
  t.equal(filed.get(2)?.length, 1, 'relocated into Filed exactly once');
  t.notOk(inbox.has(3), 'the deleted message is gone');
  t.equal(filed.get(4)?.length, 1, 'the copy killed after its placement: in Filed exactly once');
  t.equal([...filed.values()].flat().length, 3, 'nothing else in Filed');
  // Each change's effect: present once where it should be (lost when absent, duplicated beyond one), gone where it should be gone.
  const copies = (held: Map<number, unknown[]>, n: number, want: number): { lost: number; duplicated: number } => {
    const have = held.get(n)?.length ?? 0;
    return { lost: Math.max(0, want - have), duplicated: Math.max(0, have - want) };
  };
  const effects = sum(
    copies(filed, 1, 1),
    copies(inbox, 1, 1),
    copies(filed, 2, 1),
    copies(inbox, 2, 0),
    copies(inbox, 3, 0),
    copies(filed, 4, 1),
    copies(inbox, 4, 1),
  );
  reportKills(t, { actor: 'journal', kills: rounds.length, ...sum(auditedOnce(t, s.database), effects) }, 4);
  const entries = audit(s.database);
  t.same(
    entries.map((a) => [a.mutation, a.target_path, a.target_uid]),
    [
      ['copy', 'Filed', filed.get(1)![0]!.uid],
      ['relocate', 'Filed', filed.get(2)![0]!.uid],
      ['delete', null, null],
      ['copy', 'Filed', filed.get(4)![0]!.uid],
    ],
    'the audit names the copies the server holds',
  );

  // The local mirror holds each once, also after a run that reads every folder again.
  const liveRows = (n: number): Json[] =>
    query(
      s.database,
      `SELECT m.id, b.alias FROM messages m JOIN folder_bindings b ON b.id = m.binding_id
       WHERE m.state <> 'tombstoned' AND m.header_message_id = ? ORDER BY b.alias`,
      [`<k9-${n}@example.org>`],
    );
  const check = (when: string): void => {
    t.same(
      liveRows(1).map((r) => r.alias),
      ['filed', 'inbox'],
      `copy: one row in each folder ${when}`,
    );
    t.same(
      liveRows(2).map((r) => r.alias),
      ['filed'],
      `relocate: one row, in filed ${when}`,
    );
    t.same(liveRows(3), [], `delete: no live row ${when}`);
    t.same(
      liveRows(4).map((r) => r.alias),
      ['filed', 'inbox'],
      `copy after its placement: one row in each folder ${when}`,
    );
  };
  check('after the changes');
  t.comment(`relocated after a crash: storedEmailId ${liveRows(2)[0]?.id === id(2) ? 'kept' : 'not kept (the run saw it first)'}`);
  t.same(
    (await listEmails(again.mcp, 'filed')).map((e) => e.subject).sort(),
    ['Kill nine message 1', 'Kill nine message 2', 'Kill nine message 4'],
    'list_emails shows filed as the server has it',
  );
  await s.kill(again);
  const last = await s.start();
  await eventually('the first run of the last incarnation', async () => (await listEmails(last.mcp, 'filed')).length === 3);
  await sleep(1_000);
  check('after another run');
  await s.kill(last);
});

t.test('kill -9 at random moments after set_mail_flags: every recorded change applied once, nothing else', async (t) => {
  const s = await setup(t);
  const random = seededRandom(20261125);
  const KILLS = 20;
  type Expected = { seen: boolean; flagged: boolean; keywords: Set<string> };
  const expected = new Map<number, Expected>(Array.from({ length: MESSAGES }, (_, i) => [i + 1, { seen: false, flagged: false, keywords: new Set<string>() }]));
  const landed: string[] = [];
  for (let kill = 0; kill < KILLS; kill++) {
    const daemon = await s.start();
    s.proxy.delay(kill % 2 === 0 ? 0 : 30, 20);
    const n = 1 + (kill % MESSAGES);
    const e = expected.get(n)!;
    const recordedBefore = jobs(s.database).length;
    const args: Json = { storedEmailId: s.ids.get(n), seen: !e.seen, keywordChange: 'add', keywords: [`k${kill}`] };
    if (kill % 3 === 0) args.flagged = !e.flagged;
    await call(daemon.mcp, 'set_mail_flags', args);
    e.seen = !e.seen;
    if (kill % 3 === 0) e.flagged = !e.flagged;
    e.keywords.add(`k${kill}`);
    await sleep(Math.floor(random.next() * 250));
    await s.kill(daemon);
    s.proxy.delay(0);
    // Where this kill landed for the call's first change (set-seen): not applied, applied but not completed, completed.
    const mine = jobs(s.database)[recordedBefore]!;
    const onServer = (await flagsOf(s.watcher, n))?.includes('\\Seen') === e.seen;
    landed.push(mine.state === 'done' ? 'completed' : onServer ? 'applied-not-completed' : 'not-applied');
  }
  const counts = new Map<string, number>();
  for (const where of landed) counts.set(where, (counts.get(where) ?? 0) + 1);
  t.comment(`where the ${KILLS} kills landed: ${[...counts].map(([k, v]) => `${k} ${v}`).join(', ')}`);

  const last = await s.start();
  await allDone(t, s.database);
  const server = await serverState(s.watcher);
  const differences: Array<{ lost: number; duplicated: number }> = [];
  for (const [n, e] of expected) {
    const want = [...(e.seen ? ['\\Seen'] : []), ...(e.flagged ? ['\\Flagged'] : []), ...e.keywords].sort();
    t.same(server.get(n)?.[0]?.flags, want, `message ${n} holds exactly what was asked last`);
    differences.push(flagDifference(want, server.get(n)?.[0]?.flags));
    // A message the server holds twice would be a change made twice.
    differences.push({ lost: 0, duplicated: Math.max(0, (server.get(n)?.length ?? 0) - 1) });
  }
  reportKills(t, { actor: 'journal', kills: KILLS, ...sum(auditedOnce(t, s.database), ...differences) }, KILLS);
  await s.kill(last);
});

/** The `journal.change-ended` lines of changes ended in a batch of more than one (docs/sync.md "Changes in batches"). */
function batchedEndings(daemon: Incarnation): Json[] {
  return daemon.daemon.lines().filter((l) => l.event === 'journal.change-ended' && typeof l.batch === 'number' && l.batch > 1) as Json[];
}

t.test('kill -9 in the middle of a batch (one UID STORE over several messages): every change applied once, nothing else', async (t) => {
  const s = await setup(t);
  const id = (n: number): number => decodeStoredEmailId(s.ids.get(n)!)!;
  const all = Array.from({ length: MESSAGES }, (_, i) => i + 1);
  // Two batches: every message marked seen, then every message given one keyword.
  for (const n of all) recordDirectly(s.database, id(n), { kind: 'set-seen', value: true });
  for (const n of all) recordDirectly(s.database, id(n), { kind: 'add-keywords', keywords: ['Batched'] });
  const rounds = [
    { what: 'the seen batch', has: '\\Seen' },
    { what: 'the keyword batch', has: 'Batched' },
  ];
  for (const round of rounds) {
    // A delay on every chunk: the STORE lands well before the read back and the endings.
    s.proxy.delay(150);
    const daemon = await s.start();
    await eventually(
      `${round.what} to reach the server`,
      async () => [...(await serverState(s.watcher)).values()].some((v) => v[0]!.flags.includes(round.has)),
      90_000,
    );
    await s.kill(daemon);
    s.proxy.delay(0);
    const state = jobs(s.database);
    t.comment(`${round.what}: killed with ${state.filter((j) => j.state === 'done').length} of ${state.length} changes ended`);
  }
  t.ok(
    jobs(s.database).some((j) => j.state !== 'done'),
    'killed before every ending was written',
  );
  const last = await s.start();
  await allDone(t, s.database);
  t.ok(batchedEndings(last).length > 0, 'the changes still outstanding after the kills ended in batches');
  const server = await serverState(s.watcher);
  const differences = all.map((n) => {
    t.same(server.get(n)?.[0]?.flags, ['Batched', '\\Seen'].sort(), `message ${n} holds the seen flag and the keyword`);
    return sum(flagDifference(['Batched', '\\Seen'], server.get(n)?.[0]?.flags), { lost: 0, duplicated: Math.max(0, (server.get(n)?.length ?? 0) - 1) });
  });
  reportKills(t, { actor: 'journal', kills: rounds.length, ...sum(auditedOnce(t, s.database), ...differences) }, rounds.length);
  t.same(
    audit(s.database).map((a) => a.requester),
    all.flatMap(() => ['rule:kill9', 'rule:kill9']),
    'each change audited on its own, under its requester',
  );
  await s.kill(last);
});

t.test('a batch in which one message was expunged meanwhile: that change ends gone, the others applied', async (t) => {
  const s = await setup(t);
  const id = (n: number): number => decodeStoredEmailId(s.ids.get(n)!)!;
  const all = Array.from({ length: MESSAGES }, (_, i) => i + 1);
  for (const n of all) recordDirectly(s.database, id(n), { kind: 'set-flagged', value: true });
  // Message 3 leaves the server behind the mirror's back, before any change was applied.
  const watcher = await s.watcher();
  const uid3 = (await serverState(s.watcher)).get(3)![0]!.uid;
  const lock = await watcher.getMailboxLock('INBOX');
  try {
    await watcher.messageDelete(String(uid3), { uid: true });
  } finally {
    lock.release();
  }
  const daemon = await s.start();
  await allDone(t, s.database);
  const byMessage = new Map(audit(s.database).map((a) => [a.message_id as number, a.outcome as string]));
  t.same(
    all.map((n) => byMessage.get(id(n))),
    all.map((n) => (n === 3 ? 'gone' : 'applied')),
    'the expunged message ends gone, every other applied',
  );
  t.equal(audit(s.database).length, MESSAGES, 'one audit entry per change');
  const server = await serverState(s.watcher);
  t.notOk(server.has(3), 'message 3 is not on the server');
  for (const n of all.filter((n) => n !== 3)) t.same(server.get(n)?.[0]?.flags, ['\\Flagged'], `message ${n} flagged, once`);
  const gone = batchedEndings(daemon).filter((l) => l.outcome === 'gone');
  t.equal(gone.length, 1, 'the gone change ended within a batch');
  t.ok(batchedEndings(daemon).filter((l) => l.outcome === 'applied').length >= 1, 'the others ended in the same batch');
  await s.kill(daemon);
});
