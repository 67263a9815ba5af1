/**
 * rules-spam: what mail rules and spam classification cost (issue 32,
 * docs/rules-and-spam.md).
 *
 *  1. The initial mirror with 20 rules enabled and with none, same mailbox,
 *     each on fresh state: the compiled daemon as a one-shot process
 *     (sync-sides.ts `mailcairnOnce`: spawn → every message stored and
 *     derived, its run ended and — with rules — every message judged and
 *     every change the rules asked applied on the server → SIGTERM → exit),
 *     CPU seconds (user + system) and peak RSS from the kernel (wait4). The
 *     sides take turns (AB BA AB …), BENCH_REPEAT pairs (default 3), medians.
 *     Of the 20 rules three match part of the mail (newsletters marked seen,
 *     a list's mail given a keyword, a digest flagged) and seventeen match
 *     nothing, as an owner's rule set mostly does for any one message.
 *     After each round with rules the server's flags are put back as they
 *     were before the first (the rules' changes are applied on the server,
 *     and a later round would otherwise find them made: a cheaper round).
 *     Goal: with rules ≤ 1.05× without, in CPU seconds.
 *  2. A spam run's throughput against the same engine called directly with
 *     the same messages in the same run: a private rspamd
 *     (test/harness/rspamd.ts); the daemon's dry run over BENCH_SPAM_MESSAGES
 *     stored messages (default 500), from POST /api/admin/spam/runs to the
 *     run's ending read back from GET, against this process posting each
 *     message's raw MIME to /checkv2 with as many calls in flight as the
 *     spam actor keeps (SPAM_CALLS_IN_FLIGHT). Alternating, BENCH_REPEAT
 *     pairs, medians. Goal: the run ≥ 0.8× the direct messages per second.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import Libsql from 'libsql';
import { request } from 'undici';
import { startDovecot, type Dovecot } from '../../test/harness/dovecot.ts';
import { generateMailbox } from '../../test/harness/generator.ts';
import { withImap } from '../../test/harness/imap-client.ts';
import { writeMaildir } from '../../test/harness/place-mail.ts';
import { startRspamd, type Rspamd } from '../../test/harness/rspamd.ts';
import { reservePort } from '../../test/helpers/ports.ts';
import { SPAM_CALLS_IN_FLIGHT } from '../../actors/spam/protocol.ts';
import { apiKeyEntry, writeBenchConfig } from '../peers/daemon-config.ts';
import { startBenchDaemon } from '../peers/daemon.ts';
import { boundGoal, goalRow, mebibytes, ratioGoal } from '../goals.ts';
import type { Row, Scenario } from '../scenario.ts';
import { median, round } from '../stats.ts';
import { type DaemonConfig, mailcairnOnce, PASSWORD, USER } from './sync-sides.ts';

const OWNER = { name: 'Alice Example', address: 'alice@example.org' };
const ADMIN_KEY = 'bench-admin-key-0123456789abcdef';
const GTUBE = 'XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X';

type Side = { cpuMs: number; wallMs: number; peakRssMiB: number; concluded: number; crashes: number; runs: number };

function count(database: string, sql: string): number {
  try {
    const db = new Libsql(database, { readonly: true, timeout: 2_000 });
    try {
      return Number((db.prepare(sql).get() as { n: number | null }).n ?? 0);
    } finally {
      db.close();
    }
  } catch {
    return -1;
  }
}

/**
 * Twenty rules in run order: seventeen that match nothing in the generated
 * mailbox (other senders, domains and subjects), three that match part of it.
 */
function twentyRules(matching: boolean): unknown[] {
  const none = Array.from({ length: 17 }, (_, i) => {
    const when = [
      { SenderAddress: `billing${i}@vendor${i}.example` },
      { SenderDomain: `shop${i}.example` },
      { SubjectContains: `invoice number ${i}00${i}` },
      { SenderDomain: `travel${i}.example`, SubjectContains: 'itinerary' },
    ][i % 4];
    return { Name: `quiet ${i + 1}`, When: when, Then: i % 2 === 0 ? { AddKeywords: [`filed${i}`] } : { MarkSeen: true } };
  });
  // BENCH_RULES_MATCH=0: the three become rules for mail that never comes, to tell judging from the changes' cost.
  const domain = (d: string): string => (matching ? d : `not-${d}`);
  return [
    ...none.slice(0, 8),
    { Name: 'newsletters read', When: { SenderDomain: domain('news.example.com') }, Then: { MarkSeen: true } },
    ...none.slice(8, 14),
    { Name: 'list tagged', When: { SubjectContains: domain('[announce]') }, Then: { AddKeywords: ['announce'] } },
    ...none.slice(14),
    { Name: 'digest flagged', When: { SubjectContains: domain('weekly digest'), Folder: 'inbox' }, Then: { MarkFlagged: true } },
  ];
}

