/**
 * What one poll of `GET /api/admin/mailbox/synchronization` costs the daemon,
 * for sync-initial's completion signal (sync-sides.ts `synchronized`, polled
 * every 100 ms; the daemon's answers are inside its CPU-seconds). A running
 * daemon on a mirrored `realistic` mailbox (BENCH_MESSAGES, default 2000,
 * three folders): after each periodic run, 200 polls back to back, then an
 * idle window as long; the daemon's CPU (/proc) over each; per poll =
 * (busy − idle) / 200, median of 5 rounds. Resolution: the kernel's 10 ms
 * tick over ≈ 200 polls.
 *
 *   npx tsc -p tsconfig.bench.json && node dist/bench/admin-poll-cost.js
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { startDovecot } from '../test/harness/dovecot.ts';
import { generateMailbox } from '../test/harness/generator.ts';
import { writeMaildirs } from '../test/harness/place-mail.ts';
import { reservePort } from '../test/helpers/ports.ts';
import { interval } from './peers/process-stats.ts';
import { daemonConfig, lastEndedRun, PASSWORD, startService, synchronizationStatus, USER } from './scenarios/sync-sides.ts';

const count = Number(process.env.BENCH_MESSAGES ?? '2000');
const folders = ['INBOX', 'Archive', 'Sent'];
const dir = mkdtempSync(join(tmpdir(), 'mailcairn-pollcost-'));
const dovecot = await startDovecot({ users: [{ user: USER, password: PASSWORD }] });
try {
  await writeMaildirs(
    dovecot,
    USER,
    (function* () {
      for (const m of generateMailbox({ seed: 42, count, profile: 'realistic' })) yield { ...m, folder: m.folder! };
    })(),
    folders,
  );
  const adminPort = await reservePort();
  const d = daemonConfig(join(dir, 'm'), dovecot, { folders, adminPort });
  const service = await startService(d);
  const N = 200;
  const per: number[] = [];
  try {
    for (let round = 0; round < 5; round++) {
      await service.settled(lastEndedRun(d.database));
      await new Promise((r) => setTimeout(r, 500));
      const started = performance.now();
      const busy = interval(service.pid);
      for (let i = 0; i < N; i++) if ((await synchronizationStatus(adminPort)) === null) throw new Error('no answer');
      const b = busy.end().cpuMs;
      const wall = performance.now() - started;
      const idle = interval(service.pid);
      await new Promise((r) => setTimeout(r, wall));
      const a = idle.end().cpuMs;
      per.push((b - a) / N);
      console.log(`round ${round}: ${N} polls in ${wall.toFixed(0)} ms, daemon CPU ${b} ms vs ${a} ms idle → ${((b - a) / N).toFixed(2)} ms a poll`);
    }
  } finally {
    await service.stop();
  }
  per.sort((x, y) => x - y);
  console.log(`median ${per[2]!.toFixed(2)} ms of daemon CPU a poll (${count} messages, 3 folders)`);
} finally {
  await dovecot.stop();
  rmSync(dir, { recursive: true, force: true });
}
