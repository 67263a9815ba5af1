/**
 * A full disk under the store (docs/operations.md "A full disk"): the
 * database lives on a size-limited tmpfs made here, a real Dovecot holds
 * more mail than fits, and sends go to a real SMTP server. While the disk
 * is full the service says so (`store.full`, readiness `checks.storage`),
 * stays ready, answers reads from what it holds, refuses a new send with
 * 56003 and a sentence saying so, gives no actor up and crashes none; no
 * message is half-written. Once the filesystem is grown the mirror
 * completes to exactly the server's contents, every send recorded is
 * delivered exactly once, and `PRAGMA integrity_check` and FTS5's
 * `integrity-check` are clean.
 *
 * Mounting needs root (CI runs as root); elsewhere the file is skipped with
 * that reason.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import Libsql from 'libsql';
import t, { type Test } from 'tap';
import { SCHEDULER_ID } from '../../actors/sync-scheduler/protocol.ts';
import { mailAdmin } from '../harness/doveadm.ts';
import { startDovecot } from '../harness/dovecot.ts';
import { generateMailbox } from '../harness/generator.ts';
import { fetchAllOverImap } from '../harness/imap-admin.ts';
import { appendMessages, writeMaildir } from '../harness/place-mail.ts';
import { startSmtpServer } from '../harness/smtp-server.ts';
import { until } from '../helpers/log-capture.ts';
import { indexState, readMirror } from '../helpers/mirror.ts';
import { reservePort } from '../helpers/ports.ts';
import { startSyncService } from '../helpers/sync-service.ts';

type Json = Record<string, any>;

const AGENT_KEY = 'key-agent-0123456789abcdef';
const SENDER = 'ann.owner@example.org';
const SMTP_LOGIN = { username: 'ann-smtp', password: 'smtp-secret-pw' };
/** Room left on the filesystem after the first mirror: far less than the mail placed next. */
const HEADROOM_KB = 3 * 1024;
/** Messages placed after the first mirror (about 5 KB each, `small` profile): several times the headroom. */
const OVERFLOW_MESSAGES = 1_500;
/** A token in every subject and body this test sends, looked for in the log (there must be none). */
const TOKEN = 'Quillfeather';

const isRoot = process.getuid?.() === 0;
if (!isRoot) {
  t.plan(0, 'skipped: mounting a size-limited tmpfs for the store needs root (CI runs as root, so it runs there)');
} else {
  t.setTimeout(300_000);
  t.test('a full disk during a mirror and during sends is waited out, and everything resumes when space returns', fullDisk);
}

/** Closers run newest first in one teardown, so the filesystem is unmounted after everything on it has stopped. */
function closers(t: Test): (close: () => unknown) => void {
  const stack: Array<() => unknown> = [];
  t.teardown(async () => {
    for (let close = stack.pop(); close; close = stack.pop()) await close();
  });
  return (close) => stack.push(close);
}

