/**
 * outbox: what the outbox's durability costs (issue 13). Sends per second
 * and enqueue-to-accepted latency for BENCH_OUTBOX_MESSAGES (default 1000)
 * messages to a local SMTP server, beside nodemailer sending the same
 * messages to the same server directly in the same run: the ceiling.
 *
 * Setup: a private Dovecot (the account needs an IMAP server; its mailbox
 * is empty), the harness SMTP server (test/harness/smtp-server.ts) in a
 * process of its own (peers/smtp-sink.ts), StartTls + AUTH PLAIN on both
 * sides (a submission server as an operator configures it), and the
 * compiled daemon (dist/bin/mailcairnd.js, Logging at its default `info`),
 * a fresh one on a fresh database for each outbox run, stopped before the
 * next side runs. smtp-server greets a connection 100 ms after it opens (a
 * fixed pause of the package, to catch clients that talk first), so a
 * session costs about 110 ms of waiting on loopback, much as a remote
 * submission server's round trips do: a sender that opens a connection per
 * message is bound by how many it keeps open at once, and the pooled
 * figure shows the ceiling without that cost.
 *
 * Parts:
 *  1. throughput: BENCH_OUTBOX_CLIENTS (default 8) agents, each its own MCP
 *     SDK client and session, share the messages and call `send_email` one
 *     after the other (each call answered before the next, as an agent
 *     does); the outbox delivers with `Outbox:Concurrency` at each value of
 *     BENCH_OUTBOX_CONCURRENCY (default: the configuration's default). Beside it,
 *     nodemailer's SMTP transport from the same number of workers in this
 *     process: unpooled (a connection per message, as the outbox opens one
 *     per send: like for like) and pooled (`pool: true`, one connection per
 *     worker, kept). Per message: the call's start to the moment the sink
 *     keeps it, just before its 250 (both sides the same way: the sink's
 *     clock and ours are `performance.timeOrigin + now()`). Sends/s: the
 *     messages over first call → last 250. BENCH_OUTBOX_ROUNDS (default 2)
 *     rounds, the order of the sides reversed in odd rounds. An untimed
 *     warm-up message per client or worker comes first.
 *  2. idle: BENCH_OUTBOX_IDLE_SAMPLES (default 100) single sends with
 *     nothing else under way (each waits for the previous one's 250 and
 *     50 ms more), the outbox's and nodemailer's (unpooled) in turn sample
 *     by sample: `send_email`'s own latency (enqueue: recorded and
 *     answered) and enqueue-to-accepted.
 *
 * CPU seconds and peak RSS (peers/process-stats.ts `interval`, /proc):
 * the sender is the daemon (outbox) or this process (nodemailer); the
 * clients are this process on the outbox side (the MCP clients); the sink
 * is its own process. Sends per CPU second count the sender and the
 * clients: the throughput a sender bound by CPU would reach. A peak is VmHWM after a reset at the start of the
 * run: the highest resident size during it, the baseline included.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import Libsql from 'libsql';
import nodemailer from 'nodemailer';
import { type Dovecot, startDovecot } from '../../test/harness/dovecot.ts';
import { reservePort } from '../../test/helpers/ports.ts';
import { interval, type ProcessStats } from '../peers/process-stats.ts';
import { now, type SinkProcess, startSinkProcess } from '../peers/smtp-sink.ts';
import { Outbox } from '../../config/schema/outbox.ts';
import type { Row, Scenario } from '../scenario.ts';
import { round } from '../stats.ts';
import { apiKeyEntry, benchMcpEndpoint, writeBenchConfig } from '../peers/daemon-config.ts';
import { startBenchDaemon } from '../peers/daemon.ts';

/** `Outbox:Concurrency` when the configuration does not set it. */
const DEFAULT_CONCURRENCY = Outbox.parse({}).Concurrency;
const USER = 'bench';
const PASSWORD = 'pw-bench';
const KEY = 'key-bench-outbox-0123456789abcdef';
const SMTP_LOGIN = { username: 'bench-smtp', password: 'bench-smtp-password' };
const FROM = 'bench.sender@example.org';
/** No run may take longer than this (a stuck side fails the scenario rather than hang it). */
const RUN_LIMIT_MS = 10 * 60_000;