function mirrorConfig(dir: string, dovecot: Dovecot, rules: boolean): DaemonConfig {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'pw'), PASSWORD);
  return writeBenchConfig(dir, {
    Logging: { Level: 'warn', Format: 'Json' },
    MailSynchronization: { Interval: '00:00:10' },
    ...(rules ? { MailRules: { Enabled: true, Rules: twentyRules(process.env.BENCH_RULES_MATCH !== '0') } } : {}),
    Accounts: [
      {
        Id: 'bench',
        Imap: { Host: '127.0.0.1', Port: dovecot.port, Security: 'None', Username: USER, Password: `file:${join(dir, 'pw')}` },
        Folders: [{ Alias: 'inbox' }],
      },
    ],
  });
}

/** Every stored message judged by the arrival stage, and nothing the rules asked still outstanding. */
function rulesSettled(database: string): boolean {
  const judged = count(database, "SELECT ifnull(max(last_message_id), 0) AS n FROM mail_rule_cursors WHERE account_id = 'bench'");
  const stored = count(database, "SELECT ifnull(max(id), 0) AS n FROM messages WHERE account_id = 'bench'");
  const outstanding = count(database, "SELECT count(*) AS n FROM jobs WHERE type = 'mailbox-change' AND state IN ('queued', 'running')");
  return judged >= stored && stored > 0 && outstanding === 0;
}

type Mirrors = { rows: Row[]; on: number; off: number; peakOn: number; peakOff: number };

/** Each INBOX message's flags on the server, by UID; not `\Recent`, which only the first session to see a message is shown and none can store. */
async function inboxFlags(dovecot: Dovecot): Promise<Map<number, string[]>> {
  return withImap(dovecot, USER, async (client) => {
    const lock = await client.getMailboxLock('INBOX');
    try {
      const flags = new Map<number, string[]>();
      for await (const m of client.fetch('1:*', { uid: true, flags: true }, { uid: true }))
        flags.set(m.uid, [...(m.flags ?? [])].filter((f) => f !== '\\Recent').sort());
      return flags;
    } finally {
      lock.release();
    }
  });
}

/**
 * Puts back the flags `before` recorded. A round with rules leaves its changes on the server (the
 * journal applies them there), and the next round's rules would find them already made: no STORE,
 * no changed flags to read again, a cheaper round than the first. Answers how many messages it restored.
 */
async function restoreInboxFlags(dovecot: Dovecot, before: ReadonlyMap<number, string[]>): Promise<number> {
  const now = await inboxFlags(dovecot);
  const bySet = new Map<string, { flags: string[]; uids: number[] }>();
  for (const [uid, flags] of before) {
    if (now.get(uid)?.join(' ') === flags.join(' ')) continue;
    const key = flags.join(' ');
    const group = bySet.get(key) ?? { flags, uids: [] };
    group.uids.push(uid);
    bySet.set(key, group);
  }
  await withImap(dovecot, USER, async (client) => {
    const lock = await client.getMailboxLock('INBOX');
    try {
      for (const { flags, uids } of bySet.values()) {
        if (!(await client.messageFlagsSet(uids.join(','), flags, { uid: true }))) throw new Error('the server refused to put flags back');
      }
    } finally {
      lock.release();
    }
  });
  return [...bySet.values()].reduce((n, g) => n + g.uids.length, 0);
}

