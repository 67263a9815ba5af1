/**
 * The initial mirror alone, for profiling the ingest path (not a scenario:
 * no peer, no goal rows). One Dovecot with PROFILE_MESSAGES generated
 * messages (default 3000, the `bench` profile; PROFILE_CORPUS=realistic for
 * issue 34's shape over INBOX, Archive and Sent), then PROFILE_REPEAT one-shot
 * daemons (sync-sides.ts `mailcairnOnce`), each on a fresh database; prints
 * wall, CPU, peak RSS and the most threads seen per run.
 *
 * PROFILE_CPU_DIR=<dir> adds `--cpu-prof --cpu-prof-dir=<dir>` to the daemon
 * (every thread writes its own .cpuprofile; summarise with
 * `node dist/bench/cpuprofile-summary.js <dir>`). PROFILE_NODE_ARGS adds node
 * flags (`--v8-pool-size=1`, `--max-semi-space-size=16`) to try them.
 * PROFILE_ADMIN=1 gives the daemon the admin listener and reads completion
 * from its synchronization route, as sync-initial does (the route asks the
 * scheduler: the query pool, started on its first ask, never starts).
 * PROFILE_HEAP_DIR=<dir> preloads heap-trace.cjs in every thread (V8 heap
 * per isolate, every 250 ms) and prints, at the
 * sampled peak RSS, where the resident memory is by mapping
 * (`/proc/<pid>/smaps`) and each thread's heap then.
 *
 *   npx tsc -p tsconfig.bench.json && node dist/bench/profile-ingest.js
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { startDovecot } from '../test/harness/dovecot.ts';
import { generateMailbox } from '../test/harness/generator.ts';
import { writeMaildirs } from '../test/harness/place-mail.ts';
import { daemonCommand, daemonEnvironment } from './peers/daemon.ts';
import { clockTicks, readStats, spawnTimed, type Timed } from './peers/process-stats.ts';
import { reservePort } from '../test/helpers/ports.ts';
import { type DaemonConfig, daemonConfig, lastEndedRun, PASSWORD, synchronizationStatus, synchronized, USER, visible } from './scenarios/sync-sides.ts';

const count = Number(process.env.PROFILE_MESSAGES ?? '3000');
const repeat = Number(process.env.PROFILE_REPEAT ?? '1');
const cpuDir = process.env.PROFILE_CPU_DIR;
const realistic = process.env.PROFILE_CORPUS === 'realistic';
const folders = realistic ? ['INBOX', 'Archive', 'Sent'] : ['INBOX'];
const heapDir = process.env.PROFILE_HEAP_DIR;
/** When the daemon of the current run was spawned: heap-trace rows are placed against it. */
let startedEpoch = Date.now();
const heapTrace = fileURLToPath(new URL('../../bench/heap-trace.cjs', import.meta.url));

/** What a mapping of `/proc/<pid>/smaps` holds, by its path. */
function mappingKind(path: string): string {
  if (path === '') return 'anonymous (V8 heaps, malloc arenas, stacks)';
  if (path === '[heap]') return '[heap] (main malloc arena)';
  if (path.endsWith('.db')) return 'database file (mmap)';
  if (path.endsWith('-shm')) return 'WAL index (-shm)';
  if (path.startsWith('[')) return path;
  if (/\.so|\.node|bin\/node/.test(path)) return 'code (node, .so, .node)';
  return `other file ${path.split('/').slice(-1)[0]}`;
}

/** Resident memory by mapping kind, in KiB, from `/proc/<pid>/smaps`: where the RSS is. */
function residentByMapping(pid: number): Map<string, number> {
  const by = new Map<string, number>();
  let kind = '';
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      kind = mappingKind(head[1] ?? '');
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss) by.set(kind, (by.get(kind) ?? 0) + Number(rss[1]));
  }
  return by;
}

