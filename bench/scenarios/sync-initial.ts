/**
 * sync-initial and sync-incremental: Mailcairn mirroring a private Dovecot
 * mailbox (fetch + parse + index + store, the compiled daemon as an operator
 * runs it) beside its peers in the same run on the same mailbox. Each side
 * is measured the same way (sync-sides.ts, peers/process-stats.ts): wall
 * time on this process's clock, CPU seconds (user + system) and peak RSS
 * from the kernel (wait4 for a process run to its end,
 * /proc for the running service). The sides take turns: repetition i runs
 * Mailcairn first when i is even and the peer first when it is odd (AB BA
 * AB …); the rows are medians, figure by figure.
 *
 *  1. initial mirror, BENCH_INITIAL_REPEAT times (default 2), each on fresh
 *     state: mailcairnd as a one-shot process (spawn → every message stored
 *     and derived and its run ended → SIGTERM → exit) against the peers
 *     run one after the other: the ceiling (imapflow `UID FETCH 1:*
 *     BODY.PEEK[]`, bytes discarded, in this process), mbsync (the bare
 *     copy into a Maildir), then `notmuch new` indexing it;
 *  2. incremental, one-shot processes on both sides, BENCH_REPEAT times
 *     (default 3) each: no change, then 1% new mail + 1% flag changes made
 *     on the server before both sides run; Mailcairn from spawn to exit
 *     after one run, against one mbsync process;
 *  3. incremental, the service running: the same 1% change, from the
 *     moment the server holds it to the moment it is in the database
 *     (latency), CPU and peak over change + run; against mbsync started at
 *     the change (its process wall from 2: the best an mbsync user gets).
 *     The change is made IDLE_SETTLE_MS after the previous run ended, when
 *     the daemon waits in IDLE as it does between runs.
 *     Then the service's periodic no-change run: its CPU per interval.
 *
 * Then issue 14's goals as `goal / measured / peer / met?` rows (goalRows).
 *
 * Mailboxes (BENCH_CORPUS, comma-separated, default `bench,realistic`; each
 * run through all of the above in a Dovecot of its own, its goal rows
 * labelled with it): `bench`, BENCH_MESSAGES generated messages (default
 * 10000, ≈ 63 KB average, all in the INBOX); `realistic`, as many in issue
 * 34's measured shape (generator-shape.ts: p50 10 KB, p99 1.1 MB, 35% plain,
 * 32% alternative, 15% HTML, 17% + 1% with attachments; INBOX, Archive and
 * Sent 60/30/10, all three mirrored by both sides); `real`, every message of
 * `../shared/corpus/real/`. The 1% changes are made in the INBOX.
 *
 * Completion, Mailcairn's one-shot side: what an operator sees, `GET
 * /api/admin/mailbox/synchronization` on the daemon's admin listener, polled
 * every 100 ms over a kept-alive connection (sync-sides.ts `synchronized`:
 * a run ended in this process, none under way, the folders' completed
 * counts sum to the mailbox, nothing left to index). The daemon answers
 * those polls, so their CPU is in its CPU-seconds and its peak (the count
 * is in the row's note; docs/performance.md gives a poll's measured cost);
 * the first answer after completion can come up to 100 ms late, which is
 * in its wall. The flag half of the 1% change and the running service's
 * rows still read the daemon's database (no operator surface reports a
 * message's flags).
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { ImapFlow } from 'imapflow';
import { startDovecot, type Dovecot } from '../../test/harness/dovecot.ts';
import { mailAdmin } from '../../test/harness/doveadm.ts';
import { generateMailbox } from '../../test/harness/generator.ts';
import { appendMessages, writeMaildirs } from '../../test/harness/place-mail.ts';
import { reservePort } from '../../test/helpers/ports.ts';
import { mbsyncConfig, notmuchConfig } from '../peers/mbsync.ts';
import { interval, timed, type ProcessStats } from '../peers/process-stats.ts';
import { boundGoal, mebibytes, ratioGoal, seconds } from '../goals.ts';
import type { Row, Scenario } from '../scenario.ts';
import { median, round } from '../stats.ts';
import { benchCorpora, type Corpus } from './corpora.ts';
import { daemonConfig, lastEndedRun, lastRunMs, mailcairnOnce, mbsyncOnce, PASSWORD, startService, USER, type Expect } from './sync-sides.ts';

/** How long after a run the service is left before a change is made (under the 10 s interval). */
const IDLE_SETTLE_MS = 3_000;

