/**
 * What every results file records about the run: the commit measured (and
 * whether the tree had uncommitted changes), the machine, and how loaded it
 * was, so figures are compared only with figures of the same code on the
 * same machine.
 */
import { execFileSync } from 'node:child_process';
import { availableParallelism, cpus, hostname, loadavg, release, totalmem, version } from 'node:os';
import { fileURLToPath } from 'node:url';
import { round } from './stats.ts';

export type Provenance = {
  commit: string;
  /** Uncommitted changes to tracked files when the run started (the build is of the working tree). */
  dirty: boolean | null;
  branch: string;
  node: string;
  cpu: string;
  cores: number;
  memoryGiB: number;
  kernel: string;
  host: string;
  clockTicksPerSecond: number;
  /** How processes run to their end were accounted (peers/process-stats.ts). */
  processAccounting: string;
  startedAt: string;
  loadAverageAtStart: number[];
};

const repo = fileURLToPath(new URL('.', import.meta.url));

function git(args: string[]): string | null {
  try {
    return execFileSync('git', args, { cwd: repo, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return null;
  }
}

export function provenance(clockTicksPerSecond: number, processAccounting: string): Provenance {
  const status = git(['status', '--porcelain', '--untracked-files=no']);
  return {
    commit: git(['rev-parse', '--short', 'HEAD']) ?? 'unknown',
    dirty: status === null ? null : status !== '',
    branch: git(['rev-parse', '--abbrev-ref', 'HEAD']) ?? 'unknown',
    node: process.version,
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: availableParallelism(),
    memoryGiB: round(totalmem() / 2 ** 30, 1),
    kernel: `${release()} ${version()}`,
    host: hostname(),
    clockTicksPerSecond,
    processAccounting,
    startedAt: new Date().toISOString(),
    loadAverageAtStart: loadavg().map((l) => round(l, 2)),
  };
}
