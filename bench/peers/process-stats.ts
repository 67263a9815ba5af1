/** CPU and peak memory of a child process, read from /proc while it runs (Linux). */
import { readFileSync } from 'node:fs';

const TICKS_PER_SECOND = 100;

export type ProcessStats = { cpuMs: number; peakRssMiB: number };

export function readStats(pid: number): ProcessStats | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime, stime, cutime, cstime are fields 14..17 of the full line (11..14 after the name).
    const ticks = Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const hwm = /VmHWM:\s+(\d+) kB/.exec(status);
    return { cpuMs: (ticks / TICKS_PER_SECOND) * 1000, peakRssMiB: hwm ? Number(hwm[1]) / 1024 : 0 };
  } catch {
    return null;
  }
}

/** Sample a process until it exits or `stop` resolves; the last reading wins (both values only grow). */
export function watchStats(pid: number, intervalMs = 100): { stop(): ProcessStats } {
  let last: ProcessStats = { cpuMs: 0, peakRssMiB: 0 };
  const timer = setInterval(() => {
    last = readStats(pid) ?? last;
  }, intervalMs);
  return {
    stop() {
      clearInterval(timer);
      last = readStats(pid) ?? last;
      return last;
    },
  };
}