const envInt = (name: string, fallback: number): number => {
  const v = Number(process.env[name]);
  return Number.isInteger(v) && v > 0 ? v : fallback;
};

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

function median(values: number[]): number {
  return percentile(values, 50);
}

/** A plain-text body of about 2 KB, the same for every message of both sides. */
const BODY = Array.from(
  { length: 24 },
  (_, i) => `Line ${i + 1} of the benchmark message: the quarterly figures, the schedule for next week, and the usual notes.`,
).join('\n');

const message = (to: string, n: number) => ({ to, subject: `Benchmark message ${n}`, text: BODY });

// ---------------------------------------------------------------- delivery tracking

/** Waits for the sink to keep the message addressed to each recipient; resolves with the moment it did. */
function tracker(sink: SinkProcess) {
  const waiting = new Map<string, (at: number) => void>();
  const arrived = new Map<string, number>();
  sink.onDelivery = (d) => {
    for (const r of d.recipients) {
      const w = waiting.get(r);
      if (w) {
        waiting.delete(r);
        w(d.at);
      } else arrived.set(r, d.at);
    }
  };
  return (recipient: string): Promise<number> => {
    const at = arrived.get(recipient);
    if (at !== undefined) {
      arrived.delete(recipient);
      return Promise.resolve(at);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${recipient} was not delivered within ${RUN_LIMIT_MS} ms`)), RUN_LIMIT_MS);
      waiting.set(recipient, (at) => {
        clearTimeout(timer);
        resolve(at);
      });
    });
  };
}

// ---------------------------------------------------------------- the daemon

type Daemon = { pid: number; mcp: Client[]; stop(): Promise<void> };

async function startDaemon(dovecot: Dovecot, sink: SinkProcess, concurrency: number, clients: number): Promise<Daemon> {
  const dir = mkdtempSync(join(tmpdir(), 'mailcairn-bench-outbox-'));
  const file = (name: string, content: string): string => {
    writeFileSync(join(dir, name), content, { mode: 0o600 });
    return `file:${join(dir, name)}`;
  };
  const port = await reservePort();
  const { config, database } = writeBenchConfig(dir, {
    McpEndpoint: benchMcpEndpoint(port, [apiKeyEntry('bench-agents', file('mcp.key', KEY))]),
    Logging: { Format: 'Json' },
    MailSynchronization: { Interval: '1.00:00:00' },
    Outbox: { Concurrency: concurrency },
    Accounts: [
      {
        Id: USER,
        Imap: { Host: '127.0.0.1', Port: dovecot.port, Security: 'None', Username: USER, Password: file('imap.pw', PASSWORD) },
        Smtp: {
          Host: '127.0.0.1',
          Port: sink.port,
          Security: 'StartTls',
          Username: SMTP_LOGIN.username,
          Password: file('smtp.pw', SMTP_LOGIN.password),
          TrustedCertificate: file('smtp.ca.pem', sink.certificatePem),
          From: FROM,
        },
        Folders: [{ Alias: 'inbox' }],
      },
    ],
  });
  const d = startBenchDaemon({ config, output: { logFile: join(dir, 'mailcairnd.log') } });
  const mcp: Client[] = [];
  const stop = async (): Promise<void> => {
    await Promise.allSettled(mcp.map((c) => c.close()));
    await d.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const until = Date.now() + 60_000;
    for (let i = 0; i < clients; i++) {
      for (;;) {
        const client = new Client({ name: `bench-outbox-agent-${i}`, version: '1.0.0' });
        try {
          await client.connect(
            new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`), { requestInit: { headers: { authorization: `Bearer ${KEY}` } } }),
          );
          mcp.push(client);
          break;
        } catch (err) {
          if (Date.now() > until || d.child.exitCode !== null) throw err;
          await sleep(200);
        }
      }
    }
    // The first synchronization run (an empty mailbox) ends before anything is measured.
    while (Date.now() < until) {
      try {
        const db = new Libsql(database, { readonly: true, timeout: 2_000 });
        const ended = (db.prepare('SELECT count(*) AS n FROM sync_runs WHERE ended_at IS NOT NULL').get() as { n: number }).n;
        db.close();
        if (ended > 0) break;
      } catch {
        // not created yet
      }
      await sleep(100);
    }
  } catch (err) {
    process.stderr.write(`mailcairnd's last lines:\n${d.logTail(20)}\n`);
    await stop();
    throw err;
  }
  return { pid: d.pid, mcp, stop };
}