/** One side's figures for one row: wall, CPU and peak, each a median of the repetitions. */
type Side = { wallMs: number; cpuMs: number; peakRssMiB: number };

/** The ceiling, in this process: wall, and this process's CPU over the fetch of every folder (nothing else runs meanwhile); no peak of its own. */
async function fetchAndDiscard(dovecot: Dovecot, folders: readonly string[]): Promise<Side> {
  const started = performance.now();
  const cpu = process.cpuUsage();
  const client = new ImapFlow({ host: '127.0.0.1', port: dovecot.port, secure: false, auth: { user: USER, pass: PASSWORD }, logger: false });
  await client.connect();
  let bytes = 0;
  for (const folder of folders) {
    await client.mailboxOpen(folder, { readOnly: true });
    for await (const msg of client.fetch('1:*', { uid: true, source: true }, { uid: true })) bytes += msg.source?.length ?? 0;
  }
  await client.logout();
  if (bytes === 0) throw new Error('fetched nothing');
  const used = process.cpuUsage(cpu);
  return { wallMs: performance.now() - started, cpuMs: (used.user + used.system) / 1000, peakRssMiB: NaN };
}

function medianSide(sides: Side[]): Side {
  return { wallMs: median(sides.map((s) => s.wallMs)), cpuMs: median(sides.map((s) => s.cpuMs)), peakRssMiB: median(sides.map((s) => s.peakRssMiB)) };
}

function sum(...sides: Side[]): Side {
  return {
    wallMs: sides.reduce((n, s) => n + s.wallMs, 0),
    cpuMs: sides.reduce((n, s) => n + s.cpuMs, 0),
    peakRssMiB: Math.max(...sides.map((s) => s.peakRssMiB)),
  };
}

/** Run both sides in the repetition's order (even: Mailcairn first); returns the order as "MP" or "PM". */
async function inTurn(i: number, ours: () => Promise<void>, theirs: () => Promise<void>): Promise<string> {
  if (i % 2 === 0) {
    await ours();
    await theirs();
    return 'MP';
  }
  await theirs();
  await ours();
  return 'PM';
}

const s = (ms: number, digits = 2): number | null => (Number.isNaN(ms) ? null : round(ms / 1000, digits));
const mib = (n: number): number | null => (Number.isNaN(n) ? null : round(n));
const ratio = (a: number, b: number): number | null => (Number.isNaN(a) || Number.isNaN(b) || b === 0 ? null : round(a / b, 2));
const list = (values: number[]): string => values.map((v) => s(v)).join(' / ');

export const syncInitial: Scenario = {
  name: 'sync-initial',
  description:
    'mirror a Dovecot mailbox: Mailcairn vs fetch-and-discard, mbsync, mbsync + notmuch; then incremental runs (one-shot processes, and the running service)',
  async run() {
    const rows: Row[] = [];
    for (const corpus of benchCorpora()) rows.push(...(await mirrorCorpus(corpus)));
    return rows;
  },
};

