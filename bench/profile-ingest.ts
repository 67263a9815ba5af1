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
 *
 *   npx tsc -p tsconfig.bench.json && node dist/bench/profile-ingest.js
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { startDovecot } from '../test/harness/dovecot.ts';
import { generateMailbox } from '../test/harness/generator.ts';
import { writeMaildirs } from '../test/harness/place-mail.ts';
import { daemonCommand } from './peers/daemon.ts';
import { clockTicks, readStats, spawnTimed, type Timed } from './peers/process-stats.ts';
import { type DaemonConfig, daemonConfig, lastEndedRun, PASSWORD, USER, visible } from './scenarios/sync-sides.ts';

const count = Number(process.env.PROFILE_MESSAGES ?? '3000');
const repeat = Number(process.env.PROFILE_REPEAT ?? '1');
const cpuDir = process.env.PROFILE_CPU_DIR;
const realistic = process.env.PROFILE_CORPUS === 'realistic';
const folders = realistic ? ['INBOX', 'Archive', 'Sent'] : ['INBOX'];

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
  const t = spawnTimed(command, args, { stdout: process.env.PROFILE_STDOUT !== undefined });
  const pid = await t.targetPid();
  let maxThreads = 0;
  let rssAt = '';
  let rssMax = 0;
  const sampler = setInterval(() => {
    maxThreads = Math.max(maxThreads, threadsOf(pid));
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      const kb = (field: string): number => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
      if (kb('VmRSS') > rssMax) {
        rssMax = kb('VmRSS');
        rssAt = `RSS ${(rssMax / 1024).toFixed(0)} MiB = anon ${(kb('RssAnon') / 1024).toFixed(0)} + file ${(kb('RssFile') / 1024).toFixed(0)} + shmem ${(kb('RssShmem') / 1024).toFixed(0)}`;
      }
    } catch {
      // gone
    }
  }, 50);
  let visibleAt = 0;
  try {
    while (!(lastEndedRun(d.database) > runBefore && visible(d.database, { stored }))) {
      if (t.child.exitCode !== null) throw new Error('mailcairnd exited early');
      await new Promise((r) => setTimeout(r, 20));
    }
    visibleAt = performance.now();
  } finally {
    clearInterval(sampler);
  }
  const cpuAtVisibleMs = readStats(pid)?.cpuMs ?? NaN;
  const threads = threadCpu(pid);
  process.kill(pid, 'SIGTERM');
  const done = await t.done;
  if (process.env.PROFILE_STDOUT) writeFileSync(process.env.PROFILE_STDOUT, done.stdout);
  return { ...done, visibleMs: visibleAt - t.startedAt, maxThreads, cpuAtVisibleMs, threads: `${threads}\n  largest sampled ${rssAt}` };
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
    const daemon = daemonConfig(join(dir, `run-${i}`), dovecot, { folders });
    const extra = (process.env.PROFILE_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');
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