async function sendEmail(client: Client, to: string, n: number, key: string): Promise<void> {
  const m = message(to, n);
  const result = (await client.callTool({
    name: 'send_email',
    arguments: { account: USER, to: [m.to], subject: m.subject, plainTextBody: m.text, idempotencyKey: key },
  })) as CallToolResult;
  if (result.isError) throw new Error(`send_email refused: ${JSON.stringify(result.content)}`);
}

// ---------------------------------------------------------------- one measured run

type Run = {
  side: string;
  /** Messages measured (sends/s is these over wallMs). */
  count: number;
  wallMs: number;
  e2a: number[];
  /** The call's own latency (`send_email` answered); empty for nodemailer, whose call is the whole SMTP session. */
  enqueue: number[];
  sender: ProcessStats;
  clients: ProcessStats | null;
  sink: ProcessStats;
  peakReset: boolean;
};

/** `workers` senders share `total` messages; each sends its next one when the last is answered. */
async function measured(
  side: string,
  sink: SinkProcess,
  senderPid: number,
  total: number,
  workers: number,
  send: (worker: number, recipient: string, n: number) => Promise<void>,
): Promise<Run> {
  const delivered = tracker(sink);
  const label = `${side.replace(/\W+/g, '-')}-${Math.random().toString(36).slice(2, 8)}`;
  // Warm-up: one message per worker, untimed.
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      const to = `warm-${label}-${w}@example.net`;
      await send(w, to, -1 - w);
      await delivered(to);
    }),
  );
  const e2a: number[] = [];
  const enqueue: number[] = [];
  const ownPid = process.pid;
  const senderStats = interval(senderPid);
  const clientStats = senderPid === ownPid ? null : interval(ownPid);
  const sinkStats = interval(sink.pid);
  const started = now();
  let last = started;
  let next = 0;
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      const mine: Promise<void>[] = [];
      while (next < total) {
        const n = next++;
        const to = `m${n}-${label}@example.net`;
        const start = now();
        const arrival = delivered(to).then((at) => {
          e2a.push(at - start);
          last = Math.max(last, at);
        });
        mine.push(arrival);
        await send(w, to, n);
        if (senderPid !== ownPid) enqueue.push(now() - start);
      }
      await Promise.all(mine);
    }),
  );
  return {
    side,
    count: total,
    wallMs: last - started,
    e2a,
    enqueue,
    sender: senderStats.end(),
    clients: clientStats?.end() ?? null,
    sink: sinkStats.end(),
    peakReset: senderStats.peakReset,
  };
}

function transportOf(sink: SinkProcess, pooled: number | null) {
  return nodemailer.createTransport({
    host: '127.0.0.1',
    port: sink.port,
    secure: false,
    requireTLS: true,
    tls: { ca: sink.certificatePem },
    auth: { user: SMTP_LOGIN.username, pass: SMTP_LOGIN.password },
    ...(pooled === null ? {} : { pool: true, maxConnections: pooled, maxMessages: Number.POSITIVE_INFINITY }),
  });
}

// ---------------------------------------------------------------- rows

const s = (ms: number): number => round(ms / 1000, 2);
const ms = (v: number): number => round(v, 1);