/** Each thread's heap figures nearest before `at` (ms since the epoch), from heap-trace.cjs's files. */
function heapsAt(pid: number, at: number): string {
  if (!heapDir) return '';
  type HeapRow = {
    t: number;
    thread: number;
    label: string;
    total: number;
    physical: number;
    young: number;
    used: number;
    external: number;
    malloced: number;
    arrayBuffers: number;
  };
  const lines: string[] = [];
  let sums = { total: 0, physical: 0, used: 0, external: 0 };
  const mib = (n: number): string => (n / 2 ** 20).toFixed(1);
  for (const f of readdirSync(heapDir).filter((n) => n.startsWith(`${pid}-`))) {
    const rows = readFileSync(join(heapDir, f), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as HeapRow);
    const first = rows[0]!;
    const before = rows.filter((r) => r.t <= at);
    const then = before[before.length - 1];
    const peak = rows.reduce((a, r) => (r.total > a.total ? r : a), first);
    const life = `started +${((first.t - startedEpoch) / 1000).toFixed(1)} s, last +${((rows[rows.length - 1]!.t - startedEpoch) / 1000).toFixed(1)} s, peak total ${mib(peak.total)}`;
    if (!then) {
      lines.push(`    thread ${first.thread} ${first.label}: not running at the peak (${life})`);
      continue;
    }
    sums = { total: sums.total + then.total, physical: sums.physical + then.physical, used: sums.used + then.used, external: sums.external + then.external };
    lines.push(
      `    thread ${then.thread} ${then.label}: heap ${mib(then.used)} used / ${mib(then.total)} total / ${mib(then.physical)} resident (young ${mib(then.young)}), external ${mib(then.external)} (array buffers ${mib(then.arrayBuffers)}), malloced ${mib(then.malloced)} (${life})`,
    );
  }
  return `  V8 at the peak: heaps ${mib(sums.used)} used / ${mib(sums.total)} total / ${mib(sums.physical)} resident, external ${mib(sums.external)} MiB\n${lines.sort().join('\n')}`;
}

function threadsOf(pid: number): number {
  try {
    return Number(/Threads:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/** Like sync-sides.ts `mailcairnOnce`, with node flags and the thread count sampled. */
async function once(
  d: DaemonConfig,
  stored: number,
  nodeArgs: string[],
): Promise<Timed & { visibleMs: number; maxThreads: number; cpuAtVisibleMs: number; threads: string }> {
  const runBefore = lastEndedRun(d.database);
  const { command, args } = daemonCommand(d.config, nodeArgs);
  startedEpoch = Date.now();
  const t = spawnTimed(command, args, { stdout: process.env.PROFILE_STDOUT !== undefined, env: daemonEnvironment() });
  const pid = await t.targetPid();
  let maxThreads = 0;
  let rssAt = '';
  let rssMax = 0;
  let peakAt = 0;
  let mappings = new Map<string, number>();
  const sampler = setInterval(() => {
    maxThreads = Math.max(maxThreads, threadsOf(pid));
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      const kb = (field: string): number => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
      if (kb('VmRSS') > rssMax) {
        rssMax = kb('VmRSS');
        rssAt = `RSS ${(rssMax / 1024).toFixed(0)} MiB = anon ${(kb('RssAnon') / 1024).toFixed(0)} + file ${(kb('RssFile') / 1024).toFixed(0)} + shmem ${(kb('RssShmem') / 1024).toFixed(0)}`;
        peakAt = Date.now();
        if (heapDir) mappings = residentByMapping(pid);
      }
    } catch {
      // gone
    }
  }, 50);
  let visibleAt = 0;
  const done = async (): Promise<boolean> =>
    d.adminPort === undefined
      ? lastEndedRun(d.database) > runBefore && visible(d.database, { stored })
      : synchronized(await synchronizationStatus(d.adminPort), stored);
  try {
    while (!(await done())) {
      if (t.child.exitCode !== null) throw new Error('mailcairnd exited early');
      await new Promise((r) => setTimeout(r, d.adminPort === undefined ? 20 : 100));
    }
    visibleAt = performance.now();
  } finally {
    clearInterval(sampler);
  }
  const cpuAtVisibleMs = readStats(pid)?.cpuMs ?? NaN;
  const threads = threadCpu(pid);
  process.kill(pid, 'SIGTERM');
  const ended = await t.done;
  if (process.env.PROFILE_STDOUT) writeFileSync(process.env.PROFILE_STDOUT, ended.stdout);
  const byMapping = [...mappings]
    .sort((a, b) => b[1] - a[1])
    .filter(([, kib]) => kib >= 1024)
    .map(([k, kib]) => `${k} ${(kib / 1024).toFixed(0)}`)
    .join(', ');
  const breakdown = heapDir ? `\n  at +${((peakAt - startedEpoch) / 1000).toFixed(1)} s, by mapping (MiB): ${byMapping}\n${heapsAt(pid, peakAt)}` : '';
  return { ...ended, visibleMs: visibleAt - t.startedAt, maxThreads, cpuAtVisibleMs, threads: `${threads}\n  largest sampled ${rssAt}${breakdown}` };
}

/** CPU seconds per OS thread (name:tid user+sys), busiest first, from /proc: what each thread cost without a profiler. */
function threadCpu(pid: number): string {
  const ticks = clockTicks();
  const rows: Array<[string, number]> = [];
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      rows.push([`${name}:${tid}`, (Number(f[11]) + Number(f[12])) / ticks]);
    } catch {
      // the thread ended meanwhile
    }
  }
  return rows
    .sort((a, b) => b[1] - a[1])
    .filter(([, s]) => s >= 0.01)
    .map(([n, s]) => `${n} ${s.toFixed(2)}`)
    .join(', ');
}