/** Every part of the scenario on one mailbox, in a Dovecot of its own. */
async function mirrorCorpus({ label, count, folders, messages }: Corpus): Promise<Row[]> {
  const repeat = Math.max(1, Number(process.env.BENCH_REPEAT ?? '3'));
  const initialRepeat = Math.max(1, Number(process.env.BENCH_INITIAL_REPEAT ?? '2'));
  const adminPort = await reservePort();
  const dir = mkdtempSync(join(tmpdir(), 'mailcairn-bench-'));
  const dovecot = await startDovecot({ users: [{ user: USER, password: PASSWORD }] });
  const log = (line: string): void => void process.stderr.write(`[sync] ${line}\n`);
  const rows: Row[] = [];
  try {
    // Streamed into the Maildir: 50,000 generated messages are ≈ 3 GB, more than this process should hold.
    let bytes = 0;
    const placed = await writeMaildirs(
      dovecot,
      USER,
      (function* () {
        for (const m of messages()) {
          bytes += m.raw.length;
          yield { ...m, folder: m.folder ?? 'INBOX' };
        }
      })(),
      folders,
    );
    const total = [...placed.values()].reduce((a, b) => a + b, 0);
    if (total !== count) throw new Error(`placed ${total} messages, expected ${count}`);
    const inboxCount = placed.get('INBOX') ?? 0;
    log(`${label}: ${total} messages, ${[...placed].map(([f, n]) => `${f} ${n}`).join(', ')}`);
    const mb = round(bytes / 2 ** 20);
    const row = (scenario: string, order: string, ours: Side | null, peer: string, theirs: Side | null, note = ''): Row => ({
      scenario,
      mailbox: label,
      messages: total,
      MB: mb,
      order,
      'Mailcairn wall s': ours ? s(ours.wallMs) : null,
      'Mailcairn CPU s': ours ? s(ours.cpuMs) : null,
      'Mailcairn peak MiB': ours ? mib(ours.peakRssMiB) : null,
      peer,
      'peer wall s': theirs ? s(theirs.wallMs) : null,
      'peer CPU s': theirs ? s(theirs.cpuMs) : null,
      'peer peak MiB': theirs ? mib(theirs.peakRssMiB) : null,
      'wall ratio': ours && theirs ? ratio(ours.wallMs, theirs.wallMs) : null,
      'CPU ratio': ours && theirs ? ratio(ours.cpuMs, theirs.cpuMs) : null,
      note,
    });

    // 1. Initial mirror, each repetition on fresh state for both sides; the last repetition's state carries on.
    const initial = {
      ours: [] as Side[],
      visible: [] as number[],
      polls: [] as number[],
      ceiling: [] as Side[],
      mbsync: [] as Side[],
      notmuch: [] as Side[],
      order: [] as string[],
    };
    let state: { daemon: ReturnType<typeof daemonConfig>; mbsyncDir: string; rc: string } | null = null;
    for (let i = 0; i < initialRepeat; i++) {
      const repDir = join(dir, `initial-${i}`);
      mkdirSync(repDir, { recursive: true });
      const daemon = daemonConfig(join(repDir, 'mailcairn'), dovecot, { folders, adminPort });
      const mbsyncDir = join(repDir, 'mbsync');
      const rc = mbsyncConfig(mbsyncDir, { port: dovecot.port, user: USER, password: PASSWORD }, folders);
      log(`initial mirror ${i + 1}/${initialRepeat}`);
      const order = await inTurn(
        i,
        async () => {
          const once = await mailcairnOnce(daemon, { stored: total });
          initial.ours.push(once);
          initial.visible.push(once.visibleMs);
          initial.polls.push(once.polls);
        },
        async () => {
          initial.ceiling.push(await fetchAndDiscard(dovecot, folders));
          initial.mbsync.push(await mbsyncOnce(rc, mbsyncDir, { stored: total }, folders));
          initial.notmuch.push(await timed('notmuch', ['new', '--quiet'], { ...process.env, NOTMUCH_CONFIG: notmuchConfig(mbsyncDir) }));
        },
      );
      initial.order.push(order);
      if (i > 0) rmSync(join(dir, `initial-${i - 1}`), { recursive: true, force: true });
      state = { daemon, mbsyncDir, rc };
    }
    const ours0 = medianSide(initial.ours);
    const oursNote = `Mailcairn spawn → exit ${list(initial.ours.map((x) => x.wallMs))} s (stopped once mirrored), mirrored and indexed per the admin synchronization route at ${list(initial.visible)} s (${initial.polls.join(' / ')} polls, answered inside its CPU)`;
    const order0 = initial.order.join(' ');
    rows.push(
      row(
        'initial mirror',
        order0,
        ours0,
        'mbsync (bare copy)',
        medianSide(initial.mbsync),
        `${oursNote}; mbsync ${list(initial.mbsync.map((x) => x.wallMs))} s`,
      ),
    );
    rows.push(
      row(
        'initial mirror',
        order0,
        ours0,
        'mbsync + notmuch new',
        medianSide(initial.mbsync.map((m, i) => sum(m, initial.notmuch[i]!))),
        `notmuch new ${list(initial.notmuch.map((x) => x.wallMs))} s`,
      ),
    );
    rows.push(
      row(
        'initial mirror',
        order0,
        ours0,
        'imapflow fetch+discard (ceiling)',
        medianSide(initial.ceiling),
        'ceiling in the bench process: its CPU over the fetch, no peak of its own',
      ),
    );

    // 2. Incremental, one-shot processes on both sides.
    const { daemon, mbsyncDir, rc } = state!;
    let expected: Expect = { stored: total };
    const incremental = async (name: string, before: (i: number) => Promise<Expect>): Promise<{ ours: Side[]; mbsync: Side[] }> => {
      const ours: Side[] = [];
      const visibleAt: number[] = [];
      const cpuByVisible: number[] = [];
      const theirs: Side[] = [];
      const order: string[] = [];
      for (let i = 0; i < repeat; i++) {
        log(`${name} ${i + 1}/${repeat}`);
        const e = await before(i);
        order.push(
          await inTurn(
            i,
            async () => {
              const once = await mailcairnOnce(daemon, e);
              ours.push(once);
              visibleAt.push(once.visibleMs);
              cpuByVisible.push(once.cpuAtVisibleMs);
            },
            async () => void theirs.push(await mbsyncOnce(rc, mbsyncDir, e, folders)),
          ),
        );
      }
      rows.push(
        row(
          `${name}, one-shot processes (median)`,
          order.join(' '),
          medianSide(ours),
          'mbsync',
          medianSide(theirs),
          `Mailcairn spawn → exit ${list(ours.map((x) => x.wallMs))} s, visible at ${list(visibleAt)} s (CPU by then ${list(cpuByVisible)} s); mbsync ${list(theirs.map((x) => x.wallMs))} s`,
        ),
      );
      return { ours, mbsync: theirs };
    };
    const admin = mailAdmin(dovecot);
    const changes = Math.max(1, Math.floor(total / 100));
    // Flags first, then the new mail: a daemon woken by the new mail (IDLE) must see both in its run.
    const change = async (n: number): Promise<Expect & { madeMs: number }> => {
      const started = performance.now();
      const uids = [...new Set(Array.from({ length: changes }, (_, i) => 1 + ((i * 97 + n) % inboxCount)))];
      const flag = n % 2 === 0 ? '\\Flagged' : '\\Answered';
      await admin.addFlags(USER, 'INBOX', uids, [flag]);
      await appendMessages(dovecot, USER, 'INBOX', generateMailbox({ seed: 7 + n, count: changes, profile: 'bench' }));
      expected = { stored: expected.stored + changes, flagged: { uids, flag } };
      return { ...expected, madeMs: performance.now() - started };
    };
    const noChange = await incremental('no-change incremental', async () => expected);
    const onePercent = await incremental('1% new + 1% flags', (i) => change(i));
    const serviceSides = { serviceChange: [] as Side[], servicePeriodic: [] as Side[] };

    // 3. The service running: change → visible, and the periodic no-change run.
    log('service: 1% new + 1% flags, change → visible');
    const service = await startService(daemon);
    try {
      const latency: Side[] = [];
      const made: number[] = [];
      serviceSides.serviceChange = latency;
      let peakReset = true;
      for (let i = 0; i < repeat; i++) {
        await service.settled();
        // Mail arrives between runs, when the daemon sits in IDLE: imapflow enters IDLE up to 2 s after its
        // last command, so a change made at once after a run would wait for that, not for the daemon's reaction.
        await new Promise((r) => setTimeout(r, IDLE_SETTLE_MS));
        const runBefore = lastEndedRun(daemon.database);
        const measured = interval(service.pid);
        peakReset &&= measured.peakReset;
        const e = await change(repeat + i);
        const changedAt = performance.now();
        const seenAt = await service.waitVisible(e);
        await service.settled(runBefore);
        const usage: ProcessStats = measured.end();
        latency.push({ wallMs: seenAt - changedAt, cpuMs: usage.cpuMs, peakRssMiB: usage.peakRssMiB });
        made.push(e.madeMs);
      }
      rows.push(
        row(
          '1% new + 1% flags, service running (median)',
          'M',
          medianSide(latency),
          'mbsync started at the change',
          medianSide(onePercent.mbsync),
          `Mailcairn wall = change on the server, ${IDLE_SETTLE_MS / 1000} s after the last run → in the database (${list(latency.map((x) => x.wallMs))} s; making the change took ${list(made)} s, the daemon may start on it meanwhile); ` +
            `CPU and peak over change + run from /proc${peakReset ? ' (peak reset at the start)' : ' (lifetime peak: reset refused)'}; peer = the one-shot mbsync runs above`,
        ),
      );

      log('service: periodic no-change runs');
      const periodic: Side[] = [];
      serviceSides.servicePeriodic = periodic;
      for (let i = 0; i < repeat; i++) {
        const runBefore = await service.settled().then(() => lastEndedRun(daemon.database));
        const measured = interval(service.pid);
        await service.settled(runBefore);
        const usage = measured.end();
        periodic.push({ wallMs: lastRunMs(daemon.database), cpuMs: usage.cpuMs, peakRssMiB: usage.peakRssMiB });
      }
      rows.push(
        row(
          'no-change, service running: one interval (median)',
          'M',
          medianSide(periodic),
          'mbsync',
          medianSide(noChange.mbsync),
          `Mailcairn wall = the run as the daemon records it (no process start or login: the session stays open; not comparable, no wall ratio); CPU = the whole interval between two run ends; peer = the one-shot mbsync no-change runs above`,
        ),
      );
      rows[rows.length - 1]!['wall ratio'] = null;
    } finally {
      await service.stop();
    }
    rows.push(
      ...goalRows(`${total} messages, ${label}`, {
        initial: ours0,
        mbsync: medianSide(initial.mbsync),
        ceiling: medianSide(initial.ceiling),
        noChange: { ours: medianSide(noChange.ours), mbsync: medianSide(noChange.mbsync) },
        onePercent: { ours: medianSide(onePercent.ours), mbsync: medianSide(onePercent.mbsync) },
        serviceChange: medianSide(serviceSides.serviceChange),
        servicePeriodic: medianSide(serviceSides.servicePeriodic),
      }),
    );
  } finally {
    await dovecot.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}

/** Issue 14's peak-memory bound, 300 MB (10^6 bytes), in the MiB the rows use. */
const PEAK_BOUND_MIB = 300e6 / 2 ** 20;

type Measured = {
  initial: Side;
  mbsync: Side;
  ceiling: Side;
  noChange: { ours: Side; mbsync: Side };
  onePercent: { ours: Side; mbsync: Side };
  serviceChange: Side;
  servicePeriodic: Side;
};

/**
 * Issue 14's mirroring goals, each beside the peer of this run (medians of the rows above).
 * The incremental goals are shown twice, as docs/benchmarks.md "sync-initial rows" measures them:
 * one-shot processes on both sides (process start to exit), and the service running.
 */
function goalRows(size: string, m: Measured): Row[] {
  const cpu = (ms: number): string => `${(ms / 1000).toFixed(2)} CPU-s`;
  return [
    ratioGoal(`initial mirror wall ≤ 1.0× mbsync bare copy (${size})`, m.initial.wallMs, m.mbsync.wallMs, 1.0, seconds),
    ratioGoal(`initial mirror CPU ≤ 1.5× mbsync bare copy (${size})`, m.initial.cpuMs, m.mbsync.cpuMs, 1.5, cpu),
    ratioGoal(`stretch: initial mirror wall ≤ 3× imapflow fetch+discard ceiling (${size})`, m.initial.wallMs, m.ceiling.wallMs, 3, seconds),
    boundGoal(
      `initial mirror peak RSS ≤ 300 MB (${PEAK_BOUND_MIB.toFixed(0)} MiB; goal stated at 50000 messages, run at ${size})`,
      m.initial.peakRssMiB,
      PEAK_BOUND_MIB,
      mebibytes,
      m.mbsync.peakRssMiB,
    ),
    ratioGoal(
      'no-change incremental wall ≤ mbsync, one-shot processes (spawn → exit, both sides)',
      m.noChange.ours.wallMs,
      m.noChange.mbsync.wallMs,
      1.0,
      seconds,
    ),
    ratioGoal('no-change incremental CPU ≤ mbsync, one-shot processes', m.noChange.ours.cpuMs, m.noChange.mbsync.cpuMs, 1.0, cpu),
    ratioGoal(
      'no-change incremental CPU ≤ mbsync, service running (one interval vs one mbsync run)',
      m.servicePeriodic.cpuMs,
      m.noChange.mbsync.cpuMs,
      1.0,
      cpu,
    ),
    ratioGoal(
      '1% new + 1% flags wall ≤ mbsync, one-shot processes (spawn → exit, both sides)',
      m.onePercent.ours.wallMs,
      m.onePercent.mbsync.wallMs,
      1.0,
      seconds,
    ),
    ratioGoal('1% new + 1% flags CPU ≤ mbsync, one-shot processes', m.onePercent.ours.cpuMs, m.onePercent.mbsync.cpuMs, 1.0, cpu),
    ratioGoal(
      '1% new + 1% flags ≤ mbsync, service running (change → visible vs an mbsync run started at the change)',
      m.serviceChange.wallMs,
      m.onePercent.mbsync.wallMs,
      1.0,
      seconds,
    ),
  ];
}
