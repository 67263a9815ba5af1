/**
 * The two sides of the sync benchmarks and how each is measured
 * (sync-initial.ts runs them):
 *  - `mailcairnOnce`: the compiled daemon as a one-shot process under the
 *    wait4 wrapper (peers/process-stats.ts), on a database of its own: spawned, left to finish one
 *    synchronization run that began after it started and shows what is
 *    expected, then stopped with SIGTERM. Wall from spawn to exit, CPU and
 *    peak RSS from wait4 — as for `mbsyncOnce`, so the two compare like
 *    with like. The moment the result was visible is kept beside it.
 *  - `startService`: the daemon left running, measured over an interval
 *    from /proc (peers/process-stats.ts `interval`).
 *  - `mbsyncOnce`: one `mbsync` process pulling the folder, under the same
 *    wrapper.
 * A one-shot daemon given an admin listener (`daemonConfig`'s `adminPort`,
 * as sync-initial does) is seen done the way an operator sees it:
 * `GET /api/admin/mailbox/synchronization` (docs/admin-api.md) polled every
 * ADMIN_POLL_MS over one kept-alive connection, done when a run has ended in
 * this process (`lastRun` is null until then), none is under way, and every
 * folder's `progress.completedEmailCount` sums to the expected count with
 * `notYetIndexedEmailCount` 0 everywhere (`synchronized`). The daemon
 * answers those polls, so their CPU is inside its CPU-seconds: the count is
 * returned (`polls`) for the row's note. A flag change and `also` are not
 * on that route (no operator surface reports a message's flags): those
 * parts still read the database. Without an admin listener (contacts,
 * rules-spam, profile-ingest) and for the running service (`startService`),
 * "visible" is read from the daemon's database by polling every POLL_MS:
 * stored (raw MIME and derived text) and, for a flag change, the flag on
 * every message it was set on.
 */
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import Libsql from 'libsql';
import type { Dovecot } from '../../test/harness/dovecot.ts';
import { apiKeyEntry, writeBenchConfig } from '../peers/daemon-config.ts';
import { daemonCommand, daemonEnvironment, daemonNodeArgs, startBenchDaemon } from '../peers/daemon.ts';
import { readStats, spawnTimed, timed, type Timed } from '../peers/process-stats.ts';

export const USER = 'bench';
export const PASSWORD = 'pw-bench';
const WAIT_LIMIT_MS = 30 * 60_000;
/** How often the database is polled for "visible"; a one-shot daemon's wall can include up to this much of the poll. */
export const POLL_MS = 20;
/** How often the admin route is asked: a request every 100 ms is ≈ 10 a second of the daemon's own work. */
export const ADMIN_POLL_MS = 100;
/** The bench operator's key for the admin listener (`service.admin.read` only). */
const ADMIN_KEY = 'bench-sync-admin-key-0123456789abcdef';

/** What a side must show once it has synchronized. */
export type Expect = {
  stored: number;
  flagged?: { uids: number[]; flag: string };
  /** Anything else the side must show in its database (work that follows the mirror, such as mail rules). */
  also?: (database: string) => boolean;
};

function query(database: string, sql: string, ...params: unknown[]): number {
  try {
    const db = new Libsql(database, { readonly: true, timeout: 2_000 });
    try {
      return Number((db.prepare(sql).get(...params) as { n: number | null }).n ?? 0);
    } finally {
      db.close();
    }
  } catch {
    return 0;
  }
}

/** The id of the latest ended synchronization run (runs are pruned, so ids, not counts). */
export function lastEndedRun(database: string): number {
  return query(database, 'SELECT max(id) AS n FROM sync_runs WHERE ended_at IS NOT NULL');
}

function runInProgress(database: string): boolean {
  return query(database, 'SELECT count(*) AS n FROM sync_runs WHERE ended_at IS NULL') > 0;
}

/** The daemon's own record of its latest ended run, in milliseconds. */
export function lastRunMs(database: string): number {
  return query(database, 'SELECT ended_at - started_at AS n FROM sync_runs WHERE ended_at IS NOT NULL ORDER BY id DESC LIMIT 1');
}

export function visible(database: string, e: Expect): boolean {
  if (query(database, "SELECT count(*) AS n FROM messages WHERE state = 'stored' AND parse_version IS NOT NULL") < e.stored) return false;
  if (e.also !== undefined && !e.also(database)) return false;
  if (e.flagged === undefined) return true;
  const { uids, flag } = e.flagged;
  const flagged = query(
    database,
    // The changes are made in the INBOX; other folders hold the same UIDs.
    `SELECT count(*) AS n FROM messages WHERE state <> 'tombstoned' AND uid IN (${uids.map(Number).join(',')}) AND binding_id IN (SELECT id FROM folder_bindings WHERE alias = 'inbox' AND retired_at IS NULL) AND EXISTS (SELECT 1 FROM json_each(messages.flags) WHERE value = ?)`,
    flag,
  );
  return flagged === uids.length;
}

