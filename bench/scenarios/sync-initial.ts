/**
 * sync-initial and sync-incremental: Mailcairn mirroring a private Dovecot
 * mailbox (fetch + parse + index + store, the compiled daemon as an operator
 * runs it) beside its peers in the same run on the same mailbox:
 *  - the ceiling: imapflow `UID FETCH 1:* BODY.PEEK[]`, discarding the bytes;
 *  - mbsync pulling the folder into a Maildir (the bare copy), then
 *    `notmuch new` indexing it;
 *  - no-change incremental: one Mailcairn run vs mbsync re-run;
 *  - 1% new mail and 1% flag changes: one Mailcairn run vs mbsync re-run.
 * Mailbox: BENCH_MESSAGES generated messages (default 10000, `bench` profile
 * ≈ 63 KB average), or BENCH_CORPUS=real for every message of
 * `../shared/corpus/real/`. The incremental rows are medians of
 * BENCH_REPEAT runs (default 3) on each side.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import Libsql from 'libsql';
import { ImapFlow } from 'imapflow';
import { startDovecot, type Dovecot } from '../../test/harness/dovecot.ts';
import { mailAdmin } from '../../test/harness/doveadm.ts';
import { loadCorpus, withoutEnvelope } from '../../test/harness/corpus.ts';
import { generateMailbox } from '../../test/harness/generator.ts';
import { appendMessages, writeMaildir } from '../../test/harness/place-mail.ts';
import { mbsyncConfig, notmuchConfig, timed, type Timed } from '../peers/mbsync.ts';
import { watchStats } from '../peers/process-stats.ts';
import type { Row, Scenario } from '../scenario.ts';
import { round } from '../stats.ts';

const USER = 'bench';
const PASSWORD = 'pw-bench';
const daemonBin = fileURLToPath(new URL('../../bin/mailcairnd.js', import.meta.url));
const WAIT_LIMIT_MS = 30 * 60_000;

async function fetchAndDiscard(dovecot: Dovecot): Promise<Timed> {
  const started = performance.now();
  const client = new ImapFlow({ host: '127.0.0.1', port: dovecot.port, secure: false, auth: { user: USER, pass: PASSWORD }, logger: false });
  await client.connect();
  await client.mailboxOpen('INBOX', { readOnly: true });
  let bytes = 0;
  for await (const msg of client.fetch('1:*', { uid: true, source: true }, { uid: true })) bytes += msg.source?.length ?? 0;
  await client.logout();
  if (bytes === 0) throw new Error('fetched nothing');
  return { wallMs: performance.now() - started, cpuMs: NaN, peakRssMiB: NaN };
}

type Daemon = { database: string; stop(): Promise<{ cpuMs: number; peakRssMiB: number }>; waitStored(n: number): Promise<number>; waitRuns(n: number): Promise<number> };

function count(database: string, sql: string): number {
  try {
    const db = new Libsql(database, { readonly: true, timeout: 2_000 });
    try {
      return Number((db.prepare(sql).get() as { n: number }).n);
    } finally {
      db.close();
    }
  } catch {
    return 0;
  }
}

function startDaemon(dir: string, dovecot: Dovecot): Daemon {
  mkdirSync(dir, { recursive: true });
  const database = join(dir, 'mailcairn.db');
  writeFileSync(join(dir, 'pw'), PASSWORD);
  const config = join(dir, 'mailcairn.json');
  writeFileSync(
    config,
    JSON.stringify({
      HealthEndpoints: { Enabled: false },
      Logging: { Level: 'warn', Format: 'Json' },
      Storage: { Database: database },
      MailSynchronization: { Interval: '00:00:10' },
      Accounts: [{ Id: 'bench', Imap: { Host: '127.0.0.1', Port: dovecot.port, Security: 'None', Username: USER, Password: `file:${join(dir, 'pw')}` }, Folders: [{ Alias: 'inbox' }] }],
    }),
  );
  const child = spawn(process.execPath, [daemonBin, '--config', config], { stdio: ['ignore', 'ignore', 'inherit'] });
  const stats = watchStats(child.pid!);
  const poll = async (predicate: () => boolean): Promise<number> => {
    const started = performance.now();
    while (!predicate()) {
      if (performance.now() - started > WAIT_LIMIT_MS || child.exitCode !== null) throw new Error('mailcairnd did not finish the mirror');
      await new Promise((r) => setTimeout(r, 50));
    }
    return performance.now() - started;
  };
  return {
    database,
    waitStored: (n) => poll(() => count(database, "SELECT count(*) AS n FROM messages WHERE state <> 'tombstoned'") >= n),
    waitRuns: (n) => poll(() => count(database, 'SELECT count(*) AS n FROM sync_runs WHERE ended_at IS NOT NULL') >= n),
    async stop() {
      const usage = stats.stop();
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
      return usage;
    },
  };
}

function lastRunMs(database: string): number {
  return count(database, 'SELECT ended_at - started_at AS n FROM sync_runs WHERE ended_at IS NOT NULL ORDER BY id DESC LIMIT 1');
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** The mailbox to mirror: generated at BENCH_MESSAGES, or the shared corpus's real mail. */
function benchMailbox(): { label: string; messages: Array<{ raw: Buffer | string }> } {
  if (process.env.BENCH_CORPUS === 'real') return { label: 'corpus real/', messages: loadCorpus('real').map((m) => ({ raw: withoutEnvelope(m.raw) })) };
  const total = Number(process.env.BENCH_MESSAGES ?? '10000');
  return { label: 'generated', messages: [...generateMailbox({ seed: 42, count: total, profile: 'bench' })] };
}