async function initialMirrors(dir: string, dovecot: Dovecot, stored: number, repeat: number, log: (line: string) => void): Promise<Mirrors> {
  const sides = { on: [] as Side[], off: [] as Side[] };
  const pristine = await inboxFlags(dovecot);
  const order: string[] = [];
  for (let i = 0; i < repeat; i++) {
    const once = async (on: boolean): Promise<void> => {
      const side = on ? 'on' : 'off';
      log(`initial mirror ${i + 1}/${repeat}, rules ${side}`);
      const repDir = join(dir, `mirror-${side}-${i}`);
      const daemon = mirrorConfig(repDir, dovecot, on);
      const measured = await mailcairnOnce(daemon, { stored, ...(on ? { also: rulesSettled } : {}) });
      const concluded = on ? count(daemon.database, 'SELECT count(*) AS n FROM mail_rule_history') : 0;
      // Synchronization runs the process began: more than one means something (the rules' own changes seen by the watch?) asked for another.
      const runs = count(daemon.database, 'SELECT count(*) AS n FROM sync_runs');
      sides[side].push({ cpuMs: measured.cpuMs, wallMs: measured.wallMs, peakRssMiB: measured.peakRssMiB, concluded, crashes: measured.crashes, runs });
      rmSync(repDir, { recursive: true, force: true });
      if (on) log(`flags of ${await restoreInboxFlags(dovecot, pristine)} messages put back as before the first round`);
    };
    const onFirst = i % 2 === 0;
    await once(onFirst);
    await once(!onFirst);
    order.push(onFirst ? 'RN' : 'NR');
  }
  const figure = (side: 'on' | 'off'): Row => {
    const s = sides[side];
    return {
      part: side === 'on' ? 'initial mirror, 20 rules' : 'initial mirror, no rules',
      messages: stored,
      order: order.join(' '),
      'CPU s (median)': round(median(s.map((x) => x.cpuMs)) / 1000, 2),
      'CPU s (each)': s.map((x) => round(x.cpuMs / 1000, 2)).join(' / '),
      'wall s (median)': round(median(s.map((x) => x.wallMs)) / 1000, 2),
      'wall s (each)': s.map((x) => round(x.wallMs / 1000, 1)).join(' / '),
      'peak MiB (median)': round(median(s.map((x) => x.peakRssMiB))),
      // Actors restarted after a crash in each round (sync-sides.ts `crashesIn`): such a round costs more for that alone.
      'crashes (each)': s.map((x) => x.crashes).join(' / '),
      'sync runs (each)': s.map((x) => x.runs).join(' / '),
      ...(side === 'on' ? { 'conclusions (each)': s.map((x) => x.concluded).join(' / ') } : {}),
    };
  };
  return {
    rows: [figure('on'), figure('off')],
    on: median(sides.on.map((x) => x.cpuMs)),
    off: median(sides.off.map((x) => x.cpuMs)),
    peakOn: median(sides.on.map((x) => x.peakRssMiB)),
    peakOff: median(sides.off.map((x) => x.peakRssMiB)),
  };
}

/** The spam bench's mailbox: generated mail with one message in twenty carrying GTUBE (the engine's sure verdict). */
function* spamMailbox(total: number): Generator<{ raw: Buffer }> {
  let i = 0;
  for (const m of generateMailbox({ seed: 77, count: total, profile: 'bench', owner: OWNER })) {
    if (i++ % 20 === 7) {
      const text = m.raw.toString('latin1');
      const cut = text.indexOf('\r\n\r\n');
      const head = text.slice(0, cut).replace(/^Content-Type:[^\r\n]*(\r\n[ \t][^\r\n]*)*/im, 'Content-Type: text/plain; charset=us-ascii');
      yield { raw: Buffer.from(`${head.replace(/^Content-Transfer-Encoding:[^\r\n]*\r\n/im, '')}\r\n\r\n${GTUBE}\r\n`, 'latin1') };
    } else yield { raw: m.raw };
  }
}

type Admin = { get(path: string): Promise<Record<string, any>>; post(path: string, body: unknown): Promise<Record<string, any>> };

