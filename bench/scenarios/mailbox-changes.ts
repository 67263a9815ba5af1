/**
 * mailbox-changes: how the mirror follows changes on the server, and what
 * that costs the server (issue 12). One part per direction; each is an
 * exported function returning rows, and the scenario runs them in turn:
 *
 * - `serverChangeToVisible` (this part): at 1, 10 and 50 mapped folders
 *   (BENCH_FOLDER_COUNTS, default `1,10,50`), a private Dovecot, a counting
 *   proxy in front of it (peers/imap-counter.ts) and the compiled daemon
 *   with a one-day Interval, so only the change watch can make a change
 *   show. Changes are made with doveadm behind the daemon's back — new mail
 *   (`doveadm save`), `\Flagged` toggled, a keyword added, an expunge —
 *   spread round-robin over the folders, each after a random pause of 0–5 s
 *   (seeded) so it lands anywhere in the sweep period; the time from
 *   doveadm's return to the change showing through `list_emails` (MCP SDK
 *   client, polled every 100 ms) is one sample (BENCH_CHANGE_SAMPLES,
 *   default 24, each bounded at 20 s). Beside it: the daemon's commands per
 *   minute while nothing changes (BENCH_IDLE_SECONDS, default 30, scaled to
 *   a minute), its connections, and its commands per change.
 *   The floor: the same changes to one folder observed by a plain imapflow
 *   client IDLEing on it (the event's arrival). The alternative of one
 *   IDLE connection per folder is measured for its idle cost: N imapflow
 *   clients each IDLEing on one folder through the counting proxy
 *   (connections, commands per minute); its latency is the floor's.
 * - `toolToServerRows` (mailbox-changes-tool.ts): an agent's `set_mail_flags`
 *   call until the server holds the change, beside the same change made by
 *   a plain imapflow client, observed the same way.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { toolToServerRows } from './mailbox-changes-tool.ts';
import { storedCount } from '../../test/helpers/mirror.ts';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ImapFlow } from 'imapflow';
import { seededRandom } from '../../runtime/clock.ts';
import { mailAdmin } from '../../test/harness/doveadm.ts';
import { type Dovecot, startDovecot } from '../../test/harness/dovecot.ts';
import { saveMessage, writeMaildir } from '../../test/harness/place-mail.ts';
import { trackDir } from '../../test/harness/processes.ts';
import { reservePort } from '../../test/helpers/ports.ts';
import { type ImapCounter, startImapCounter } from '../peers/imap-counter.ts';
import type { Row, Scenario } from '../scenario.ts';
import { round } from '../stats.ts';
import { benchMcpEndpoint, writeBenchConfig } from '../peers/daemon-config.ts';
import { startBenchDaemon } from '../peers/daemon.ts';

const USER = 'bench';
const FLOOR_USER = 'floor';
const PASSWORD = 'pw-bench';
const ACCOUNT = 'bench';
const SEED_PER_FOLDER = 12;
const SAMPLE_BOUND_MS = 20_000;
/** The daemon's default ChangeCheckInterval: changes are spread over one period. */
const PERIOD_MS = 5_000;

const envInt = (name: string, fallback: number): number => {
  const v = Number(process.env[name]);
  return Number.isInteger(v) && v > 0 ? v : fallback;
};

type Folder = { alias: string; path: string; live: number[]; flagged: Set<number>; subjects: Map<number, string> };
type Change = { kind: 'new mail' | 'flag' | 'keyword' | 'expunge'; folder: Folder; make(): Promise<void>; seen(emails: Summary[]): boolean };
type Summary = { subject?: string; flags?: string[]; keywords?: string[] };