function runRow(part: string, roundNo: number | string, order: string, r: Run, direct: Run | null): Row {
  const perSecond = (r.count / r.wallMs) * 1000;
  const sendingCpu = r.sender.cpuMs + (r.clients?.cpuMs ?? 0);
  return {
    part,
    round: roundNo,
    order,
    side: r.side,
    messages: r.count,
    'wall s': s(r.wallMs),
    'sends/s': Math.round(perSecond),
    'e2a p50 ms': ms(percentile(r.e2a, 50)),
    'e2a p99 ms': ms(percentile(r.e2a, 99)),
    'call p50 ms': r.enqueue.length > 0 ? ms(percentile(r.enqueue, 50)) : null,
    'call p99 ms': r.enqueue.length > 0 ? ms(percentile(r.enqueue, 99)) : null,
    'sender CPU s': s(r.sender.cpuMs),
    'sends per CPU s': Math.round(r.count / (sendingCpu / 1000)),
    'clients CPU s': r.clients ? s(r.clients.cpuMs) : null,
    'sink CPU s': s(r.sink.cpuMs),
    'sender peak MiB': round(r.sender.peakRssMiB),
    'throughput vs direct': direct ? round(perSecond / ((direct.count / direct.wallMs) * 1000), 2) : null,
    'CPU vs direct': direct ? round(sendingCpu / direct.sender.cpuMs, 2) : null,
  };
}

function medianRun(runs: Run[]): Run {
  const pick = (f: (r: Run) => number) => median(runs.map(f));
  return {
    side: runs[0]!.side,
    count: runs[0]!.count,
    wallMs: pick((r) => r.wallMs),
    // Latencies: the samples of every round together.
    e2a: runs.flatMap((r) => r.e2a),
    enqueue: runs.flatMap((r) => r.enqueue),
    sender: { cpuMs: pick((r) => r.sender.cpuMs), peakRssMiB: pick((r) => r.sender.peakRssMiB) },
    clients: runs[0]!.clients ? { cpuMs: pick((r) => r.clients!.cpuMs), peakRssMiB: pick((r) => r.clients!.peakRssMiB) } : null,
    sink: { cpuMs: pick((r) => r.sink.cpuMs), peakRssMiB: pick((r) => r.sink.peakRssMiB) },
    peakReset: runs.every((r) => r.peakReset),
  };
}

// ---------------------------------------------------------------- the scenario