function adminClient(port: number): Admin {
  const call = async (method: 'GET' | 'POST', path: string, body?: unknown): Promise<Record<string, any>> => {
    const res = await request(`http://127.0.0.1:${port}/api/admin${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_KEY}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.body.text();
    if (res.statusCode >= 300) throw new Error(`admin ${method} ${path}: ${res.statusCode}`);
    return text === '' ? {} : (JSON.parse(text) as Record<string, any>);
  };
  return { get: (path) => call('GET', path), post: (path, body) => call('POST', path, body) };
}

/** The engine called directly: every message posted to /checkv2, SPAM_CALLS_IN_FLIGHT at a time. */
async function direct(rspamd: Rspamd, raws: readonly Buffer[]): Promise<number> {
  const started = performance.now();
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < raws.length) {
      const raw = raws[next++]!;
      const res = await request(`${rspamd.url}/checkv2`, { method: 'POST', body: raw });
      const text = await res.body.text();
      if (res.statusCode !== 200 || !text.startsWith('{')) throw new Error(`rspamd answered ${res.statusCode} with ${text.length} bytes`);
    }
  };
  await Promise.all(Array.from({ length: SPAM_CALLS_IN_FLIGHT }, worker));
  return performance.now() - started;
}

/** One dry spam run through the daemon, from the POST to the ending read back. */
async function throughDaemon(admin: Admin): Promise<{ ms: number; classified: number }> {
  const started = performance.now();
  await admin.post('/spam/runs', { account: 'bench' });
  for (;;) {
    const answer = await admin.get('/spam/runs?account=bench');
    const run = answer.run as Record<string, any> | null;
    if (run && run.endedAt) return { ms: performance.now() - started, classified: Number(run.judgedEmailCount ?? 0) };
    if (performance.now() - started > 30 * 60_000) throw new Error('the spam run did not end within 30 min');
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function spamRuns(dir: string, total: number, repeat: number, log: (line: string) => void): Promise<{ rows: Row[]; ours: number; peer: number }> {
  const raws = [...spamMailbox(total)].map((m) => m.raw);
  const dovecot = await startDovecot({ users: [{ user: USER, password: PASSWORD }] });
  const rspamd = await startRspamd();
  const runDir = join(dir, 'spam');
  mkdirSync(runDir, { recursive: true });
  try {
    await writeMaildir(
      dovecot,
      USER,
      'INBOX',
      raws.map((raw) => ({ raw })),
    );
    writeFileSync(join(runDir, 'pw'), PASSWORD);
    writeFileSync(join(runDir, 'admin.key'), ADMIN_KEY);
    const adminPort = await reservePort();
    const { config, database } = writeBenchConfig(runDir, {
      Logging: { Level: 'warn', Format: 'Json' },
      MailSynchronization: { Interval: '01:00:00' },
      AdminEndpoint: {
        Enabled: true,
        BindAddress: '127.0.0.1',
        Port: adminPort,
        Authentication: [{ ...apiKeyEntry('bench-admin', `file:${join(runDir, 'admin.key')}`), Permissions: ['service.admin.operate', 'service.admin.read'] }],
        // Polled every 20 ms while a run goes: the default bucket would refuse the polling, never the work.
        RateLimiting: { TokenCapacity: 1_000_000, TokensPerReplenishmentPeriod: 1_000_000 },
      },
      Spam: { Enabled: false, Engine: { Address: rspamd.url } },
      Accounts: [
        {
          Id: 'bench',
          Imap: { Host: '127.0.0.1', Port: dovecot.port, Security: 'None', Username: USER, Password: `file:${join(runDir, 'pw')}` },
          Folders: [{ Alias: 'inbox' }],
        },
      ],
    });
    const daemon = startBenchDaemon({ config, output: 'stderr' });
    try {
      const started = performance.now();
      while (count(database, "SELECT count(*) AS n FROM messages WHERE state = 'stored' AND parse_version IS NOT NULL") < total) {
        if (!daemon.alive()) throw new Error(`mailcairnd ${daemon.state()}: ${daemon.logTail(40)}`);
        if (performance.now() - started > 30 * 60_000) throw new Error('the mirror did not complete within 30 min');
        await new Promise((r) => setTimeout(r, 100));
      }
      const admin = adminClient(adminPort);
      // One unmeasured pass each: rspamd compiles and caches on its first messages.
      log('warm-up: a direct pass and a dry run');
      await direct(rspamd, raws);
      await throughDaemon(admin);
      const ours: number[] = [];
      const peer: number[] = [];
      const order: string[] = [];
      for (let i = 0; i < repeat; i++) {
        const daemonFirst = i % 2 === 1;
        for (const side of daemonFirst ? ['daemon', 'direct'] : ['direct', 'daemon']) {
          log(`spam ${i + 1}/${repeat}, ${side}`);
          if (side === 'direct') peer.push(total / ((await direct(rspamd, raws)) / 1000));
          else {
            const run = await throughDaemon(admin);
            if (run.classified !== total) throw new Error(`the run classified ${run.classified} of ${total}`);
            ours.push(total / (run.ms / 1000));
          }
        }
        order.push(daemonFirst ? 'SD' : 'DS');
      }
      return {
        rows: [
          {
            part: 'spam run (dry), through the daemon',
            messages: total,
            order: order.join(' '),
            'messages/s (median)': round(median(ours)),
            'messages/s (each)': ours.map((x) => round(x)).join(' / '),
          },
          {
            part: `rspamd /checkv2 called directly, ${SPAM_CALLS_IN_FLIGHT} in flight`,
            messages: total,
            order: order.join(' '),
            'messages/s (median)': round(median(peer)),
            'messages/s (each)': peer.map((x) => round(x)).join(' / '),
          },
        ],
        ours: median(ours),
        peer: median(peer),
      };
    } finally {
      await daemon.stop();
    }
  } finally {
    await rspamd.close();
    await dovecot.stop();
  }
}

export const rulesSpam: Scenario = {
  name: 'rules-spam',
  description: 'the initial mirror with 20 rules and with none (CPU-s, alternating); a dry spam run against rspamd called directly (messages/s)',
  async run() {
    const repeat = Math.max(1, Number(process.env.BENCH_REPEAT ?? '3'));
    const messages = Number(process.env.BENCH_MESSAGES ?? '5000');
    const spamMessages = Number(process.env.BENCH_SPAM_MESSAGES ?? '500');
    if (!Number.isInteger(messages) || messages < 100) throw new Error('BENCH_MESSAGES must be a whole number ≥ 100');
    // 0 leaves the spam part out (the mirror's figures alone).
    if (!Number.isInteger(spamMessages) || (spamMessages !== 0 && spamMessages < 20)) throw new Error('BENCH_SPAM_MESSAGES must be 0 or a whole number ≥ 20');
    const log = (line: string): void => void process.stderr.write(`[rules-spam] ${line}\n`);
    const dir = mkdtempSync(join(tmpdir(), 'mailcairn-bench-rules-spam-'));
    const rows: Row[] = [];
    try {
      const dovecot = await startDovecot({ users: [{ user: USER, password: PASSWORD }] });
      let mirror: Mirrors;
      try {
        const stored = await writeMaildir(dovecot, USER, 'INBOX', generateMailbox({ seed: 42, count: messages, profile: 'bench', owner: OWNER }));
        mirror = await initialMirrors(dir, dovecot, stored, repeat, log);
      } finally {
        await dovecot.stop();
      }
      rows.push(...mirror.rows);
      const spam = spamMessages === 0 ? null : await spamRuns(dir, spamMessages, repeat, log);
      if (spam !== null) rows.push(...spam.rows);
      const cpu = (ms: number): string => `${(ms / 1000).toFixed(2)} CPU-s`;
      const rate = (n: number): string => `${n.toFixed(0)} messages/s`;
      rows.push(
        ratioGoal(`initial mirror CPU with 20 rules ≤ 1.05× without (${messages} messages)`, mirror.on, mirror.off, 1.05, cpu),
        boundGoal('initial mirror peak RSS with rules (no goal of its own; without beside it)', mirror.peakOn, Infinity, mebibytes, mirror.peakOff),
      );
      if (spam !== null) {
        // Throughput: higher is better, so the ratio is ours ÷ the engine's and the bound a floor.
        rows.push(
          goalRow({
            goal: `spam run throughput ≥ 0.8× rspamd called directly (${spamMessages} messages)`,
            measured: `${rate(spam.ours)} (${(spam.ours / spam.peer).toFixed(2)}×)`,
            peer: rate(spam.peer),
            met: Number.isFinite(spam.ours / spam.peer) ? spam.ours / spam.peer >= 0.8 : null,
          }),
        );
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    return rows;
  },
};
