/**
 * The one way bench/ starts the compiled daemon (dist/bin/mailcairnd.js):
 * `startBenchDaemon` for a daemon left running and watched (its PID tracked,
 * a watchdog that ends it should the bench die, a bounded stop), and
 * `daemonCommand` for the command line of a one-shot run, which the
 * accounting wrapper (process-stats.ts `spawnTimed`) starts so that wait4
 * measures the daemon itself. Scenarios differ only in their configuration,
 * node flags, where the output goes and how long a stop may take.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ALLOCATOR_ENVIRONMENT } from '../../runtime/allocator-environment.ts';
import { trackPid, untrackPid, watchdog } from '../../test/harness/processes.ts';

const daemonBin = fileURLToPath(new URL('../../bin/mailcairnd.js', import.meta.url));

/** The daemon's entry in another build's `dist/` (an A/B of two trees in one run). */
export function daemonBinIn(dist: string): string {
  return resolve(dist, 'bin/mailcairnd.js');
}

/** The daemon on `config` as a command: node, its flags (`--cpu-prof …`), the entry (this build's unless `bin` names another's). */
export function daemonCommand(config: string, nodeArgs: readonly string[] = [], bin: string = daemonBin): { command: string; args: string[] } {
  return { command: process.execPath, args: [...nodeArgs, bin, '--config', config] };
}

/**
 * `--cpu-prof` flags when BENCH_CPU_PROF names a directory: the daemon writes
 * one `.cpuprofile` per thread (its actor hosts and pool threads too, named
 * by Node with the thread's id) into `<dir>/<name>/` when each thread ends.
 * No `--cpu-prof-name`: every thread would write that one file over the last.
 */
export function cpuProfileArgs(name: string): string[] {
  const dir = process.env.BENCH_CPU_PROF;
  return [...daemonNodeArgs(), ...(dir ? ['--cpu-prof', `--cpu-prof-dir=${resolve(dir, name)}`] : [])];
}

/** BENCH_DAEMON_NODE_ARGS: V8 options Node refuses in NODE_OPTIONS (`--trace-deopt`, `--trace-gc`), given to every daemon. */
export function daemonNodeArgs(): string[] {
  return (process.env.BENCH_DAEMON_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');
}

/**
 * The daemon's environment: `base` (ours by default) with glibc's allocator
 * settings as the shipped unit and `npm start` give them
 * (runtime/allocator-environment.ts), so the figures are the service's as
 * deployed. BENCH_DAEMON_ALLOCATOR=glibc leaves glibc's defaults, to compare.
 */
export function daemonEnvironment(base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const setting = process.env.BENCH_DAEMON_ALLOCATOR ?? 'service';
  if (setting !== 'service' && setting !== 'glibc') throw new Error('BENCH_DAEMON_ALLOCATOR must be service or glibc');
  return setting === 'glibc' ? base : { ...base, ...ALLOCATOR_ENVIRONMENT };
}

/** What the table's notes say of the daemon's allocator settings. */
export function allocatorNote(): string {
  return process.env.BENCH_DAEMON_ALLOCATOR === 'glibc' ? "glibc's malloc defaults" : 'malloc as the unit sets it';
}

/**
 * Where the daemon's output goes: both streams appended to a log file (what
 * it logs at info can be large), or its standard error echoed to ours and
 * kept in memory (its standard output discarded) for a short-lived daemon.
 */
export type DaemonOutput = { logFile: string } | 'stderr';

export type DaemonStart = {
  config: string;
  output: DaemonOutput;
  nodeArgs?: readonly string[];
  /** How long a stop waits after SIGTERM before SIGKILL (a drain of many accounts takes longer). */
  stopGraceMs?: number;
  /** Its environment (ours by default; with the allocator's settings, `daemonEnvironment`): telemetry's leaves out the OTEL_ variables, so a configuration is only what it writes. */
  env?: NodeJS.ProcessEnv;
  /** Another build's `bin/mailcairnd.js` (an A/B of two trees in one run); this build's by default. */
  bin?: string;
};

export type BenchDaemon = {
  readonly child: ChildProcess;
  readonly pid: number;
  /** Resolves when the process has exited. */
  readonly exited: Promise<void>;
  alive(): boolean;
  /** `running`, or how it ended. */
  state(): string;
  /** Its last `lines` lines of output ('' when there are none yet). */
  logTail(lines: number): string;
  /** SIGTERM, SIGKILL after the grace; then its PID is forgotten and the watchdog disarmed. Once: a second call waits for the first. */
  stop(): Promise<void>;
};

const DEFAULT_STOP_GRACE_MS = 30_000;

/** Starts the compiled daemon on `config`; the caller waits for whatever readiness it measures from. */
export function startBenchDaemon(start: DaemonStart): BenchDaemon {
  const { command, args } = daemonCommand(start.config, start.nodeArgs, start.bin);
  let kept = '';
  let child: ChildProcess;
  if (start.output === 'stderr') {
    child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'], env: daemonEnvironment(start.env) });
    child.stderr!.on('data', (d: Buffer) => {
      kept += d.toString();
      process.stderr.write(d);
    });
  } else {
    const logFd = openSync(start.output.logFile, 'a');
    child = spawn(command, args, { stdio: ['ignore', logFd, logFd], env: daemonEnvironment(start.env) });
    closeSync(logFd);
  }
  const logFile = start.output === 'stderr' ? null : start.output.logFile;
  const pid = child.pid!;
  trackPid(pid);
  const disarm = watchdog(pid, start.config);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let stopping: Promise<void> | null = null;
  const alive = (): boolean => child.exitCode === null && child.signalCode === null;
  return {
    child,
    pid,
    exited,
    alive,
    state: () => (alive() ? 'running' : `exited (code ${child.exitCode}, signal ${child.signalCode})`),
    logTail(lines) {
      let text = kept;
      try {
        if (logFile !== null) text = readFileSync(logFile, 'utf8');
      } catch {
        // not written yet
      }
      return text.trimEnd().split('\n').slice(-lines).join('\n');
    },
    stop() {
      stopping ??= (async () => {
        if (alive()) {
          child.kill('SIGTERM');
          const timer = setTimeout(() => child.kill('SIGKILL'), start.stopGraceMs ?? DEFAULT_STOP_GRACE_MS);
          await exited;
          clearTimeout(timer);
        }
        untrackPid(pid);
        disarm();
      })();
      return stopping;
    },
  };
}
