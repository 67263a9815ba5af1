/**
 * accounts-100: many accounts in one process. One private Dovecot with
 * BENCH_ACCOUNTS users (default 100), each holding BENCH_ACCOUNT_MESSAGES
 * generated messages in its INBOX (default 500, `bench` profile ≈ 63 KB;
 * BENCH_ACCOUNT_PROFILE=small for ≈ 5 KB), written straight into the
 * Maildirs. Then, one after the other:
 *
 *  1. the compiled daemon with every account configured (secret references
 *     for the passwords, the MCP endpoint behind an API key), started on an
 *     empty database and left to mirror them all. Measured from spawn:
 *     mirror-all wall (until every account's first run has ended and all its
 *     messages are stored with their text derived, polled every POLL_MS),
 *     each account's finish (its first run's `ended_at`), CPU at mirror-all
 *     and peak RSS (VmHWM, lifetime) and threads (`Threads`, sampled) from
 *     /proc; and `search_emails` latency through /mcp from one client calling
 *     back to back while they mirror and then AFTER_CALLS times after.
 *  2. the same mail copied by mbsync, one process per account under the
 *     wait4 wrapper, BENCH_MBSYNC_PARALLEL at a time (default 2, the cores):
 *     wall from the first start to the last end, CPU summed, the largest peak.
 *
 * Every process started here is tracked and stopped by its PID, with a
 * watchdog that ends the daemon if this process dies.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { randomBytes } from 'node:crypto';
import Libsql from 'libsql';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startDovecot, type Dovecot, type DovecotUser } from '../../test/harness/dovecot.ts';
import { generateMailbox } from '../../test/harness/generator.ts';
import { writeMaildir } from '../../test/harness/place-mail.ts';
import { reservePort } from '../../test/helpers/ports.ts';
import { boundGoal, mebibytes, millis } from '../goals.ts';
import { mbsyncConfig } from '../peers/mbsync.ts';
import { readStats, type Timed } from '../peers/process-stats.ts';
import type { Row, Scenario } from '../scenario.ts';
import { median, round, summarize } from '../stats.ts';
import { mbsyncOnce } from './sync-sides.ts';
import { apiKeyEntry, benchMcpEndpoint, writeBenchConfig } from '../peers/daemon-config.ts';
import { allocatorNote, startBenchDaemon } from '../peers/daemon.ts';

/** How often the database and /proc are read while the accounts mirror. */
const POLL_MS = 250;
/** The whole mirror must end within this, or the scenario fails (and stops the daemon). */
const MIRROR_LIMIT_MS = 60 * 60_000;
const AFTER_CALLS = 200;
/** A word of the generator's vocabulary that most messages hold: the hard, many-match search. */
const QUERY = { queryText: 'meeting', resultLimit: 20 };
/** Issue 14's bounds for this scenario, in MiB (10^6-byte MB converted). */
const RSS_BOUND_MIB = 600e6 / 2 ** 20;
const MCP_P99_BOUND_MS = 50;

type Settings = { accounts: number; perAccount: number; profile: 'bench' | 'small'; mbsyncParallel: number };

function settings(): Settings {
  const n = (name: string, fallback: number): number => {
    const v = Number(process.env[name] ?? fallback);
    if (!Number.isInteger(v) || v < 1) throw new Error(`${name} must be a whole number ≥ 1`);
    return v;
  };
  const profile = process.env.BENCH_ACCOUNT_PROFILE ?? 'bench';
  if (profile !== 'bench' && profile !== 'small') throw new Error('BENCH_ACCOUNT_PROFILE must be bench or small');
  return { accounts: n('BENCH_ACCOUNTS', 100), perAccount: n('BENCH_ACCOUNT_MESSAGES', 500), profile, mbsyncParallel: n('BENCH_MBSYNC_PARALLEL', 2) };
}