function message(subject: string): string {
  return [
    'From: Bench <bench@example.org>',
    'To: Alice <alice@example.org>',
    `Subject: ${subject}`,
    `Message-ID: <${subject.replace(/\W/g, '-')}@example.org>`,
    'Date: Mon, 2 Nov 2026 10:00:00 +0000',
    '',
    `Body of ${subject}`,
    '',
  ].join('\r\n');
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

async function seedFolders(dovecot: Dovecot, user: string, n: number): Promise<Folder[]> {
  const folders: Folder[] = [];
  for (let i = 0; i < n; i++) {
    const path = i === 0 ? 'INBOX' : `Box${String(i + 1).padStart(2, '0')}`;
    const subjects = new Map<number, string>();
    const seed = Array.from({ length: SEED_PER_FOLDER }, (_, j) => {
      subjects.set(j + 1, `Seed ${path} ${j + 1}`);
      return { raw: message(`Seed ${path} ${j + 1}`) };
    });
    await writeMaildir(dovecot, user, path, seed);
    folders.push({ alias: i === 0 ? 'inbox' : path.toLowerCase(), path, live: [...subjects.keys()], flagged: new Set(), subjects });
  }
  return folders;
}

/** The i-th change: kinds and folders in turn. */
function changeFor(dovecot: Dovecot, user: string, folders: Folder[], i: number): Change {
  const admin = mailAdmin(dovecot);
  // 17 is prime to 10 and 50: successive changes jump between folders, and every kind reaches every folder count.
  const folder = folders[(i * 17) % folders.length]!;
  const kinds: Change['kind'][] = ['new mail', 'flag', 'keyword', 'expunge'];
  let kind = kinds[i % kinds.length]!;
  if ((kind === 'expunge' || kind === 'flag' || kind === 'keyword') && folder.live.length < 4) kind = 'new mail';
  const uid = folder.live[i % folder.live.length]!;
  const subject = folder.subjects.get(uid);
  switch (kind) {
    case 'new mail': {
      const s = `Change ${folder.path} ${i}`;
      return { kind, folder, make: () => saveMessage(dovecot, user, folder.path, message(s)), seen: (e) => e.some((m) => m.subject === s) };
    }
    case 'flag': {
      const on = !folder.flagged.has(uid);
      return {
        kind,
        folder,
        async make() {
          if (on) await admin.addFlags(user, folder.path, [uid], ['\\Flagged']);
          else await admin.removeFlags(user, folder.path, [uid], ['\\Flagged']);
          if (on) folder.flagged.add(uid);
          else folder.flagged.delete(uid);
        },
        seen: (e) => e.some((m) => m.subject === subject && (m.flags ?? []).includes('\\Flagged') === on),
      };
    }
    case 'keyword': {
      const keyword = `k${i}`;
      return {
        kind,
        folder,
        make: () => admin.addFlags(user, folder.path, [uid], [keyword]),
        seen: (e) => e.some((m) => m.subject === subject && (m.keywords ?? []).some((k) => k.toLowerCase() === keyword)),
      };
    }
    case 'expunge':
      return {
        kind,
        folder,
        async make() {
          await admin.expunge(user, folder.path, [uid]);
          folder.live = folder.live.filter((u) => u !== uid);
        },
        seen: (e) => !e.some((m) => m.subject === subject),
      };
  }
}

type Daemon = { pid: number; database: string; mcpPort: number; stop(): Promise<void>; logTail(): string };

async function startDaemon(dir: string, imapPort: number, user: string, folders: Folder[]): Promise<Daemon> {
  writeFileSync(join(dir, 'pw'), PASSWORD);
  const mcpPort = await reservePort();
  const { config, database } = writeBenchConfig(dir, {
    McpEndpoint: benchMcpEndpoint(mcpPort),
    Logging: { Level: 'warn', Format: 'Json' },
    // Only the change watch can make a change show within a sample.
    MailSynchronization: { Interval: '1.00:00:00' },
    Accounts: [
      {
        Id: ACCOUNT,
        Imap: { Host: '127.0.0.1', Port: imapPort, Security: 'None', Username: user, Password: `file:${join(dir, 'pw')}` },
        Folders: folders.map((f) => (f.path === 'INBOX' ? { Alias: 'inbox' } : { Alias: f.alias, Path: f.path })),
      },
    ],
  });
  const d = startBenchDaemon({ config, output: { logFile: join(dir, 'mailcairnd.log') } });
  return { pid: d.pid, database, mcpPort, logTail: () => d.logTail(20), stop: d.stop };
}

async function list(client: Client, alias: string): Promise<Summary[]> {
  const result = (await client.callTool({ name: 'list_emails', arguments: { folders: [alias], pageSize: 100 } })) as CallToolResult;
  if (result.isError) throw new Error(`list_emails refused: ${JSON.stringify(result.structuredContent)}`);
  return (result.structuredContent as { emails: Summary[] }).emails;
}

function perMinute(counter: ImapCounter, ms: number): { total: number; byName: string } {
  const scale = 60_000 / ms;
  const byName = Object.entries(counter.commands())
    .sort((a, b) => b[1] - a[1])
    .map(([name, n]) => `${name} ${round(n * scale)}`)
    .join(', ');
  return { total: round(counter.total() * scale), byName };
}

/** One folder count: the daemon's latency, idle cost, and connections. */
async function daemonAt(dovecot: Dovecot, n: number, samples: number, idleMs: number, rows: Row[]): Promise<void> {
  const user = `${USER}${n}`;
  await dovecot.addUser({ user, password: PASSWORD });
  const folders = await seedFolders(dovecot, user, n);
  const counter = await startImapCounter({ host: dovecot.host, port: dovecot.port });
  const dir = mkdtempSync(join(tmpdir(), 'mailcairn-bench-changes-'));
  trackDir(dir);
  const daemon = await startDaemon(dir, counter.port, user, folders);
  const client = new Client({ name: 'bench-mailbox-changes', version: '1.0.0' });
  try {
    const started = performance.now();
    while (storedCount(daemon.database) < n * SEED_PER_FOLDER) {
      if (performance.now() - started > 120_000) throw new Error(`no first mirror within 2 min\n${daemon.logTail()}`);
      await sleep(100);
    }
    await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${daemon.mcpPort}/mcp`)));
    await sleep(PERIOD_MS + 1_000); // past the first run's tail and the watch's first sweep
    counter.reset();
    const idleStart = performance.now();
    await sleep(idleMs);
    const idle = perMinute(counter, performance.now() - idleStart);
    const connections = counter.open();

    const random = seededRandom(42 + n);
    const latencies: number[] = [];
    const byKind = new Map<string, number[]>();
    let missed = 0;
    counter.reset();
    const changeStart = performance.now();
    for (let i = 0; i < samples; i++) {
      await sleep(Math.floor(random.next() * PERIOD_MS));
      const change = changeFor(dovecot, user, folders, i);
      await change.make();
      const at = performance.now();
      let ms = Number.POSITIVE_INFINITY;
      while (performance.now() - at < SAMPLE_BOUND_MS) {
        if (change.seen(await list(client, change.folder.alias))) {
          ms = performance.now() - at;
          break;
        }
        await sleep(100);
      }
      if (!Number.isFinite(ms)) missed += 1;
      else {
        latencies.push(ms);
        byKind.set(change.kind, [...(byKind.get(change.kind) ?? []), ms]);
      }
    }
    const changeMs = performance.now() - changeStart;
    const perChange = round(counter.total() / samples);
    latencies.sort((a, b) => a - b);
    rows.push({
      side: 'Mailcairn (watch + STATUS sweep)',
      folders: n,
      samples: latencies.length,
      missed,
      'visible p50 s': round(percentile(latencies, 50) / 1_000, 2),
      'p95 s': round(percentile(latencies, 95) / 1_000, 2),
      'p99 s': round(percentile(latencies, 99) / 1_000, 2),
      'max s': round((latencies.at(-1) ?? Number.NaN) / 1_000, 2),
      'idle commands/min': idle.total,
      'idle commands': idle.byName,
      connections,
      'commands per change': perChange,
      note: `${[...byKind]
        .map(
          ([k, v]) =>
            `${k} p50 ${round(
              percentile(
                v.sort((a, b) => a - b),
                50,
              ) / 1_000,
              2,
            )} s`,
        )
        .join('; ')}; ${round(changeMs / 1_000)} s of changes`,
    });
  } finally {
    await client.close().catch(() => {});
    await daemon.stop();
    await counter.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The floor: a plain imapflow client IDLEing on the folder sees the same changes (the event's arrival). */
async function floor(dovecot: Dovecot, samples: number, rows: Row[]): Promise<void> {
  await dovecot.addUser({ user: FLOOR_USER, password: PASSWORD });
  const folders = await seedFolders(dovecot, FLOOR_USER, 1);
  const client = new ImapFlow({
    host: dovecot.host,
    port: dovecot.port,
    secure: false,
    auth: { user: FLOOR_USER, pass: PASSWORD },
    logger: false,
    qresync: true,
    autoIdleDelay: 100,
  });
  client.on('error', () => {});
  await client.connect();
  try {
    await client.mailboxOpen('INBOX', { readOnly: true });
    await sleep(1_000); // in IDLE
    let signal: ((at: number) => void) | null = null;
    for (const event of ['exists', 'expunge', 'flags'] as const) client.on(event, () => signal?.(performance.now()));
    const random = seededRandom(7);
    const latencies: number[] = [];
    let missed = 0;
    for (let i = 0; i < samples; i++) {
      await sleep(Math.floor(random.next() * 1_000));
      const change = changeFor(dovecot, FLOOR_USER, folders, i);
      const seen = new Promise<number>((resolve) => {
        signal = resolve;
      });
      await change.make();
      const at = performance.now();
      const arrivedAt = await Promise.race([seen, sleep(SAMPLE_BOUND_MS).then(() => null)]);
      signal = null;
      // Measured from doveadm's return, as on the daemon's side; an event that beat it counts as 0.
      if (arrivedAt !== null) latencies.push(Math.max(0, arrivedAt - at));
      else missed += 1;
    }
    latencies.sort((a, b) => a - b);
    rows.push({
      side: 'floor: imapflow IDLE on the folder',
      folders: 1,
      samples: latencies.length,
      missed,
      'visible p50 s': round(percentile(latencies, 50) / 1_000, 2),
      'p95 s': round(percentile(latencies, 95) / 1_000, 2),
      'p99 s': round(percentile(latencies, 99) / 1_000, 2),
      'max s': round((latencies.at(-1) ?? Number.NaN) / 1_000, 2),
      'idle commands/min': null,
      'idle commands': '',
      connections: 1,
      'commands per change': 0,
      note: 'event arrival; Dovecot mailbox_idle_check_interval 1 s (harness)',
    });
  } finally {
    await client.logout().catch(() => client.close());
  }
}

/** The alternative: one IDLE connection per folder, its idle cost (its latency is the floor's). */
async function idlePerFolder(dovecot: Dovecot, n: number, idleMs: number, rows: Row[]): Promise<void> {
  const user = `${USER}${n}`;
  const counter = await startImapCounter({ host: dovecot.host, port: dovecot.port });
  const clients: ImapFlow[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const path = i === 0 ? 'INBOX' : `Box${String(i + 1).padStart(2, '0')}`;
      const c = new ImapFlow({
        host: dovecot.host,
        port: counter.port,
        secure: false,
        auth: { user, pass: PASSWORD },
        logger: false,
        qresync: true,
        autoIdleDelay: 100,
      });
      c.on('error', () => {});
      await c.connect();
      await c.mailboxOpen(path, { readOnly: true });
      clients.push(c);
    }
    await sleep(3_000); // every client in IDLE
    counter.reset();
    const start = performance.now();
    await sleep(idleMs);
    const idle = perMinute(counter, performance.now() - start);
    rows.push({
      side: 'alternative: one imapflow IDLE connection per folder',
      folders: n,
      samples: 0,
      missed: 0,
      'visible p50 s': null,
      'p95 s': null,
      'p99 s': null,
      'max s': null,
      'idle commands/min': idle.total,
      'idle commands': idle.byName,
      connections: counter.open(),
      'commands per change': null,
      note: `latency as the floor; ${counter.maxOpen()} connections at once (Dovecot's default mail_max_userip_connections is 10)`,
    });
  } finally {
    for (const c of clients) await c.logout().catch(() => c.close());
    await counter.close();
  }
}

