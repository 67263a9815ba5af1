/**
 * CPU seconds and peak memory, taken the same way for every side of a
 * comparison (Linux):
 *  - a process that runs to its end (mbsync, `notmuch new`, a one-shot
 *    mailcairnd) runs under a wrapper that reads the kernel's accounting
 *    when it reaps the process: user + system CPU and maximum RSS from
 *    `wait4`, so nothing is missed between two samples and a process that
 *    exits early is counted in full. The wrapper is a small C program built
 *    at run time with the system C compiler (microseconds); without a
 *    compiler, GNU time (`/usr/bin/time`, Debian's `time` package), the
 *    same wait4 figures printed to 10 ms (also chosen by
 *    BENCH_ACCOUNTING=gnu-time);
 *  - a long-running service is read from `/proc/<pid>/stat` (utime + stime
 *    of all its threads, plus waited-for children, in clock ticks) before
 *    and after the measured interval, and its peak from `/proc/<pid>/status`
 *    VmHWM, reset at the start of the interval by writing 5 to
 *    `/proc/<pid>/clear_refs` (when refused, VmHWM is the lifetime peak and
 *    the result says so).
 * Wall time is always this process's monotonic clock, from spawn to exit.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

export const GNU_TIME = '/usr/bin/time';

const WAIT4_SOURCE = String.raw`#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
  if (argc < 3) { fprintf(stderr, "usage: wait4 REPORT COMMAND [ARG...]\n"); return 125; }
  pid_t pid = fork();
  if (pid < 0) { perror("fork"); return 125; }
  if (pid == 0) { execvp(argv[2], argv + 2); perror(argv[2]); _exit(127); }
  signal(SIGINT, SIG_IGN);
  signal(SIGQUIT, SIG_IGN);
  int status; struct rusage ru;
  while (wait4(pid, &status, 0, &ru) < 0) if (errno != EINTR) { perror("wait4"); return 125; }
  FILE *f = fopen(argv[1], "w");
  if (!f) { perror(argv[1]); return 125; }
  fprintf(f, "%ld %ld %ld %d\n", (long)ru.ru_utime.tv_sec * 1000000L + (long)ru.ru_utime.tv_usec,
          (long)ru.ru_stime.tv_sec * 1000000L + (long)ru.ru_stime.tv_usec, (long)ru.ru_maxrss, status);
  fclose(f);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
`;

/** How processes run to their end are accounted: the wait4 wrapper, else GNU time. */
export type Accounting = { tool: 'wait4 wrapper'; path: string } | { tool: 'GNU time'; path: string };

let accounting: Accounting | null = null;

/** Build the wait4 wrapper once per bench process (in a temporary directory removed at exit); GNU time without a compiler. */
export function processAccounting(): Accounting {
  if (accounting !== null) return accounting;
  if (process.env.BENCH_ACCOUNTING === 'gnu-time') {
    accounting = { tool: 'GNU time', path: GNU_TIME };
    return accounting;
  }
  const dir = mkdtempSync(join(tmpdir(), 'mailcairn-bench-wait4-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  const source = join(dir, 'wait4.c');
  const binary = join(dir, 'wait4');
  writeFileSync(source, WAIT4_SOURCE);
  try {
    execFileSync('cc', ['-O2', '-o', binary, source], { stdio: ['ignore', 'ignore', 'pipe'] });
    accounting = { tool: 'wait4 wrapper', path: binary };
  } catch {
    if (!existsSync(GNU_TIME)) throw new Error(`no C compiler for the wait4 wrapper and ${GNU_TIME} is missing: install Debian's \`time\` package (GNU time)`);
    accounting = { tool: 'GNU time', path: GNU_TIME };
  }
  return accounting;
}

export type ProcessStats = { cpuMs: number; peakRssMiB: number };
/** A process measured from spawn to exit: wall from our clock, CPU and peak from wait4. */
export type Timed = ProcessStats & { wallMs: number; userMs: number; sysMs: number };

let ticks: number | null = null;

/** Clock ticks per second (`getconf CLK_TCK`), the unit of /proc/<pid>/stat times. */
export function clockTicks(): number {
  if (ticks === null) {
    try {
      ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticks = 100;
    }
  }
  return ticks;
}

/** A running process's CPU so far (utime + stime + cutime + cstime) and its VmHWM; null once it is gone. */
export function readStats(pid: number): ProcessStats | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime, stime, cutime, cstime are fields 14..17 of the full line (11..14 after the name).
    const t = Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const hwm = /VmHWM:\s+(\d+) kB/.exec(status);
    return { cpuMs: (t / clockTicks()) * 1000, peakRssMiB: hwm ? Number(hwm[1]) / 1024 : NaN };
  } catch {
    return null;
  }
}