/** Poll until `predicate` holds, every `everyMs`; returns the moment it did (performance.now()). */
async function until(what: string, predicate: () => boolean | Promise<boolean>, alive: () => boolean, everyMs = POLL_MS): Promise<number> {
  const started = performance.now();
  for (;;) {
    if (await predicate()) return performance.now();
    if (!alive()) throw new Error(`mailcairnd exited before ${what}`);
    if (performance.now() - started > WAIT_LIMIT_MS) throw new Error(`mailcairnd: no ${what} after ${WAIT_LIMIT_MS / 60_000} min`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** The parts of `GET /api/admin/mailbox/synchronization` the bench reads (docs/admin-api.md). */
export type SynchronizationStatus = {
  accounts: Array<{
    phase: string;
    lastRun: { outcome: string } | null;
    folders: Array<{ mirrored: boolean; notYetIndexedEmailCount: number; progress: { completedEmailCount: number } | null }>;
  }>;
};

export async function synchronizationStatus(port: number): Promise<SynchronizationStatus | null> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/api/admin/mailbox/synchronization`, { headers: { 'X-API-Key': ADMIN_KEY } });
    if (!res.ok) {
      await res.body?.cancel();
      // A refusal is a bench defect (key, permission, limiter), not "not yet": it would delay the signal unseen.
      throw new Error(`admin synchronization route answered ${res.status}`);
    }
    return (await res.json()) as SynchronizationStatus;
  } catch (err) {
    if (err instanceof Error && err.message.startsWith('admin synchronization route')) throw err;
    return null; // not listening yet
  }
}

/** What the route shows once `stored` messages are mirrored and indexed by a run of this process. */
export function synchronized(status: SynchronizationStatus | null, stored: number): boolean {
  const account = status?.accounts[0];
  if (!account || account.lastRun === null || account.phase === 'running') return false;
  const mirrored = account.folders.filter((f) => f.mirrored);
  const completed = mirrored.reduce((n, f) => n + (f.progress?.completedEmailCount ?? 0), 0);
  return completed >= stored && mirrored.every((f) => f.notYetIndexedEmailCount === 0);
}

/** A folder the bench account mirrors: the INBOX by its alias, others by their path (no SPECIAL-USE in the harness). */
function folderEntry(name: string): Record<string, string> {
  return name === 'INBOX' ? { Alias: 'inbox' } : { Alias: name.toLowerCase(), Path: name };
}

export type DaemonConfig = { config: string; database: string; adminPort?: number };

/** `folders`: the server folders mirrored (default the INBOX); `adminPort`: the admin listener, for the operator's completion signal. */
export function daemonConfig(dir: string, dovecot: Dovecot, options: { folders?: readonly string[]; adminPort?: number } = {}): DaemonConfig {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'pw'), PASSWORD);
  const { adminPort } = options;
  if (adminPort !== undefined) writeFileSync(join(dir, 'admin.key'), ADMIN_KEY);
  const written = writeBenchConfig(dir, {
    Logging: { Level: 'warn', Format: 'Json' },
    MailSynchronization: { Interval: '00:00:10' },
    ...(adminPort === undefined
      ? {}
      : {
          AdminEndpoint: {
            Enabled: true,
            BindAddress: '127.0.0.1',
            Port: adminPort,
            Authentication: [{ ...apiKeyEntry('bench-operator', `file:${join(dir, 'admin.key')}`), Permissions: ['service.admin.read'] }],
            // The limiter stays in the path but never refuses: its default (60 a minute) would answer most 100 ms polls 429.
            RateLimiting: { TokenCapacity: 1_000_000, TokensPerReplenishmentPeriod: 1_000_000 },
          },
        }),
    Accounts: [
      {
        Id: 'bench',
        Imap: { Host: '127.0.0.1', Port: dovecot.port, Security: 'None', Username: USER, Password: `file:${join(dir, 'pw')}` },
        Folders: (options.folders ?? ['INBOX']).map(folderEntry),
      },
    ],
  });
  return { ...written, ...(adminPort === undefined ? {} : { adminPort }) };
}

/**
 * A one-shot process: spawn to exit, CPU and peak from wait4; `visibleMs` from spawn to the result seen
 * (admin route or database), `cpuAtVisibleMs` the CPU by then (/proc); `polls` the admin requests made (0: database).
 * `crashes`: actors the supervisor restarted after a crash (its `actor.exit` lines at warn): a round with one is
 * slower and costlier for that reason alone (a sync actor's crash interrupts the run), so a scenario can say so.
 */
export type Once = Timed & { visibleMs: number; cpuAtVisibleMs: number; polls: number; crashes: number };

/** Supervisor lines of actors that ended on an error (reason E_ACTOR_CRASHED or another code, not `shutdown`), in the daemon's JSON log. */
export function crashesIn(log: string): number {
  let n = 0;
  for (const line of log.split('\n')) {
    if (!line.includes('"event":"actor.exit"')) continue;
    try {
      const entry = JSON.parse(line) as { reason?: string };
      if (entry.reason?.startsWith('E_')) n++;
    } catch {
      // not a JSON line
    }
  }
  return n;
}

export async function mailcairnOnce(d: DaemonConfig, expect: Expect): Promise<Once> {
  const runBefore = lastEndedRun(d.database);
  // BENCH_CPU_PROF: a profile per thread of the daemon (Node names each by pid and thread), as docs/benchmarks.md says.
  const prof = process.env.BENCH_CPU_PROF;
  const { command, args } = daemonCommand(d.config, [...daemonNodeArgs(), ...(prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : [])]);
  // Its output is kept (the bench configurations log at warn: a few lines) to count crashes.
  const t = spawnTimed(command, args, { stdout: true, env: daemonEnvironment() });
  const pid = await t.targetPid();
  let cpuAtVisibleMs = NaN;
  let visibleAt: number;
  let polls = 0;
  const { adminPort } = d;
  const extra = expect.flagged !== undefined || expect.also !== undefined;
  try {
    visibleAt =
      adminPort === undefined
        ? await until(
            'a run that shows the change',
            () => lastEndedRun(d.database) > runBefore && visible(d.database, expect),
            () => t.child.exitCode === null,
          )
        : await until(
            'a run that shows the change (admin synchronization route)',
            async () => {
              polls++;
              return synchronized(await synchronizationStatus(adminPort), expect.stored) && (!extra || visible(d.database, expect));
            },
            () => t.child.exitCode === null,
            ADMIN_POLL_MS,
          );
    cpuAtVisibleMs = readStats(pid)?.cpuMs ?? NaN;
  } catch (err) {
    if (t.child.exitCode === null) process.kill(pid, 'SIGTERM');
    await t.done.catch(() => undefined);
    throw err;
  }
  process.kill(pid, 'SIGTERM');
  const done = await t.done;
  return {
    wallMs: done.wallMs,
    cpuMs: done.cpuMs,
    userMs: done.userMs,
    sysMs: done.sysMs,
    peakRssMiB: done.peakRssMiB,
    visibleMs: visibleAt - t.startedAt,
    cpuAtVisibleMs,
    crashes: crashesIn(done.stdout),
    polls,
  };
}

/** One `mbsync` run to its end; checks the Maildir then holds `expect.stored` messages over `folders`. */
export async function mbsyncOnce(rc: string, mbsyncDir: string, expect: Expect, folders: readonly string[] = ['INBOX']): Promise<Timed> {
  const t = await timed('mbsync', ['-c', rc, '-a', '-q']);
  let held = 0;
  for (const folder of folders) {
    const dir = join(mbsyncDir, 'maildir', folder);
    held += readdirSync(join(dir, 'cur')).length + readdirSync(join(dir, 'new')).length;
  }
  if (held < expect.stored) throw new Error(`mbsync left ${held} messages in the Maildir, expected ${expect.stored}`);
  return t;
}

export type Service = {
  readonly pid: number;
  /** Resolves when the last run has ended and no run is under way. */
  settled(afterRun?: number): Promise<number>;
  waitVisible(expect: Expect): Promise<number>;
  stop(): Promise<void>;
};

/** The daemon running as an operator runs it (no wrapper: it is measured over intervals from /proc). */
export async function startService(d: DaemonConfig): Promise<Service> {
  const runBefore = lastEndedRun(d.database);
  const daemon = startBenchDaemon({ config: d.config, output: 'stderr' });
  const service: Service = {
    pid: daemon.pid,
    settled: (afterRun = 0) => until('the end of the run under way', () => lastEndedRun(d.database) > afterRun && !runInProgress(d.database), daemon.alive),
    waitVisible: (expect) => until('the change', () => visible(d.database, expect), daemon.alive),
    stop: daemon.stop,
  };
  await service.settled(runBefore);
  return service;
}