/** Part 1: a change on the server → visible through `list_emails`, at each folder count, with the floor and the per-folder IDLE alternative. */
export async function serverChangeToVisible(): Promise<Row[]> {
  const counts = (process.env.BENCH_FOLDER_COUNTS ?? '1,10,50')
    .split(',')
    .map(Number)
    .filter((c) => Number.isInteger(c) && c > 0);
  const samples = envInt('BENCH_CHANGE_SAMPLES', 24);
  const idleMs = envInt('BENCH_IDLE_SECONDS', 30) * 1_000;
  const dovecot = await startDovecot({ users: [{ user: USER, password: PASSWORD }] });
  const rows: Row[] = [];
  try {
    await floor(dovecot, samples, rows);
    for (const n of counts) {
      await daemonAt(dovecot, n, samples, idleMs, rows);
      await idlePerFolder(dovecot, n, idleMs, rows);
    }
  } finally {
    await dovecot.stop();
  }
  return rows;
}

export const mailboxChanges: Scenario = {
  name: 'mailbox-changes',
  description:
    'a change on the server → visible through list_emails at 1, 10 and 50 folders; idle commands per minute and connections; the imapflow IDLE floor; set_mail_flags → server state against an imapflow STORE',
  async run() {
    return [...(await serverChangeToVisible()), ...(await toolToServerRows())];
  },
};