/** Reset a process's peak-RSS mark (clear_refs 5), so a later VmHWM covers what follows only; false when refused. */
export function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/**
 * A service's CPU and peak over an interval: `begin()` resets the peak and
 * reads the CPU, `end()` reads both again. The interval's CPU is the
 * difference; its peak is VmHWM at the end (the lifetime peak if the reset
 * was refused: `peakReset` says which).
 */
export function interval(pid: number): { peakReset: boolean; end(): ProcessStats } {
  const peakReset = resetPeak(pid);
  const before = readStats(pid);
  if (before === null) throw new Error(`process ${pid} is not running`);
  return {
    peakReset,
    end() {
      const after = readStats(pid);
      if (after === null) throw new Error(`process ${pid} ended during the interval`);
      return { cpuMs: after.cpuMs - before.cpuMs, peakRssMiB: after.peakRssMiB };
    },
  };
}

export type TimedChild = {
  /** The accounting wrapper's process; the measured command is its only child. */
  readonly child: ChildProcess;
  readonly startedAt: number;
  /** The measured command's pid (the wrapper's child), once it has forked. */
  targetPid(): Promise<number>;
  /** Resolves when the command has exited and the wrapper has reported; rejects on a non-zero exit. */
  readonly done: Promise<Timed & { stdout: string }>;
};

/**
 * Spawn `command` under the accounting wrapper (processAccounting). Its
 * report file receives, as its last line, `user-µs system-µs maxrss-KiB
 * status` from the wait4 wrapper, or `user-s system-s maxrss-KiB` from GNU
 * time (after a line of its own when the command exits non-zero).
 */
export function spawnTimed(command: string, args: string[], o: { env?: NodeJS.ProcessEnv; stdout?: boolean } = {}): TimedChild {
  const how = processAccounting();
  const dir = mkdtempSync(join(tmpdir(), 'mailcairn-bench-time-'));
  const report = join(dir, 'rusage');
  const wrapperArgs = how.tool === 'wait4 wrapper' ? [report, command, ...args] : ['-f', '%U %S %M', '-o', report, '--', command, ...args];
  const startedAt = performance.now();
  const child = spawn(how.path, wrapperArgs, {
    stdio: ['ignore', o.stdout ? 'pipe' : 'ignore', 'pipe'],
    env: o.env ?? process.env,
  });
  const out: Buffer[] = [];
  let err = '';
  child.stdout?.on('data', (d: Buffer) => out.push(d));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const done = new Promise<Timed & { stdout: string }>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      const wallMs = performance.now() - startedAt;
      let text = '';
      try {
        text = readFileSync(report, 'utf8').trim();
      } catch {
        // no report: the wrapper itself failed; the exit code says so below
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
      const lines = text.split('\n');
      const [user, sys, maxKiB] = (lines[lines.length - 1] ?? '').split(' ').map(Number);
      if (code !== 0) return reject(new Error(`${command} ${args.join(' ')} exited ${code} (${text}): ${err.slice(0, 500)}`));
      if (!Number.isFinite(user) || !Number.isFinite(sys) || !Number.isFinite(maxKiB)) return reject(new Error(`${how.tool} reported ${JSON.stringify(text)}`));
      const unitMs = how.tool === 'wait4 wrapper' ? 1 / 1000 : 1000;
      resolve({
        wallMs,
        userMs: user! * unitMs,
        sysMs: sys! * unitMs,
        cpuMs: (user! + sys!) * unitMs,
        peakRssMiB: maxKiB! / 1024,
        stdout: Buffer.concat(out).toString('utf8'),
      });
    });
  });
  const targetPid = async (): Promise<number> => {
    const file = `/proc/${child.pid}/task/${child.pid}/children`;
    const started = performance.now();
    for (;;) {
      const pid = Number(readFileSync(file, 'utf8').trim().split(' ')[0]);
      if (pid > 0) return pid;
      if (performance.now() - started > 5_000) throw new Error(`${processAccounting().tool} did not start ${command}`);
      await new Promise((r) => setTimeout(r, 2));
    }
  };
  return { child, startedAt, targetPid, done };
}

/** Run `command` to its end under the accounting wrapper. */
export async function timed(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<Timed> {
  const { stdout: _, ...t } = await spawnTimed(command, args, { env }).done;
  return t;
}

export type Resident = { rssMiB: number; anonMiB: number; fileMiB: number };

/** A running process's resident size now (`/proc/<pid>/status` VmRSS, RssAnon, RssFile); null once it is gone. */
export function readResident(pid: number): Resident | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (field: string): number => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? Number.NaN);
    return { rssMiB: kib('VmRSS') / 1024, anonMiB: kib('RssAnon') / 1024, fileMiB: kib('RssFile') / 1024 };
  } catch {
    return null;
  }
}