type Daemon = {
  pid: number;
  startedAt: number;
  startedEpochMs: number;
  mcpPort: number;
  apiKey: string;
  database: string;
  alive(): boolean;
  stop(): Promise<void>;
};

async function startDaemon(dir: string, dovecot: Dovecot, users: DovecotUser[]): Promise<Daemon> {
  const apiKey = `mc_${randomBytes(24).toString('base64url')}`;
  writeFileSync(join(dir, 'agent.key'), apiKey);
  const accounts = users.map((u, i) => {
    writeFileSync(join(dir, `pw-${i}`), u.password);
    return {
      Id: `acct-${i}`,
      Imap: { Host: '127.0.0.1', Port: dovecot.port, Security: 'None', Username: u.user, Password: `file:${join(dir, `pw-${i}`)}` },
      Folders: [{ Alias: 'inbox' }],
    };
  });
  const mcpPort = await reservePort();
  const { config, database } = writeBenchConfig(dir, {
    McpEndpoint: benchMcpEndpoint(mcpPort, [apiKeyEntry('agent', `file:${join(dir, 'agent.key')}`)]),
    Logging: { Level: 'warn', Format: 'Json' },
    // One run per account: the first run is what is measured; no later run disturbs the searches after.
    MailSynchronization: { Interval: '1.00:00:00' },
    Accounts: accounts,
  });
  const startedAt = performance.now();
  const startedEpochMs = Date.now();
  // A drain of a hundred accounts may take longer than the default grace.
  const d = startBenchDaemon({ config, output: { logFile: process.env.BENCH_DAEMON_LOG ?? join(dir, 'mailcairnd.log') }, stopGraceMs: 60_000 });
  return { pid: d.pid, startedAt, startedEpochMs, mcpPort, apiKey, database, alive: d.alive, stop: d.stop };
}

/** Per account: messages stored with text derived, and its first ended run's end (daemon clock, epoch ms). */
function progress(database: string): { stored: Map<string, number>; firstEnded: Map<string, { startedAt: number; endedAt: number; outcome: string }> } {
  const stored = new Map<string, number>();
  const firstEnded = new Map<string, { startedAt: number; endedAt: number; outcome: string }>();
  try {
    const db = new Libsql(database, { readonly: true, timeout: 2_000 });
    try {
      const counts = db
        .prepare("SELECT account_id AS a, count(*) AS n FROM messages WHERE state = 'stored' AND parse_version IS NOT NULL GROUP BY account_id")
        .all() as Array<{ a: string; n: number }>;
      for (const c of counts) stored.set(c.a, Number(c.n));
      const runs = db
        .prepare(
          'SELECT r.account_id AS a, r.started_at AS s, r.ended_at AS e, r.outcome AS o FROM sync_runs r WHERE r.id = (SELECT min(id) FROM sync_runs WHERE account_id = r.account_id AND ended_at IS NOT NULL)',
        )
        .all() as Array<{ a: string; s: number; e: number; o: string }>;
      for (const r of runs) firstEnded.set(r.a, { startedAt: Number(r.s), endedAt: Number(r.e), outcome: r.o });
    } finally {
      db.close();
    }
  } catch {
    // not created yet, or busy: the next poll reads it
  }
  return { stored, firstEnded };
}

function threads(pid: number): number {
  try {
    return Number(/Threads:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);
  } catch {
    return NaN;
  }
}