export const outbox: Scenario = {
  name: 'outbox',
  description:
    'send_email through the outbox (MCP, recorded, delivered over SMTP) vs nodemailer straight to the same SMTP server: sends/s, enqueue-to-accepted, CPU, peak RSS',
  async run() {
    const total = envInt('BENCH_OUTBOX_MESSAGES', 1000);
    const clients = envInt('BENCH_OUTBOX_CLIENTS', 8);
    const rounds = envInt('BENCH_OUTBOX_ROUNDS', 2);
    const idleSamples = envInt('BENCH_OUTBOX_IDLE_SAMPLES', 100);
    const concurrencies = (process.env.BENCH_OUTBOX_CONCURRENCY ?? String(DEFAULT_CONCURRENCY))
      .split(',')
      .map(Number)
      .filter((n) => Number.isInteger(n) && n > 0);
    const log = (line: string): void => void process.stderr.write(`[outbox] ${line}\n`);
    const dovecot = await startDovecot({ users: [{ user: USER, password: PASSWORD }] });
    const sink = await startSinkProcess({ security: 'StartTls', auth: SMTP_LOGIN });
    const rows: Row[] = [];
    try {
      const part = `${total} sends, ${clients} clients`;
      const runs = new Map<string, Run[]>();
      const orders: string[] = [];
      for (let r = 0; r < rounds; r++) {
        const sides: Array<{ name: string; go(): Promise<Run> }> = [
          ...concurrencies.map((c) => ({
            name: `outbox (Concurrency ${c})`,
            async go(): Promise<Run> {
              const daemon = await startDaemon(dovecot, sink, c, clients);
              try {
                let key = 0;
                return await measured(`outbox (Concurrency ${c})`, sink, daemon.pid, total, clients, (w, to, n) =>
                  sendEmail(daemon.mcp[w]!, to, n, `bench-${to}-${key++}`),
                );
              } finally {
                await daemon.stop();
              }
            },
          })),
          {
            name: 'nodemailer, a connection per message',
            async go(): Promise<Run> {
              const transports = Array.from({ length: clients }, () => transportOf(sink, null));
              try {
                return await measured('nodemailer, a connection per message', sink, process.pid, total, clients, async (w, to, n) => {
                  await transports[w]!.sendMail({ from: FROM, ...message(to, n) });
                });
              } finally {
                for (const t of transports) t.close();
              }
            },
          },
          {
            name: 'nodemailer pooled',
            async go(): Promise<Run> {
              const transport = transportOf(sink, clients);
              try {
                return await measured('nodemailer pooled', sink, process.pid, total, clients, async (_w, to, n) => {
                  await transport.sendMail({ from: FROM, ...message(to, n) });
                });
              } finally {
                transport.close();
              }
            },
          },
        ];
        const ordered = r % 2 === 0 ? sides : [...sides].reverse();
        orders.push(ordered.map((x) => (x.name.startsWith('outbox') ? 'O' : x.name.includes('pooled') ? 'P' : 'D')).join(''));
        const thisRound = new Map<string, Run>();
        for (const side of ordered) {
          log(`round ${r + 1}/${rounds}: ${side.name}`);
          const run = await side.go();
          thisRound.set(side.name, run);
          runs.set(side.name, [...(runs.get(side.name) ?? []), run]);
        }
        const direct = thisRound.get('nodemailer, a connection per message')!;
        for (const side of sides)
          rows.push(runRow(part, r + 1, orders[r]!, thisRound.get(side.name)!, side.name.startsWith('outbox') || side.name.includes('pooled') ? direct : null));
      }
      const direct = medianRun(runs.get('nodemailer, a connection per message')!);
      for (const [name, list] of runs) {
        const m = medianRun(list);
        rows.push(runRow(`${part} (median of ${rounds})`, 'all', orders.join(' '), m, name === 'nodemailer, a connection per message' ? null : direct));
      }

      // 2. Idle: one send at a time, the outbox's and nodemailer's in turn.
      log(`idle: ${idleSamples} samples per side`);
      const daemon = await startDaemon(dovecot, sink, DEFAULT_CONCURRENCY, 1);
      const transport = transportOf(sink, null);
      try {
        const delivered = tracker(sink);
        const enqueue: number[] = [];
        const outboxE2a: number[] = [];
        const directE2a: number[] = [];
        for (let i = -2; i < idleSamples; i++) {
          for (const side of i % 2 === 0 ? (['outbox', 'direct'] as const) : (['direct', 'outbox'] as const)) {
            const to = `idle-${side}-${i}@example.net`;
            const arrival = delivered(to);
            const start = now();
            if (side === 'outbox') {
              await sendEmail(daemon.mcp[0]!, to, i, `idle-${i}`);
              if (i >= 0) enqueue.push(now() - start);
            } else await transport.sendMail({ from: FROM, ...message(to, i) });
            const at = await arrival;
            // i < 0: warm-up.
            if (i >= 0) (side === 'outbox' ? outboxE2a : directE2a).push(at - start);
            await sleep(50);
          }
        }
        const idleRow = (side: string, e2a: number[], calls: number[] | null): Row => ({
          part: 'idle: one send at a time',
          round: 'all',
          order: 'OD DO …',
          side,
          messages: e2a.length,
          'e2a p50 ms': ms(percentile(e2a, 50)),
          'e2a p99 ms': ms(percentile(e2a, 99)),
          'call p50 ms': calls ? ms(percentile(calls, 50)) : null,
          'call p99 ms': calls ? ms(percentile(calls, 99)) : null,
          'e2a p50 vs direct': round(percentile(e2a, 50) / percentile(directE2a, 50), 2),
        });
        rows.push(idleRow(`outbox (Concurrency ${DEFAULT_CONCURRENCY})`, outboxE2a, enqueue));
        rows.push(idleRow('nodemailer, a connection per message', directE2a, null));
      } finally {
        transport.close();
        await daemon.stop();
      }
    } finally {
      await sink.stop();
      await dovecot.stop();
    }
    return rows;
  },
};
