/**
 * soak: the daemon under steady work for a long time (issue 30). Does its
 * memory stay flat, does its latency hold, does anything restart, and does
 * every message reach the mirror once and every send the SMTP server once?
 *
 * Setup: a private Dovecot holding BENCH_SOAK_MESSAGES generated messages
 * (default 2000, `small` profile, seed 30) in INBOX and an empty Sent; the
 * harness SMTP server in a process of its own (peers/smtp-sink.ts,
 * StartTls + AUTH); the compiled daemon (peers/daemon.ts) mirroring inbox
 * and sent with the configuration's defaults (synchronization, change
 * checks, outbox, Logging at `info`, which is where `actor.restart` lines
 * are written), its inspector open on a loopback port for the heap
 * (peers/inspector-heap.ts). The load starts once the mailbox is mirrored
 * and its text derived.
 *
 * For BENCH_SOAK_MINUTES (default 30; 10 when `CI` is set; any whole number,
 * 2 for a look during development):
 *  - agents: BENCH_SOAK_RATE read calls a second (default 10) through
 *    `/mcp` with an API key, from BENCH_SOAK_CLIENTS MCP SDK clients
 *    (default 4), on a fixed schedule: call k is due at start + k/rate and a
 *    free client takes it; its latency runs from when it was due, so a
 *    daemon that falls behind shows queueing instead of a slower load. The
 *    mix: search_emails 30%, list_emails 30% (a third of them the next page
 *    of an earlier listing), get_email_content 20% (one to three listed
 *    emails), list_accounts 8%, list_contacts 7%, get_outgoing_email 5%;
 *  - the mail server: BENCH_SOAK_MAIL_PER_MINUTE new messages (default 30)
 *    and BENCH_SOAK_FLAG_CHANGES_PER_MINUTE flag changes (default 30) in
 *    INBOX, behind the daemon's back (peers/mailbox-churn.ts);
 *  - the outbox: BENCH_SOAK_SENDS_PER_MINUTE `send_email` calls (default
 *    6), each to a recipient of its own, delivered to the SMTP sink and
 *    filed in Sent by the daemon.
 *
 * Every minute: the daemon's RSS (VmRSS, and RssAnon: the heaps and
 * native allocations, without mapped files) from /proc, its JavaScript heap
 * after a full collection summed over every isolate (the main thread and
 * the actor host threads, through the inspector), its CPU share, and the
 * calls due in that minute: count, failures, p50 and p99.
 *
 * Then: the slope of RSS and of the heap over the minutes after the
 * warm-up (BENCH_SOAK_WARMUP_MINUTES; default 5 of 15 or more minutes, 3 of
 * 6 or more, else 1) by least squares, with its standard error; the p99
 * drift (soak-figures.ts `p99Drift`); restarts (`actor.restart` lines in the
 * daemon's log) and error lines. After the load stops, every recorded send
 * delivered and the mirror settled (up to BENCH_SOAK_SETTLE_SECONDS, default
 * 180), INBOX and Sent on the server against the mirror (UIDs, content
 * hashes, flags) and the sink's deliveries per recipient: lost 0,
 * duplicated 0.
 *
 * "Flat" RSS is a slope under 1 MiB a minute. Over 25 minutes of points
 * with the few MiB of sawtooth a collector leaves, noise alone moves a
 * least-squares slope by a tenth of that (the standard error is printed to
 * judge), while a leak of 1 MiB a minute, 1.4 GiB a day, would end a small
 * host's daemon within a day. A 10-minute run resolves about 1 MiB/min:
 * its verdict is the coarser one.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import Libsql from 'libsql';
import { mailAdmin, type ServerMessage } from '../../test/harness/doveadm.ts';
import { startDovecot } from '../../test/harness/dovecot.ts';
import { generateMailbox } from '../../test/harness/generator.ts';
import { FIRST_NAMES, WORDS } from '../../test/harness/generator-words.ts';
import { writeMaildir } from '../../test/harness/place-mail.ts';
import { readMirror, type MirroredMessage } from '../../test/helpers/mirror.ts';
import { reservePort } from '../../test/helpers/ports.ts';
import { boundGoal, millis } from '../goals.ts';
import { apiKeyEntry, benchMcpEndpoint, writeBenchConfig } from '../peers/daemon-config.ts';
import { startBenchDaemon } from '../peers/daemon.ts';
import { attachHeapReader, type HeapUsage, inspectorArgs } from '../peers/inspector-heap.ts';
import { type Churn, startChurn } from '../peers/mailbox-churn.ts';
import { readResident, readStats } from '../peers/process-stats.ts';
import { type SinkProcess, startSinkProcess } from '../peers/smtp-sink.ts';
import type { Row, Scenario } from '../scenario.ts';
import { leastSquares, p99Drift, percentile } from '../soak-figures.ts';
import { round } from '../stats.ts';
import { connectClient } from './search.ts';

const USER = 'bench';
const PASSWORD = 'pw-bench';
const ACCOUNT = 'bench';
const KEY = 'key-bench-soak-0123456789abcdef';
const SMTP_LOGIN = { username: 'bench-smtp', password: 'bench-smtp-password' };
const FROM = 'bench.owner@example.org';
const SEED = 30;
/** The slope a flat process stays under (see the header). */
const FLAT_MIB_PER_MINUTE = 1;
/** p99 of the last minutes at most this many times that of the first after the warm-up. */
const DRIFT_BOUND = 1.5;
const MINUTE_MS = 60_000;
/** RSS is read this often; a minute's figure is the mean of its reads. */
const RSS_SAMPLE_MS = 5_000;