async function connectClient(d: Daemon): Promise<Client> {
  const started = performance.now();
  for (;;) {
    const client = new Client({ name: 'bench-accounts', version: '1.0.0' });
    try {
      const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${d.mcpPort}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${d.apiKey}` } },
      });
      await client.connect(transport);
      return client;
    } catch (err) {
      if (!d.alive() || performance.now() - started > 60_000) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/** One search_emails call's latency in ms; throws when the tool answers an error. */
async function searchOnce(client: Client): Promise<number> {
  const started = performance.now();
  const result = (await client.callTool({ name: 'search_emails', arguments: QUERY })) as { isError?: boolean };
  const ms = performance.now() - started;
  if (result.isError) throw new Error('search_emails answered an error');
  return ms;
}

type Mirror = {
  wallMs: number;
  cpuMs: number;
  peakRssMiB: number;
  threadsMax: number;
  threadsIdle: number;
  finishMs: number[];
  /** Each account's first run from its own start to its end: waiting for a scheduler slot excluded. */
  runMs: number[];
  outcomes: Record<string, number>;
  during: number[];
  duringFailures: number;
  samplerError: string | null;
  after: number[];
};

async function mirrorAll(dir: string, dovecot: Dovecot, users: DovecotUser[], perAccount: number, log: (s: string) => void): Promise<Mirror> {
  const d = await startDaemon(dir, dovecot, users);
  let done = false;
  try {
    let threadsMax = 0;
    const during: number[] = [];
    let duringFailures = 0;
    let samplerError: string | null = null;
    // The sampling client: back-to-back calls while the accounts mirror (failures counted, not fatal: the
    // endpoint may come up after the first accounts start).
    const sampler = (async () => {
      const client = await connectClient(d);
      try {
        while (!done) {
          try {
            during.push(await searchOnce(client));
          } catch {
            duringFailures++;
            await new Promise((r) => setTimeout(r, 100));
          }
        }
      } finally {
        await client.close();
      }
    })().catch((err: unknown) => {
      samplerError = (err as Error).message;
    });
    let cpuMs = NaN;
    let wallMs = NaN;
    let lastLog = 0;
    for (;;) {
      if (!d.alive()) throw new Error('mailcairnd exited while mirroring');
      const elapsed = performance.now() - d.startedAt;
      if (elapsed > MIRROR_LIMIT_MS) throw new Error(`not every account mirrored within ${MIRROR_LIMIT_MS / 60_000} min`);
      threadsMax = Math.max(threadsMax, threads(d.pid) || 0);
      const p = progress(d.database);
      const finished = users.filter((_, i) => p.firstEnded.has(`acct-${i}`) && (p.stored.get(`acct-${i}`) ?? 0) >= perAccount).length;
      if (finished === users.length) {
        wallMs = elapsed;
        cpuMs = readStats(d.pid)?.cpuMs ?? NaN;
        done = true;
        const firstRuns = users.map((_, i) => p.firstEnded.get(`acct-${i}`)!);
        const finishMs = firstRuns.map((r) => r.endedAt - d.startedEpochMs);
        const runMs = firstRuns.map((r) => r.endedAt - r.startedAt);
        const outcomes: Record<string, number> = {};
        for (const r of p.firstEnded.values()) outcomes[r.outcome] = (outcomes[r.outcome] ?? 0) + 1;
        await sampler;
        log(`all ${users.length} accounts mirrored at ${(wallMs / 1000).toFixed(1)} s; ${during.length} searches meanwhile`);
        const client = await connectClient(d);
        const after: number[] = [];
        try {
          for (let i = 0; i < AFTER_CALLS; i++) after.push(await searchOnce(client));
        } finally {
          await client.close();
        }
        const stats = readStats(d.pid);
        return {
          wallMs,
          cpuMs,
          peakRssMiB: stats?.peakRssMiB ?? NaN,
          threadsMax,
          threadsIdle: threads(d.pid),
          finishMs,
          runMs,
          outcomes,
          during,
          duringFailures,
          samplerError,
          after,
        };
      }
      if (elapsed - lastLog > 10_000) {
        lastLog = elapsed;
        log(`${(elapsed / 1000).toFixed(0)} s: ${finished}/${users.length} accounts mirrored, ${threads(d.pid)} threads`);
      }
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  } finally {
    done = true;
    await d.stop();
  }
}

type Copy = { wallMs: number; cpuMs: number; peakRssMiB: number; perProcessMs: number[] };

/** One mbsync process per account, `parallel` at a time. */
async function mbsyncAll(dir: string, dovecot: Dovecot, users: DovecotUser[], perAccount: number, parallel: number): Promise<Copy> {
  const runs: Timed[] = new Array(users.length);
  let next = 0;
  const started = performance.now();
  const worker = async (): Promise<void> => {
    for (let i = next++; i < users.length; i = next++) {
      const mbsyncDir = join(dir, `mbsync-${i}`);
      const rc = mbsyncConfig(mbsyncDir, { port: dovecot.port, user: users[i]!.user, password: users[i]!.password });
      runs[i] = await mbsyncOnce(rc, mbsyncDir, { stored: perAccount });
    }
  };
  await Promise.all(Array.from({ length: Math.min(parallel, users.length) }, worker));
  return {
    wallMs: performance.now() - started,
    cpuMs: runs.reduce((n, r) => n + r.cpuMs, 0),
    peakRssMiB: Math.max(...runs.map((r) => r.peakRssMiB)),
    perProcessMs: runs.map((r) => r.wallMs),
  };
}

const s = (ms: number): number | null => (Number.isFinite(ms) ? round(ms / 1000, 2) : null);
const ratio = (a: number, b: number): number | null => (Number.isFinite(a) && Number.isFinite(b) && b > 0 ? round(a / b, 2) : null);

export const accounts100: Scenario = {
  name: 'accounts-100',
  description:
    'many accounts in one daemon on one Dovecot: mirror-all time, per-account finish, peak RSS, threads, search_emails over /mcp while they mirror; beside mbsync per account',
  async run() {
    const o = settings();
    const log = (line: string): void => void process.stderr.write(`[accounts] ${line}\n`);
    const users = Array.from({ length: o.accounts }, (_, i) => ({ user: `bench${i}`, password: `pw-bench-${i}` }));
    const dir = mkdtempSync(join(tmpdir(), 'mailcairn-bench-accounts-'));
    const dovecot = await startDovecot({ users });
    try {
      let bytes = 0;
      const placing = performance.now();
      for (const [i, u] of users.entries()) {
        const mail = generateMailbox({
          seed: 1000 + i,
          count: o.perAccount,
          profile: o.profile,
          owner: { name: `Bench ${i}`, address: `${u.user}@example.org` },
        });
        await writeMaildir(
          dovecot,
          u.user,
          'INBOX',
          (function* () {
            for (const m of mail) {
              bytes += m.raw.length;
              yield m;
            }
          })(),
        );
      }
      log(`placed ${o.accounts} × ${o.perAccount} messages (${(bytes / 2 ** 20).toFixed(0)} MiB) in ${((performance.now() - placing) / 1000).toFixed(1)} s`);
      const daemonDir = join(dir, 'mailcairn');
      mkdirSync(daemonDir, { recursive: true });
      const m = await mirrorAll(daemonDir, dovecot, users, o.perAccount, log);
      rmSync(daemonDir, { recursive: true, force: true });
      log(`mbsync, ${o.mbsyncParallel} processes at a time`);
      const c = await mbsyncAll(join(dir, 'mbsync'), dovecot, users, o.perAccount, o.mbsyncParallel);

      const size = `${o.accounts} accounts × ${o.perAccount} messages`;
      const mb = round(bytes / 2 ** 20);
      const finishMedian = median(m.finishMs);
      const finishSlowest = Math.max(...m.finishMs);
      const copyMedian = median(c.perProcessMs);
      const during = summarize(m.during, 1);
      const after = summarize(m.after, 1);
      const ms = (us: number): number | null => (us > 0 ? round(us / 1000, 2) : null);
      const rows: Row[] = [
        {
          measure: 'mirror all',
          mailbox: size,
          MB: mb,
          'Mailcairn wall s': s(m.wallMs),
          'Mailcairn CPU s': s(m.cpuMs),
          'Mailcairn peak MiB': round(m.peakRssMiB),
          'threads max': m.threadsMax,
          'threads after': m.threadsIdle,
          peer: `mbsync, one process per account, ${o.mbsyncParallel} at a time`,
          'peer wall s': s(c.wallMs),
          'peer CPU s': s(c.cpuMs),
          'peer peak MiB': round(c.peakRssMiB),
          'wall ratio': ratio(m.wallMs, c.wallMs),
          'CPU ratio': ratio(m.cpuMs, c.cpuMs),
          note: `Mailcairn: one daemon (${allocatorNote()}), spawn → every account's first run ended and its mail stored with text derived (polled every ${POLL_MS} ms); CPU to then, peak and threads over its life (/proc); first-run outcomes ${JSON.stringify(m.outcomes)}. mbsync: first start → last end, CPU summed, largest single peak`,
        },
        {
          measure: 'per-account finish',
          mailbox: size,
          'Mailcairn median s': s(finishMedian),
          'Mailcairn slowest s': s(finishSlowest),
          'Mailcairn fastest s': s(Math.min(...m.finishMs)),
          'slowest ÷ median': ratio(finishSlowest, finishMedian),
          peer: 'mbsync process wall',
          'peer median s': s(copyMedian),
          'peer slowest s': s(Math.max(...c.perProcessMs)),
          note: `Mailcairn: the account's first run's ended_at from spawn (every account is due at once; MailSynchronization:MaxConcurrentAccounts, default 4, run at a time, so a queue orders the finishes); mbsync: each process's own wall (they run ${o.mbsyncParallel} at a time, so not from a common start)`,
        },
        {
          measure: 'per-account first run (its own start → end)',
          mailbox: size,
          'Mailcairn median s': s(median(m.runMs)),
          'Mailcairn slowest s': s(Math.max(...m.runMs)),
          'Mailcairn fastest s': s(Math.min(...m.runMs)),
          'slowest ÷ median': ratio(Math.max(...m.runMs), median(m.runMs)),
          peer: 'mbsync process wall',
          'peer median s': s(copyMedian),
          'peer slowest s': s(Math.max(...c.perProcessMs)),
          note: 'sync_runs started_at → ended_at: the run once its slot came, the wait for a slot excluded',
        },
        {
          measure: 'search_emails via /mcp, while mirroring',
          mailbox: size,
          calls: during.count,
          'p50 ms': ms(during.p50Us),
          'p99 ms': ms(during.p99Us),
          note: `one client, API key, back to back, "${QUERY.queryText}" top ${QUERY.resultLimit}; ${m.duringFailures} calls failed (before the endpoint was up, or refused)${m.samplerError !== null ? `; sampler stopped: ${m.samplerError}` : ''}`,
        },
        {
          measure: 'search_emails via /mcp, after',
          mailbox: size,
          calls: after.count,
          'p50 ms': ms(after.p50Us),
          'p99 ms': ms(after.p99Us),
          note: 'the same client and query, every account mirrored',
        },
        boundGoal(`peak RSS ≤ 600 MB (${RSS_BOUND_MIB.toFixed(0)} MiB), ${size}`, m.peakRssMiB, RSS_BOUND_MIB, mebibytes),
        boundGoal(
          `no account starved: slowest finish ≤ 2× median, ${size}`,
          finishSlowest / finishMedian,
          2,
          (x) => `${x.toFixed(2)}×`,
          Math.max(...c.perProcessMs) / copyMedian,
        ),
        boundGoal(
          `search_emails /mcp p99 ≤ ${MCP_P99_BOUND_MS} ms while mirroring (the search goal's bound), ${size}`,
          during.count > 0 ? during.p99Us / 1000 : NaN,
          MCP_P99_BOUND_MS,
          millis,
        ),
      ];
      return rows;
    } finally {
      await dovecot.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