function mount(onStop: (close: () => unknown) => void, sizeKb: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'mailcairn-full-disk-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeKb}k`, 'tmpfs', dir]);
  onStop(() => {
    // Lazily: an in-process service leaves database descriptors of its ended worker threads open
    // until this process exits, and the filesystem goes with them.
    execFileSync('umount', ['--lazy', dir]);
    rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}

function resize(dir: string, sizeKb: number): void {
  execFileSync('mount', ['-o', `remount,size=${sizeKb}k`, dir]);
}

function usedKb(dir: string): number {
  const s = statfsSync(dir);
  return Math.ceil(((s.blocks - s.bfree) * s.bsize) / 1024);
}

async function call(client: Client, name: string, args: Json): Promise<{ ok: boolean; value: Json; text: string }> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = result.content?.[0]?.type === 'text' ? result.content[0].text : '';
  return { ok: result.isError !== true, value: (result.structuredContent ?? {}) as Json, text };
}

function letter(n: number): Buffer {
  return Buffer.from(
    [
      'From: Harbour Office <office@example.com>',
      'To: ann.owner@example.org',
      `Subject: Lighthouse rota ${n}`,
      `Message-ID: <rota-${n}@example.com>`,
      'Date: Mon, 3 Mar 2025 10:00:00 +0000',
      'Content-Type: text/plain; charset=utf-8',
      '',
      `The lighthouse keeper's rota for week ${n} is settled.`,
      '',
    ].join('\r\n'),
  );
}

/** A body of `chars` characters, different for each `seed`. */
function body(seed: number, chars: number): string {
  const words: string[] = [];
  let x = seed * 2_654_435_761;
  let length = 0;
  while (length < chars) {
    x = (x * 1_103_515_245 + 12_345) % 2_147_483_648;
    const word = x.toString(36);
    words.push(word);
    length += word.length + 1;
  }
  return `${TOKEN} ${words.join(' ')}`.slice(0, chars);
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function readiness(port: number): Promise<{ status: number; body: Json }> {
  const res = await fetch(`http://127.0.0.1:${port}/readyz`);
  return { status: res.status, body: (await res.json()) as Json };
}

/** What a store holds that a full disk must never leave half-written; read-only, so it works on a full disk. */
function halfWritten(database: string): { withoutRaw: number; strayDocuments: number; recipientless: number } {
  const db = new Libsql(database, { readonly: true });
  try {
    const count = (sql: string): number => Number((db.prepare(sql).get([]) as { n: number }).n);
    return {
      withoutRaw: count(
        "SELECT count(*) AS n FROM messages m LEFT JOIN message_raw r ON r.message_id = m.id WHERE m.state IN ('stored', 'unreadable') AND r.message_id IS NULL",
      ),
      strayDocuments: count(
        "SELECT count(*) AS n FROM search_documents d JOIN messages m ON m.id = d.message_id WHERE m.state <> 'stored' OR m.parse_version IS NULL",
      ),
      recipientless: count('SELECT count(*) AS n FROM outgoing_emails o WHERE NOT EXISTS (SELECT 1 FROM outgoing_recipients r WHERE r.outgoing_id = o.id)'),
    };
  } finally {
    db.close();
  }
}

function integrity(database: string): { integrity: string; fts: boolean } {
  const db = new Libsql(database);
  try {
    const rows = db.pragma('integrity_check') as Array<{ integrity_check: string }>;
    return { integrity: rows.map((r) => r.integrity_check).join('; '), fts: indexState(database).ftsConsistent };
  } finally {
    db.close();
  }
}

async function fullDisk(t: Test): Promise<void> {
  const started = Date.now();
  const onStop = closers(t);
  const dir = mount(onStop, 64 * 1024);
  const configDir = mkdtempSync(join(tmpdir(), 'mailcairn-full-disk-config-'));
  onStop(() => rmSync(configDir, { recursive: true, force: true }));

  const dovecot = await startDovecot({ users: [{ user: 'ann', password: 'pw-ann' }] });
  onStop(() => dovecot.stop());
  const admin = mailAdmin(dovecot);
  await admin.createMailbox('ann', 'Sent');
  await appendMessages(
    dovecot,
    'ann',
    'INBOX',
    Array.from({ length: 20 }, (_, i) => ({ raw: letter(i + 1) })),
  );
  const smtp = await startSmtpServer({ security: 'StartTls', auth: SMTP_LOGIN, port: await reservePort() });
  onStop(() => smtp.stop());
  const file = (name: string, content: string): string => {
    writeFileSync(join(configDir, name), content, { mode: 0o600 });
    return `file:${join(configDir, name)}`;
  };
  const sync = await startSyncService(
    dir,
    dovecot,
    [
      {
        id: 'ann',
        user: 'ann',
        folders: [{ Alias: 'inbox' }, { Alias: 'sent', Path: 'Sent' }],
        smtp: {
          Host: '127.0.0.1',
          Port: smtp.port,
          Security: smtp.security,
          Username: SMTP_LOGIN.username,
          Password: file('smtp.password', SMTP_LOGIN.password),
          TrustedCertificate: file('smtp.ca.pem', smtp.certificatePem!),
          From: SENDER,
          // Filing sent copies is the change journal's: kept out so that the deliveries counted are the sends alone.
          SentCopy: false,
        },
      },
    ],
    {
      McpEndpoint: {
        Enabled: true,
        BindAddress: '127.0.0.1',
        Port: 0,
        Authentication: [{ ApiKey: { Name: 'agent', SecretReference: file('agent.key', AGENT_KEY), Lifetime: 'NoLimit' } }],
        RateLimiting: { TokenCapacity: 100_000, TokensPerReplenishmentPeriod: 100_000 },
      },
      MailSynchronization: { Interval: '01:00:00', Backoff: { Initial: '00:00:02', Maximum: '00:00:04' } },
      Outbox: { RetryDelay: '00:00:01', SendTimeout: '00:00:05', MaxAttempts: 50 },
    },
  );
  const logs = sync.logs;
  const agent = new Client({ name: 'full-disk-test', version: '1.0.0' });
  await agent.connect(
    new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${sync.service.mcp!.port}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${AGENT_KEY}` } },
    }),
  );
  onStop(async () => {
    await agent.close().catch(() => {});
    await sync.service.stop();
  });
  await sync.syncNow('ann');
  const healthPort = sync.service.health!.port;
  t.same((await readiness(healthPort)).body.checks.storage, 'writable', 'readiness shows the storage writable at first');

  // Sends queued while the SMTP server is away: their attempts go on through the full disk.
  await smtp.stop();
  const send = (n: number, key: string, chars = 2_000) =>
    call(agent, 'send_email', {
      account: 'ann',
      to: [`recipient${n}@example.net`],
      subject: `${TOKEN} ${n}`,
      plainTextBody: body(n, chars),
      idempotencyKey: key,
    });
  const recorded = new Map<string, string>(); // subject → outgoing id
  for (const n of [1, 2, 3]) {
    const sent = await send(n, `queued-${n}`);
    t.ok(sent.ok, `send ${n} is recorded while the disk has room`);
    recorded.set(`${TOKEN} ${n}`, sent.value.outgoingEmailId);
  }

  // Shrink the filesystem to what the store holds and a little more, then place several times that much mail.
  const before = usedKb(dir);
  const sizeKb = before + HEADROOM_KB;
  resize(dir, sizeKb);
  const placed = await writeMaildir(
    dovecot,
    'ann',
    'INBOX',
    [...generateMailbox({ seed: 30_003, count: OVERFLOW_MESSAGES })].map((m) => ({ raw: m.raw, flags: m.flags, internalDate: m.internalDate })),
  );
  const scheduler = sync.service.supervisor.ref(SCHEDULER_ID);
  scheduler.tell({ type: 'sync-scheduler.wake', account: 'ann' });
  await until(() => logs.events('store.full').some((l) => l.where === 'imap-sync:ann'), 120_000, 'the mirror to meet the full disk');
  const fullAt = Date.now();
  await smtp.start();

  // While full: ready, saying so; reads answer from what is stored; a new send is refused with 56003.
  const ready = await readiness(healthPort);
  t.equal(ready.status, 200, 'the service stays ready: reads still work');
  t.equal(ready.body.checks.storage, 'full', 'readiness names the full disk');
  const listed = await call(agent, 'list_emails', { folders: ['inbox'], pageSize: 50 });
  t.ok(listed.ok && listed.value.emails.length >= 20, `list_emails answers from what is stored (${listed.value.emails?.length} on the first page)`);
  const found = await call(agent, 'search_emails', { queryText: 'lighthouse rota', resultLimit: 5 });
  t.ok(found.ok, 'search_emails answers');
  t.ok((found.value.matches ?? []).length > 0, 'and finds stored mail');
  let refused: { ok: boolean; value: Json; text: string } | null = null;
  let refusedAt = 0;
  for (let n = 10; n < 40 && refused === null; n++) {
    const attempt = await send(n, `during-${n}`, 150_000);
    if (attempt.ok) recorded.set(`${TOKEN} ${n}`, attempt.value.outgoingEmailId);
    else {
      refused = attempt;
      refusedAt = n;
    }
  }
  t.ok(refused, 'a send is refused once the disk has no room for it');
  t.equal(refused?.value.code, 56003, 'with 56003');
  t.match(refused?.text ?? '', /disk is full/, 'and a sentence saying the storage is full');
  const stuck = halfWritten(sync.database);
  t.same(stuck, { withoutRaw: 0, strayDocuments: 0, recipientless: 0 }, 'nothing is half-written while the disk is full');
  const mirroredWhileFull = readMirror(sync.database, 'ann', 'inbox').length;
  t.ok(mirroredWhileFull < 20 + placed, `the mirror stopped short (${mirroredWhileFull} of ${20 + placed})`);
  // Let the writers meet the full disk for a few of their retries.
  await sleep(6_000);
  t.same(sync.service.supervisor.health().givenUp, [], 'no actor is given up while the disk is full');
  // The failed runs' own records need the disk; the scheduler's count of them does not.
  const statusWhileFull = await sync.status();
  t.ok((statusWhileFull.accounts[0]?.consecutiveFailureCount ?? 0) >= 1, 'the runs that meet the full disk count as failed, and back off');

  // Space returns: grow the filesystem. The refused send is asked again with its key.
  resize(dir, 512 * 1024);
  const grownAt = Date.now();
  const again = await send(refusedAt, `during-${refusedAt}`, 150_000);
  t.ok(again.ok, 'the refused send is recorded once there is room');
  recorded.set(`${TOKEN} ${refusedAt}`, again.value.outgoingEmailId);
  const server = await fetchAllOverImap(dovecot, 'ann', 'INBOX');
  await until(() => readMirror(sync.database, 'ann', 'inbox').length === server.length, 120_000, 'the mirror to complete');
  await until(() => indexState(sync.database).underived === 0, 60_000, 'every stored message to be derived');
  const resumedAt = Date.now();
  t.same(
    readMirror(sync.database, 'ann', 'inbox').map((m) => [m.uid, m.sha256]),
    server.map((m) => [m.uid, m.sha256]),
    `the mirror is exactly the server's ${server.length} messages`,
  );
  await smtp.waitForDeliveries(recorded.size, 60_000);
  // The 250 is heard just after the sink keeps the message: the send is recorded Sent a moment later.
  for (const id of recorded.values()) {
    let state = '';
    for (const deadline = Date.now() + 20_000; state !== 'sent' && Date.now() < deadline; await sleep(200)) {
      state = (await call(agent, 'get_outgoing_email', { outgoingEmailId: id })).value.state;
    }
    t.equal(state, 'sent', `${id} is sent`);
  }
  await sleep(2_000); // a duplicate would arrive by now
  const bySubject = new Map<string, number>();
  for (const d of smtp.deliveries) {
    const subject = /^Subject: (.*)$/m.exec(d.raw.toString('latin1'))?.[1]?.trim() ?? '';
    bySubject.set(subject, (bySubject.get(subject) ?? 0) + 1);
  }
  t.same(
    [...recorded.keys()].map((s) => [s, bySubject.get(s) ?? 0]),
    [...recorded.keys()].map((s) => [s, 1]),
    `each of the ${recorded.size} recorded sends was delivered exactly once`,
  );
  t.equal(smtp.deliveries.length, recorded.size, 'and nothing else was delivered');
  const readyAfter = await readiness(healthPort);
  t.equal(readyAfter.body.checks.storage, 'writable', 'readiness shows the storage writable again');
  const index = indexState(sync.database);
  t.same({ strayDocuments: index.strayDocuments, strayPassages: index.strayPassages }, { strayDocuments: 0, strayPassages: 0 }, 'no stray derived data');

  // What the operator saw, and what never happened.
  t.ok(logs.events('store.writable').length > 0, 'store.writable says writes resumed');
  const fullLines = logs.events('store.full');
  t.ok(
    fullLines.every((l) => typeof l.where === 'string' && l.code === 'SQLITE_FULL'),
    `store.full lines name the place and the condition (${[...new Set(fullLines.map((l) => l.where))].join(', ')})`,
  );
  t.same(logs.events('actor.give-up'), [], 'no actor given up');
  t.same(
    logs.lines.filter((l) => l.event === 'actor.exit' && l.reason === 'E_ACTOR_CRASHED').map((l) => l.actor),
    [],
    'no actor crashed (a full disk is not a defect)',
  );
  t.same(logs.events('actor.handler-threw'), [], 'no handler threw');
  t.notOk(logs.raw().includes(TOKEN), 'no log line carries a subject or body');
  t.notOk(/recipient\d+@example\.net/.test(logs.raw()), 'no log line carries an address');
  t.same(sync.service.supervisor.health().givenUp, [], 'no actor given up at the end');

  await agent.close();
  await sync.service.stop();
  const check = integrity(sync.database);
  t.equal(check.integrity, 'ok', 'PRAGMA integrity_check is clean');
  t.ok(check.fts, "FTS5's integrity-check is clean");
  t.comment(
    `full disk: tmpfs ${Math.round(sizeKb / 1024)} MiB (store ${Math.round(before / 1024)} MiB + ${HEADROOM_KB / 1024} MiB), ` +
      `${placed} messages placed; ${mirroredWhileFull} of ${server.length} mirrored when full; ` +
      `${recorded.size} sends delivered once, refused send ${refusedAt} answered 56003; ` +
      `full after ${Math.round((fullAt - started) / 1000)} s, resumed ${Math.round((resumedAt - grownAt) / 1000)} s after growing; ` +
      `store.full lines ${fullLines.length}; outbox attempts that met it ${
        logs.events('outbox.attempt').filter((l) => l.ending === 'store-full' || l.stage === 'unwritten').length
      }; actor restarts ${logs.events('actor.restart').length}`,
  );
}