const envNumber = (name: string, fallback: number, integer = true): number => {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const v = Number(raw);
  if (!(v >= 0) || (integer && !Number.isInteger(v))) throw new Error(`${name} must be a ${integer ? 'whole ' : ''}number ≥ 0`);
  return v;
};

const ciMode = (): boolean => (process.env.CI ?? '') !== '' && process.env.CI !== 'false' && process.env.CI !== '0';

type Settings = {
  minutes: number;
  warmup: number;
  rate: number;
  clients: number;
  messages: number;
  mailPerMinute: number;
  flagChangesPerMinute: number;
  sendsPerMinute: number;
  settleSeconds: number;
};

function settings(): Settings {
  const minutes = envNumber('BENCH_SOAK_MINUTES', ciMode() ? 10 : 30);
  if (minutes < 1) throw new Error('BENCH_SOAK_MINUTES must be at least 1');
  const warmup = envNumber('BENCH_SOAK_WARMUP_MINUTES', minutes >= 15 ? 5 : minutes >= 6 ? 3 : 1);
  if (warmup >= minutes) throw new Error('BENCH_SOAK_WARMUP_MINUTES must leave at least one minute after it');
  return {
    minutes,
    warmup,
    rate: envNumber('BENCH_SOAK_RATE', 10, false),
    clients: Math.max(1, envNumber('BENCH_SOAK_CLIENTS', 4)),
    messages: envNumber('BENCH_SOAK_MESSAGES', 2000),
    mailPerMinute: envNumber('BENCH_SOAK_MAIL_PER_MINUTE', 30, false),
    flagChangesPerMinute: envNumber('BENCH_SOAK_FLAG_CHANGES_PER_MINUTE', 30, false),
    sendsPerMinute: envNumber('BENCH_SOAK_SENDS_PER_MINUTE', 6, false),
    settleSeconds: envNumber('BENCH_SOAK_SETTLE_SECONDS', 180),
  };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const log = (line: string): void => void process.stderr.write(`[soak] ${line}\n`);

function count(database: string, sql: string): number {
  try {
    const db = new Libsql(database, { readonly: true, timeout: 2_000 });
    try {
      return Number((db.prepare(sql).get() as { n: number | null }).n ?? 0);
    } finally {
      db.close();
    }
  } catch {
    return 0;
  }
}

// ---------------------------------------------------------------- the agents' reads

/** What earlier answers left for later calls to read: listed emails, cursors, queued sends. */
type Pools = { emailIds: string[]; cursors: string[]; outgoing: string[] };

type Answer = { ok: boolean; structured?: Record<string, unknown> };

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<Answer> {
  try {
    const r = (await client.callTool({ name, arguments: args })) as CallToolResult;
    return { ok: r.isError !== true, structured: r.structuredContent as Record<string, unknown> | undefined };
  } catch {
    return { ok: false };
  }
}

/** Keeps the newest `limit` entries. */
function remember(pool: string[], values: readonly string[], limit = 200): void {
  pool.push(...values);
  if (pool.length > limit) pool.splice(0, pool.length - limit);
}

const SEARCH_WORDS = WORDS.filter((w) => w.length >= 5);

/** Call k of the schedule: the same tool and arguments in every run with the same pools. */
async function readCall(client: Client, k: number, pools: Pools): Promise<{ tool: string; ok: boolean }> {
  // A fixed pseudo-random pick per call number (Weyl sequence: no state shared between clients).
  const u = (salt: number): number => (((k * 0.6180339887 + salt * 0.4142135623) % 1) + 1) % 1;
  const pick = <T>(list: readonly T[], salt: number): T => list[Math.floor(u(salt) * list.length)]!;
  const roll = u(0) * 100;
  const listed = (a: Answer): void => {
    const emails = (a.structured?.emails ?? []) as Array<{ storedEmailId: string }>;
    remember(
      pools.emailIds,
      emails.map((e) => e.storedEmailId),
    );
    const next = a.structured?.nextCursor;
    if (typeof next === 'string') remember(pools.cursors, [next], 50);
  };
  if (roll < 30) {
    const args: Record<string, unknown> = { queryText: pick(SEARCH_WORDS, 1), resultLimit: 20 };
    if (u(2) < 0.3) args.isSeen = u(3) < 0.5;
    const a = await call(client, 'search_emails', args);
    return { tool: 'search_emails', ok: a.ok };
  }
  if (roll < 60) {
    const cursor = u(4) < 1 / 3 && pools.cursors.length > 0 ? pools.cursors.splice(Math.floor(u(5) * pools.cursors.length), 1)[0] : undefined;
    const args: Record<string, unknown> = cursor ? { pageSize: 25, cursor } : { pageSize: 25, ...(u(6) < 0.3 ? { isFlagged: true } : {}) };
    const a = await call(client, 'list_emails', args);
    if (a.ok) listed(a);
    return { tool: 'list_emails', ok: a.ok };
  }
  if (roll < 80) {
    if (pools.emailIds.length === 0) {
      const a = await call(client, 'list_emails', { pageSize: 25 });
      if (a.ok) listed(a);
      return { tool: 'list_emails', ok: a.ok };
    }
    const ids = [...new Set(Array.from({ length: 1 + Math.floor(u(7) * 3) }, (_, i) => pick(pools.emailIds, 8 + i)))];
    const a = await call(client, 'get_email_content', { storedEmailIds: ids });
    return { tool: 'get_email_content', ok: a.ok };
  }
  if (roll < 88) return { tool: 'list_accounts', ok: (await call(client, 'list_accounts', {})).ok };
  if (roll < 95) {
    const a = await call(client, 'list_contacts', { query: pick(FIRST_NAMES, 11).toLowerCase().slice(0, 3) });
    return { tool: 'list_contacts', ok: a.ok };
  }
  if (pools.outgoing.length === 0) return { tool: 'list_accounts', ok: (await call(client, 'list_accounts', {})).ok };
  const a = await call(client, 'get_outgoing_email', { outgoingEmailId: pick(pools.outgoing, 12) });
  return { tool: 'get_outgoing_email', ok: a.ok };
}

/** Set when the run fails: the loads end at their next call instead of at the end of the soak. */
type Halt = { halted: boolean };

type Sample = { minute: number; ms: number; ok: boolean; tool: string };

/** The agents at a fixed rate until `endsAt`; every sample carries the minute its call was due in. */
async function readLoad(clients: readonly Client[], rate: number, startedAt: number, endsAt: number, pools: Pools, into: Sample[], halt: Halt): Promise<void> {
  const period = 1000 / rate;
  let next = 0;
  await Promise.all(
    clients.map(async (client) => {
      for (;;) {
        const k = next++;
        const due = startedAt + k * period;
        if (due >= endsAt || halt.halted) return;
        const wait = due - performance.now();
        if (wait > 0) await sleep(wait);
        const r = await readCall(client, k, pools);
        into.push({ minute: Math.floor((due - startedAt) / MINUTE_MS), ms: performance.now() - due, ok: r.ok, tool: r.tool });
      }
    }),
  );
}

// ---------------------------------------------------------------- the sends

type Sends = { recorded: string[]; refused: number; delivered: Map<string, number> };

async function sendLoad(client: Client, perMinute: number, endsAt: number, sends: Sends, pools: Pools, halt: Halt): Promise<void> {
  if (perMinute <= 0) return;
  const period = MINUTE_MS / perMinute;
  for (let n = 0; ; n++) {
    const due = performance.now();
    if (due >= endsAt || halt.halted) return;
    const to = `soak-${n}@example.net`;
    const a = await call(client, 'send_email', {
      account: ACCOUNT,
      to: [to],
      subject: `Soak message ${n}`,
      plainTextBody: `Soak message ${n}: the weekly figures and the notes from the meeting.`,
      idempotencyKey: `soak-${n}`,
    });
    const id = a.structured?.outgoingEmailId;
    if (a.ok && typeof id === 'string') {
      sends.recorded.push(to);
      remember(pools.outgoing, [id], 50);
    } else sends.refused++;
    const wait = due + period - performance.now();
    if (wait > 0) await sleep(Math.min(wait, Math.max(0, endsAt - performance.now())));
  }
}

// ---------------------------------------------------------------- mirror against server

type Comparison = { server: number; mirror: number; lost: number; duplicated: number; stray: number; contentDiffers: number; flagsDiffer: number };

function compare(server: readonly ServerMessage[], mirror: readonly MirroredMessage[]): Comparison {
  const mirrorByUid = new Map<number, MirroredMessage[]>();
  for (const m of mirror) mirrorByUid.set(m.uid, [...(mirrorByUid.get(m.uid) ?? []), m]);
  const serverUids = new Set(server.map((s) => s.uid));
  const byHash = (list: ReadonlyArray<{ sha256: string }>): Map<string, number> => {
    const counts = new Map<string, number>();
    for (const x of list) if (x.sha256 !== '') counts.set(x.sha256, (counts.get(x.sha256) ?? 0) + 1);
    return counts;
  };
  const serverHashes = byHash(server);
  // Twice under one UID, or the same message under a second UID (a copy the server does not hold twice); one duplicate counts once.
  const underOneUid = [...mirrorByUid.values()].reduce((s, rows) => s + rows.length - 1, 0);
  let underTwoUids = 0;
  for (const [hash, n] of byHash(mirror)) underTwoUids += Math.max(0, n - (serverHashes.get(hash) ?? 0));
  const duplicated = Math.max(underOneUid, underTwoUids);
  let lost = 0;
  let contentDiffers = 0;
  let flagsDiffer = 0;
  for (const s of server) {
    const m = mirrorByUid.get(s.uid)?.[0];
    if (!m) {
      lost++;
      continue;
    }
    if (m.sha256 !== '' && m.sha256 !== s.sha256) contentDiffers++;
    if ([...s.flags].sort().join(' ') !== m.flags.join(' ')) flagsDiffer++;
  }
  const stray = [...mirrorByUid.keys()].filter((uid) => !serverUids.has(uid)).length;
  return { server: server.length, mirror: mirror.length, lost, duplicated, stray, contentDiffers, flagsDiffer };
}

const settled = (c: Comparison): boolean => c.lost + c.duplicated + c.stray + c.contentDiffers + c.flagsDiffer === 0;

// ---------------------------------------------------------------- per-minute figures

type Minute = {
  minute: number;
  /** Means of the minute's samples (every RSS_SAMPLE_MS), so the slope follows the trend rather than where one sample met the collector's sawtooth. */
  rssMiB: number;
  anonMiB: number;
  rssMaxMiB: number;
  heap: HeapUsage | null;
  cpuPercent: number;
  delivered: number;
  flagChanges: number;
  sends: number;
};

function logLines(file: string): Array<Record<string, unknown>> {
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  const out: Array<Record<string, unknown>> = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue; // the inspector's own "Debugger listening" line
    try {
      out.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      // a line cut by the stop
    }
  }
  return out;
}