async function sequence(n: number, once: () => Promise<number>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(await once());
  return out;
}

export const syncInitial: Scenario = {
  name: 'sync-initial',
  description: 'mirror a Dovecot mailbox: Mailcairn vs fetch-and-discard, mbsync, mbsync + notmuch; then incremental runs',
  async run() {
    const repeat = Math.max(1, Number(process.env.BENCH_REPEAT ?? '3'));
    const { label, messages } = benchMailbox();
    const total = messages.length;
    const dir = mkdtempSync(join(tmpdir(), 'mailcairn-bench-'));
    const dovecot = await startDovecot({ users: [{ user: USER, password: PASSWORD }] });
    const rows: Row[] = [];
    try {
      let bytes = 0;
      for (const m of messages) bytes += m.raw.length;
      await writeMaildir(dovecot, USER, 'INBOX', messages);
      const mb = round(bytes / 2 ** 20);

      const ceiling = await fetchAndDiscard(dovecot);
      const mbsyncDir = join(dir, 'mbsync');
      const rc = mbsyncConfig(mbsyncDir, { port: dovecot.port, user: USER, password: PASSWORD });
      const mbsync = await timed('mbsync', ['-c', rc, '-a', '-q']);
      const notmuch = await timed('notmuch', ['new', '--quiet'], { ...process.env, NOTMUCH_CONFIG: notmuchConfig(mbsyncDir) });

      const daemon = startDaemon(join(dir, 'mailcairn'), dovecot);
      const ours = await daemon.waitStored(total);
      await daemon.waitRuns(1);
      const row = (scenario: string, wallMs: number, peer: string, peerMs: number, note = ''): Row => ({
        scenario,
        mailbox: label,
        messages: total,
        MB: mb,
        'mailcairn s': round(wallMs / 1000, 2),
        peer,
        'peer s': round(peerMs / 1000, 2),
        ratio: round(wallMs / peerMs, 2),
        note,
      });
      rows.push(row('initial: fetch only', ceiling.wallMs, 'imapflow fetch+discard', ceiling.wallMs));
      rows.push(row('initial mirror', ours, 'mbsync', mbsync.wallMs, `mbsync peak RSS ${round(mbsync.peakRssMiB)} MiB, CPU ${round(mbsync.cpuMs / 1000, 1)} s`));
      rows.push(row('initial mirror', ours, 'mbsync + notmuch new', mbsync.wallMs + notmuch.wallMs, `notmuch peak RSS ${round(notmuch.peakRssMiB)} MiB, CPU ${round(notmuch.cpuMs / 1000, 1)} s`));
      rows.push(row('initial mirror', ours, 'imapflow fetch+discard', ceiling.wallMs));

      // No change: the next runs (due on the 10 s interval) against mbsync run again, medians of `repeat`.
      const endedRuns = (): number => count(daemon.database, 'SELECT count(*) AS n FROM sync_runs WHERE ended_at IS NOT NULL');
      const nextRun = async (after = endedRuns()): Promise<number> => {
        await daemon.waitRuns(after + 1);
        return lastRunMs(daemon.database);
      };
      const mbsyncRuns = async (): Promise<number> => median(await sequence(repeat, async () => (await timed('mbsync', ['-c', rc, '-a', '-q'])).wallMs));
      const noChange = await sequence(repeat, nextRun);
      rows.push(row('no-change incremental (median)', median(noChange), 'mbsync', await mbsyncRuns(), `Mailcairn runs ${noChange.map((ms) => round(ms / 1000, 2)).join(' / ')} s`));

      // 1% new mail and 1% flag changes, `repeat` times; each side syncs each round's changes once.
      // Flags first: the new mail wakes the daemon through IDLE, and that run must see both.
      const admin = mailAdmin(dovecot);
      const changes = Math.max(1, Math.floor(total / 100));
      const ours1: number[] = [];
      const theirs1: number[] = [];
      for (let round1 = 0; round1 < repeat; round1++) {
        const before = endedRuns();
        await admin.addFlags(USER, 'INBOX', Array.from({ length: changes }, (_, i) => 1 + ((i * 97 + round1) % total)), [round1 % 2 === 0 ? '\\Flagged' : '\\Answered']);
        await appendMessages(dovecot, USER, 'INBOX', generateMailbox({ seed: 7 + round1, count: changes, profile: 'bench' }));
        ours1.push(await nextRun(before));
        theirs1.push((await timed('mbsync', ['-c', rc, '-a', '-q'])).wallMs);
      }
      rows.push(row('1% new + 1% flags (median)', median(ours1), 'mbsync', median(theirs1)));
      const usage = await daemon.stop();
      rows.push(row('mailcairn whole run', NaN, '—', NaN, `peak RSS ${round(usage.peakRssMiB)} MiB, CPU ${round(usage.cpuMs / 1000, 1)} s (initial + both incremental runs)`));
    } finally {
      await dovecot.stop();
      rmSync(dir, { recursive: true, force: true });
    }
    return rows;
  },
};