const dir = mkdtempSync(join(tmpdir(), 'mailcairn-profile-'));
const dovecot = await startDovecot({ users: [{ user: USER, password: PASSWORD }] });
try {
  let bytes = 0;
  await writeMaildirs(
    dovecot,
    USER,
    (function* () {
      for (const m of generateMailbox({ seed: 42, count, profile: realistic ? 'realistic' : 'bench' })) {
        bytes += m.raw.length;
        yield { ...m, folder: m.folder ?? 'INBOX' };
      }
    })(),
    folders,
  );
  process.stdout.write(
    `${count} messages, ${(bytes / 2 ** 20).toFixed(0)} MB; load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}\n`,
  );
  for (let i = 0; i < repeat; i++) {
    const adminPort = process.env.PROFILE_ADMIN ? await reservePort() : undefined;
    const daemon = daemonConfig(join(dir, `run-${i}`), dovecot, { folders, ...(adminPort === undefined ? {} : { adminPort }) });
    const extra = (process.env.PROFILE_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');
    if (heapDir) extra.push('--require', heapTrace);
    const r = await once(daemon, count, [...extra, ...(cpuDir ? ['--cpu-prof', `--cpu-prof-dir=${cpuDir}`] : [])]);
    process.stdout.write(
      `run ${i + 1}: wall ${(r.wallMs / 1000).toFixed(2)} s (visible ${(r.visibleMs / 1000).toFixed(2)} s, CPU by then ${(r.cpuAtVisibleMs / 1000).toFixed(2)} s), CPU ${(r.cpuMs / 1000).toFixed(2)} s (user ${(r.userMs / 1000).toFixed(2)}, sys ${(r.sysMs / 1000).toFixed(2)}), peak ${r.peakRssMiB.toFixed(0)} MiB, threads ≤ ${r.maxThreads}; load ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}\n`,
    );
    process.stdout.write(`  threads (CPU s at visible): ${r.threads}\n`);
    rmSync(join(dir, `run-${i}`), { recursive: true, force: true });
  }
} finally {
  await dovecot.stop();
  rmSync(dir, { recursive: true, force: true });
}