// ---------------------------------------------------------------- the scenario

export const soak: Scenario = {
  name: 'soak',
  onlyWhenNamed: true,
  description:
    'steady MCP reads, new mail, flag changes and sends for BENCH_SOAK_MINUTES (30; 10 with CI): RSS and heap slope, p99 drift, restarts, mail lost or duplicated',
  async run() {
    const s = settings();
    log(
      `${s.minutes} min (warm-up ${s.warmup}), ${s.rate} reads/s from ${s.clients} clients, ${s.mailPerMinute} new mail + ${s.flagChangesPerMinute} flag changes + ${s.sendsPerMinute} sends a minute, ${s.messages} messages placed`,
    );
    const dir = mkdtempSync(join(tmpdir(), 'mailcairn-bench-soak-'));
    const dovecot = await startDovecot({ users: [{ user: USER, password: PASSWORD }] });
    let sink: SinkProcess | null = null;
    const rows: Row[] = [];
    try {
      const admin = mailAdmin(dovecot);
      await admin.createMailbox(USER, 'Sent');
      await writeMaildir(dovecot, USER, 'INBOX', generateMailbox({ seed: SEED, count: s.messages, profile: 'small' }));
      sink = await startSinkProcess({ security: 'StartTls', auth: SMTP_LOGIN });
      const sends: Sends = { recorded: [], refused: 0, delivered: new Map() };
      sink.onDelivery = (d) => {
        for (const r of d.recipients) sends.delivered.set(r, (sends.delivered.get(r) ?? 0) + 1);
      };

      const file = (name: string, content: string): string => {
        writeFileSync(join(dir, name), content, { mode: 0o600 });
        return `file:${join(dir, name)}`;
      };
      const port = await reservePort();
      const inspectorPort = await reservePort();
      const { config, database } = writeBenchConfig(dir, {
        McpEndpoint: benchMcpEndpoint(port, [apiKeyEntry('bench-soak-agents', file('mcp.key', KEY))]),
        Logging: { Level: 'info', Format: 'Json' },
        Accounts: [
          {
            Id: ACCOUNT,
            Imap: { Host: '127.0.0.1', Port: dovecot.port, Security: 'None', Username: USER, Password: file('imap.pw', PASSWORD) },
            Smtp: {
              Host: '127.0.0.1',
              Port: sink.port,
              Security: 'StartTls',
              Username: SMTP_LOGIN.username,
              Password: file('smtp.pw', SMTP_LOGIN.password),
              TrustedCertificate: file('smtp.ca.pem', sink.certificatePem),
              From: FROM,
            },
            Folders: [{ Alias: 'inbox' }, { Alias: 'sent', Path: 'Sent' }],
          },
        ],
      });
      const logFile = join(dir, 'mailcairnd.log');
      const daemon = startBenchDaemon({ config, output: { logFile }, nodeArgs: inspectorArgs(inspectorPort) });
      const clients: Client[] = [];
      const halt: Halt = { halted: false };
      let churn: Churn | null = null;
      try {
        const mirrorStarted = performance.now();
        for (;;) {
          if (!daemon.alive()) throw new Error(`mailcairnd ${daemon.state()} before the mailbox was mirrored`);
          const stored = count(database, "SELECT count(*) AS n FROM messages WHERE state = 'stored' AND parse_version IS NOT NULL");
          if (stored >= s.messages && count(database, 'SELECT count(*) AS n FROM sync_runs WHERE ended_at IS NOT NULL') > 0) break;
          if (performance.now() - mirrorStarted > 30 * MINUTE_MS) throw new Error('the mailbox was not mirrored within 30 min');
          await sleep(500);
        }
        log(`mirrored and derived ${s.messages} messages in ${round((performance.now() - mirrorStarted) / 1000)} s`);
        const heapReader = await attachHeapReader(inspectorPort).catch((err: Error) => {
          log(`no heap figures: ${err.message}`);
          return null;
        });
        for (let i = 0; i < s.clients + 1; i++) clients.push(await connectClient(port, `bench-soak-${i}`, KEY));
        const [sender, ...readers] = clients as [Client, ...Client[]];

        // ------------------------------------------------ the soak
        const pools: Pools = { emailIds: [], cursors: [], outgoing: [] };
        const samples: Sample[] = [];
        const minutes: Minute[] = [];
        const loadAtStart = loadavg().map((l) => round(l, 2));
        const startedAt = performance.now();
        const endsAt = startedAt + s.minutes * MINUTE_MS;
        churn = startChurn({
          dovecot,
          user: USER,
          existing: s.messages,
          mailPerMinute: s.mailPerMinute,
          flagChangesPerMinute: s.flagChangesPerMinute,
          seed: SEED,
        });
        const load = readLoad(readers, s.rate, startedAt, endsAt, pools, samples, halt);
        const sending = sendLoad(sender, s.sendsPerMinute, endsAt, sends, pools, halt);
        const resident: Array<{ minute: number; rss: number; anon: number }> = [];
        const sampler = setInterval(() => {
          const r = readResident(daemon.pid);
          if (r) resident.push({ minute: Math.floor((performance.now() - startedAt) / MINUTE_MS), rss: r.rssMiB, anon: r.anonMiB });
        }, RSS_SAMPLE_MS);
        sampler.unref();
        const mean = (xs: number[]): number => (xs.length === 0 ? Number.NaN : xs.reduce((a, b) => a + b, 0) / xs.length);
        let cpuBefore = readStats(daemon.pid)?.cpuMs ?? Number.NaN;
        let churnBefore = churn.counts();
        let sendsBefore = 0;
        for (let m = 0; m < s.minutes; m++) {
          await sleep(Math.max(0, startedAt + (m + 1) * MINUTE_MS - performance.now()));
          if (!daemon.alive()) throw new Error(`mailcairnd ${daemon.state()} during minute ${m + 1}`);
          const now = readResident(daemon.pid);
          const reads = [...resident.filter((r) => r.minute === m), ...(now ? [{ minute: m, rss: now.rssMiB, anon: now.anonMiB }] : [])];
          const cpu = readStats(daemon.pid)?.cpuMs ?? Number.NaN;
          const heap = heapReader ? await heapReader.read().catch(() => null) : null;
          const churned = churn.counts();
          minutes.push({
            minute: m + 1,
            rssMiB: mean(reads.map((r) => r.rss)),
            anonMiB: mean(reads.map((r) => r.anon)),
            rssMaxMiB: Math.max(...reads.map((r) => r.rss)),
            heap,
            cpuPercent: ((cpu - cpuBefore) / MINUTE_MS) * 100,
            delivered: churned.delivered - churnBefore.delivered,
            flagChanges: churned.flagChanges - churnBefore.flagChanges,
            sends: sends.recorded.length - sendsBefore,
          });
          cpuBefore = cpu;
          churnBefore = churned;
          sendsBefore = sends.recorded.length;
          const theirs = samples.filter((x) => x.minute === m);
          log(
            `minute ${m + 1}/${s.minutes}: RSS ${round(mean(reads.map((r) => r.rss)))} MiB, heap ${heap ? round(heap.usedMiB) : 'n/a'} MiB, ${theirs.length} calls, p99 ${round(
              percentile(
                theirs.map((x) => x.ms),
                99,
              ),
            )} ms`,
          );
        }
        clearInterval(sampler);
        await Promise.all([load, sending]);
        await churn.stop();
        const loadAtEnd = loadavg().map((l) => round(l, 2));
        heapReader?.close();

        // ------------------------------------------------ settle: every send delivered, the mirror caught up
        log('load stopped; waiting for the outbox and the mirror to settle');
        const settleStarted = performance.now();
        const settleEnds = settleStarted + s.settleSeconds * 1000;
        let inbox = compare(await admin.fetchAll(USER, 'INBOX'), readMirror(database, ACCOUNT, 'inbox'));
        let sent = compare(await admin.fetchAll(USER, 'Sent'), readMirror(database, ACCOUNT, 'sent'));
        const allDelivered = (): boolean => sends.recorded.every((to) => (sends.delivered.get(to) ?? 0) > 0);
        while (!(allDelivered() && settled(inbox) && settled(sent) && sent.server === sends.recorded.length) && performance.now() < settleEnds) {
          await sleep(5_000);
          inbox = compare(await admin.fetchAll(USER, 'INBOX'), readMirror(database, ACCOUNT, 'inbox'));
          sent = compare(await admin.fetchAll(USER, 'Sent'), readMirror(database, ACCOUNT, 'sent'));
        }
        const settleMs = performance.now() - settleStarted;
        const churned = churn.counts();

        // ------------------------------------------------ figures
        const lines = logLines(logFile);
        const restarts = lines.filter((l) => l.event === 'actor.restart').length;
        const exits = lines.filter((l) => l.event === 'actor.exit').length;
        const errorLines = lines.filter((l) => Number(l.level) >= 50).length;
        const failed = samples.filter((x) => !x.ok).length;

        for (const m of minutes) {
          const theirs = samples.filter((x) => x.minute === m.minute - 1).map((x) => x.ms);
          rows.push({
            part: 'per minute',
            minute: m.minute,
            phase: m.minute <= s.warmup ? 'warm-up' : 'measured',
            calls: theirs.length,
            failed: samples.filter((x) => x.minute === m.minute - 1 && !x.ok).length,
            'p50 ms': round(percentile(theirs, 50)),
            'p99 ms': round(percentile(theirs, 99)),
            'RSS MiB': round(m.rssMiB),
            'RSS max MiB': round(m.rssMaxMiB),
            'RssAnon MiB': round(m.anonMiB),
            'heap used MiB': m.heap ? round(m.heap.usedMiB) : null,
            'heap total MiB': m.heap ? round(m.heap.totalMiB) : null,
            isolates: m.heap?.isolates ?? null,
            'CPU %': round(m.cpuPercent),
            'new mail': m.delivered,
            'flag changes': m.flagChanges,
            sends: m.sends,
          });
        }
        const after = minutes.filter((m) => m.minute > s.warmup);
        const rssSlope = leastSquares(after.map((m) => [m.minute, m.rssMiB] as const));
        const anonSlope = leastSquares(after.map((m) => [m.minute, m.anonMiB] as const));
        const heapSlope = leastSquares(after.filter((m) => m.heap).map((m) => [m.minute, m.heap!.usedMiB] as const));
        const drift = p99Drift(after.map((m) => samples.filter((x) => x.minute === m.minute - 1).map((x) => x.ms)));
        const perTool = new Map<string, number[]>();
        for (const x of samples.filter((x) => x.minute >= s.warmup)) perTool.set(x.tool, [...(perTool.get(x.tool) ?? []), x.ms]);
        for (const [tool, ms] of [...perTool].sort()) {
          rows.push({ part: 'per tool, after warm-up', tool, calls: ms.length, 'p50 ms': round(percentile(ms, 50)), 'p99 ms': round(percentile(ms, 99)) });
        }
        const slopeText = (sl: typeof rssSlope): string =>
          `${sl.slope.toFixed(2)} MiB/min ± ${Number.isFinite(sl.standardError) ? sl.standardError.toFixed(2) : 'n/a'} (${sl.points} min)`;
        const deliveries = [...sends.delivered.values()];
        const sendsLost = sends.recorded.filter((to) => (sends.delivered.get(to) ?? 0) === 0).length;
        const sendsDuplicated = deliveries.reduce((sum, n) => sum + Math.max(0, n - 1), 0);
        const summary: Array<[string, string | number]> = [
          ['minutes (warm-up)', `${s.minutes} (${s.warmup})`],
          ['read calls (failed)', `${samples.length} (${failed})`],
          ['RSS slope after warm-up', slopeText(rssSlope)],
          ['RssAnon slope after warm-up', slopeText(anonSlope)],
          ['heap (live, all isolates) slope after warm-up', heapReader ? slopeText(heapSlope) : 'n/a: the inspector did not answer'],
          ['p99 first → last minutes after warm-up', `${millis(drift.first)} → ${millis(drift.last)} (${drift.minutes} min each, ${drift.ratio.toFixed(2)}×)`],
          ['actor.restart lines (actor.exit)', `${restarts} (${exits})`],
          ['error lines in the log', errorLines],
          ['new mail delivered / flag changes / doveadm failures', `${churned.delivered} / ${churned.flagChanges} / ${churned.failed}`],
          ['sends recorded / refused / delivered', `${sends.recorded.length} / ${sends.refused} / ${deliveries.reduce((a, b) => a + b, 0)}`],
          [
            'INBOX server / mirror: lost, duplicated, stray, content, flags',
            `${inbox.server} / ${inbox.mirror}: ${inbox.lost}, ${inbox.duplicated}, ${inbox.stray}, ${inbox.contentDiffers}, ${inbox.flagsDiffer}`,
          ],
          [
            'Sent server / mirror: lost, duplicated, stray, content, flags',
            `${sent.server} / ${sent.mirror}: ${sent.lost}, ${sent.duplicated}, ${sent.stray}, ${sent.contentDiffers}, ${sent.flagsDiffer}`,
          ],
          ['settled after the load in', `${round(settleMs / 1000)} s (limit ${s.settleSeconds} s)`],
          ['load average at start → end', `${loadAtStart.join(' ')} → ${loadAtEnd.join(' ')}`],
        ];
        for (const [figure, value] of summary) rows.push({ part: 'summary', figure, value });

        const mib = (n: number): string => `${n.toFixed(2)} MiB/min`;
        const n = (x: number): string => String(x);
        rows.push(
          boundGoal('messages lost, mirror vs server (INBOX + Sent) = 0', inbox.lost + sent.lost, 0, n),
          boundGoal('messages duplicated or stray in the mirror = 0', inbox.duplicated + inbox.stray + sent.duplicated + sent.stray, 0, n),
          boundGoal('flags or content differing after settling = 0', inbox.flagsDiffer + inbox.contentDiffers + sent.flagsDiffer + sent.contentDiffers, 0, n),
          boundGoal('recorded sends not delivered to the sink = 0', sendsLost, 0, n),
          boundGoal('sends delivered more than once = 0', sendsDuplicated, 0, n),
          boundGoal('sent copies filed in Sent ≠ sends (missing or extra) = 0', Math.abs(sent.server - sends.recorded.length), 0, n),
          boundGoal('actor restarts = 0', restarts, 0, n),
          boundGoal('read calls failed = 0', failed, 0, n),
          boundGoal(`RSS flat after warm-up: slope < ${FLAT_MIB_PER_MINUTE} MiB/min`, rssSlope.slope, FLAT_MIB_PER_MINUTE, mib),
          boundGoal(
            `heap live set flat after warm-up: slope < ${FLAT_MIB_PER_MINUTE} MiB/min`,
            heapReader ? heapSlope.slope : Number.NaN,
            FLAT_MIB_PER_MINUTE,
            mib,
          ),
          boundGoal(`p99 drift after warm-up ≤ ${DRIFT_BOUND}×`, drift.ratio, DRIFT_BOUND, (x) => `${x.toFixed(2)}×`),
        );
      } catch (err) {
        halt.halted = true;
        await churn?.stop();
        process.stderr.write(`mailcairnd's last lines:\n${daemon.logTail(30)}\n`);
        throw err;
      } finally {
        await Promise.allSettled(clients.map((c) => c.close()));
        await daemon.stop();
      }
    } finally {
      await sink?.stop();
      await dovecot.stop();
      rmSync(dir, { recursive: true, force: true });
    }
    return rows;
  },
};
