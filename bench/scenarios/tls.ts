/**
 * tls: what terminating TLS in process (docs/security.md "TLS in process")
 * costs a cheap MCP call, against the same call in clear text, in one run.
 *
 * Setup: two compiled daemons (dist/bin/mailcairnd.js), identical but for
 * `McpEndpoint:Transport`: `Http` (clear text on loopback) and `HttpsOnly`
 * (one profile on loopback, `HttpProtocols` Http1 and Http2, TLS 1.2 floor,
 * an EC P-256 leaf issued at run time by an openssl CA,
 * test/harness/test-ca.ts). One `HttpsOnly` daemon has no clear-text route
 * listener (`HttpAndHttps` turns clear text into a redirect), hence two. Both:
 * one API key entry, no accounts, MailSynchronization off, log level warn,
 * the rate limiter in the path but never refusing (bench/peers/daemon-config.ts).
 *
 * Measured: `tools/list` as a JSON-RPC POST with the API key (a 16 KiB
 * answer), in closed loops (each of N workers sends its next request when
 * its last has been answered):
 *  - `http1` HTTP/1.1 keep-alive: one connection, one request at a time (undici);
 *  - `https1` HTTPS/1.1 keep-alive: the same over TLS;
 *  - `h2` HTTPS/2 ×16 streams: one node:http2 session, 16 requests in
 *    flight. The client's receive windows (stream and connection) are
 *    BENCH_TLS_H2_WINDOW (1 MiB; 65535 is the protocol's default): the
 *    default connection window holds four 16 KiB answers, so the other
 *    twelve would wait on this client's WINDOW_UPDATEs, a property of the
 *    client rather than of the server;
 *  - `https1-many` HTTPS/1.1 ×16 connections: an undici Pool of 16
 *    keep-alive connections, 16 requests in flight (the h2 comparison);
 *  - `new-full` a new TLS connection per request (`reset`), no session
 *    cache on the client: a full handshake each time;
 *  - `new-resumed` the same, the client offering the previous connection's
 *    session ticket (undici's session cache): a resumed handshake.
 * Each case runs BENCH_TLS_SECONDS (3) per round, BENCH_TLS_ROUNDS (2)
 * rounds, the case order reversed every other round, so the two sides of
 * each goal run next to each other and drift in the machine's load hits
 * both ends alike. Before the first round each daemon serves
 * BENCH_TLS_WARMUP_REQUESTS (2000) keep-alive requests (the TLS daemon
 * serves five cases to clear text's one: its request path would otherwise
 * be warmer) and every case runs BENCH_TLS_WARMUP_SECONDS (1) untimed.
 * BENCH_TLS_CONCURRENCY (16) sets the streams and connections of the
 * concurrent rows; BENCH_TLS_CASES (comma-separated keys) runs some cases
 * only (a goal whose sides are not both run reads n/a).
 *
 * Figures, as every scenario gives them (docs/benchmarks.md "Order"): per
 * round, then the median over the rounds; latency p50/p99 over every timed
 * request of the case. Daemon CPU per request: utime + stime of the whole
 * daemon process (every thread) from /proc/<pid>/stat over the case's
 * interval (peers/process-stats.ts `interval`) ÷ requests answered; the
 * per-round values are printed beside the median. Peak RSS: VmHWM after
 * resetting it at the start of each interval, the highest of the rounds.
 * Client CPU per request is this process's `process.cpuUsage()` over the
 * same interval: the client shares the machine's cores with the daemon,
 * so it bounds the throughput rows. A case whose answers were not all 200
 * says so (its figures would time a refusal).
 *
 * Goals (issue 28): HTTPS/1.1 keep-alive CPU per request ≤ 1.15× clear
 * text's; HTTP/2 with 16 streams on one connection at least as many
 * requests per second as HTTP/1.1 on 16 connections.
 *
 * BENCH_CPU_PROF=<dir>: the daemons run under `node --cpu-prof` and write
 * a `.cpuprofile` per thread into `tls-clear-text/` and `tls-https/` there.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { type ClientHttp2Session, connect as connectHttp2 } from 'node:http2';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { connect as connectTls } from 'node:tls';
import { Pool } from 'undici';
import { trackDir } from '../../test/harness/processes.ts';
import { chainOf, createCa, issue } from '../../test/harness/test-ca.ts';
import { reservePort } from '../../test/helpers/ports.ts';
import { goalRow } from '../goals.ts';
import { apiKeyEntry, benchMcpEndpoint, writeBenchConfig } from '../peers/daemon-config.ts';
import { cpuProfileArgs, startBenchDaemon } from '../peers/daemon.ts';
import { interval } from '../peers/process-stats.ts';
import type { Row, Scenario } from '../scenario.ts';
import { formatBytes, median, round, summarize } from '../stats.ts';
import { exitWhenInterrupted } from '../interrupted.ts';

const DOMAIN = 'mail.bench.test';
const START_LIMIT_MS = 60_000;
const BODY = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
const KEEP_ALIVE_GOAL = 1.15;
/** HTTP/2's initial flow-control window (RFC 9113 §6.9.2). */
const DEFAULT_H2_WINDOW = 65_535;

type Transport = 'clear text' | 'TLS';
type Daemon = { transport: Transport; origin: string; pid: number; stop(): Promise<void> };

/** What the client needs to reach the TLS daemon: the root it trusts and the name it sends. */
type Trust = { ca: string; servername: string };

/** One case's client: `call` sends one request and resolves with its status; `close` ends its connections. */
type Client = { call(): Promise<number>; close(): Promise<void> };

type Case = {
  /** Short name for BENCH_TLS_CASES. */
  key: string;
  name: string;
  daemon: Transport;
  connections: string;
  inFlight: number;
  open(): Client;
};

/** One round of a case: what it served and what that cost. */
type Round = { requests: number; wallMs: number; daemonCpuMs: number; clientCpuMs: number };

/** A case's figures over every round: latency samples pooled, the rest per round. */
type Tally = {
  samples: number[];
  rounds: Round[];
  peakRssMiB: number;
  peakReset: boolean;
  statuses: Map<number, number>;
};

function headers(apiKey: string): Record<string, string> {
  return { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${apiKey}` };
}

/** HTTP/1.1 through an undici Pool; `reset` closes the connection after each request (a new one per request). */
function undiciClient(origin: string, o: { connections: number; trust?: Trust; reset?: boolean; sessionCache?: boolean; apiKey: string }): Client {
  const pool = new Pool(origin, {
    connections: o.connections,
    pipelining: 1,
    keepAliveTimeout: 60_000,
    ...(o.trust ? { connect: { ca: o.trust.ca, servername: o.trust.servername, ...(o.sessionCache === false ? { maxCachedSessions: 0 } : {}) } } : {}),
  });
  const h = headers(o.apiKey);
  return {
    async call() {
      const res = await pool.request({ method: 'POST', path: '/mcp', headers: h, body: BODY, ...(o.reset ? { reset: true } : {}) });
      await res.body.text();
      return res.statusCode;
    },
    close: () => pool.close(),
  };
}

/** The size of one answer's body (untimed, on a connection of its own). */
async function undiciBody(origin: string, trust: Trust, apiKey: string): Promise<number> {
  const pool = new Pool(origin, { connections: 1, ...(origin.startsWith('https:') ? { connect: trust } : {}) });
  try {
    const res = await pool.request({ method: 'POST', path: '/mcp', headers: headers(apiKey), body: BODY });
    return (await res.body.arrayBuffer()).byteLength;
  } finally {
    await pool.close();
  }
}

/** HTTP/2 on one node:http2 session: every call is a stream of it. */
function http2Client(origin: string, trust: Trust, apiKey: string, window: number): Client {
  const session: ClientHttp2Session = connectHttp2(origin, { ca: trust.ca, servername: trust.servername, settings: { initialWindowSize: window } });
  // The connection's window too: its protocol default (64 KiB) is less than 16 answers in flight.
  if (window > DEFAULT_H2_WINDOW) session.once('connect', () => session.setLocalWindowSize(window));
  session.on('error', () => {}); // a broken session fails the calls in flight, which report it
  const h = headers(apiKey);
  return {
    call() {
      return new Promise<number>((done, fail) => {
        const stream = session.request({ ':method': 'POST', ':path': '/mcp', ...h });
        let status = 0;
        stream.once('response', (response) => {
          status = Number(response[':status']);
        });
        stream.once('error', fail);
        stream.once('end', () => done(status));
        stream.resume();
        stream.end(BODY);
      });
    },
    close: () => new Promise<void>((done) => session.close(() => done())),
  };
}

async function startDaemon(dir: string, transport: Transport, apiKeyFile: string, tls: { chain: string; key: string; trust: Trust } | null): Promise<Daemon> {
  mkdirSync(dir, { recursive: true });
  const port = await reservePort();
  const endpoint = benchMcpEndpoint(port, [apiKeyEntry('agent', `file:${apiKeyFile}`)]);
  const https =
    tls === null
      ? { Transport: 'Http' }
      : {
          Transport: 'HttpsOnly',
          Https: {
            Endpoints: [
              {
                Name: 'bench',
                Domain: DOMAIN,
                BindAddress: '127.0.0.1',
                Port: port,
                ServerCertificate: {
                  CertificateChain: { Name: 'bench-chain', SecretReference: `file:${tls.chain}` },
                  PrivateKey: { Name: 'bench-key', SecretReference: `file:${tls.key}` },
                },
              },
            ],
          },
        };
  const { config } = writeBenchConfig(dir, {
    McpEndpoint: { ...endpoint, ...https },
    Logging: { Level: 'warn', Format: 'Json' },
    MailSynchronization: { Enabled: false },
  });
  const name = transport === 'TLS' ? 'https' : 'clear-text';
  const d = startBenchDaemon({ config, output: 'stderr', nodeArgs: cpuProfileArgs(`tls-${name}`) });
  const origin = `${tls === null ? 'http' : 'https'}://127.0.0.1:${port}`;
  await ready(d, origin, transport, tls?.trust);
  return { transport, origin, pid: d.pid, stop: d.stop };
}

/** Waits until the listener answers `/readyz` 200 (the MCP listener serves it; the health listener is off). */
async function ready(d: ReturnType<typeof startBenchDaemon>, origin: string, transport: Transport, trust: Trust | undefined): Promise<void> {
  const started = performance.now();
  for (;;) {
    if (!d.alive()) throw new Error(`mailcairnd (${transport}) ${d.state()}: ${d.logTail(40)}`);
    if (performance.now() - started > START_LIMIT_MS) {
      await d.stop();
      throw new Error(`mailcairnd (${transport}) not ready within ${START_LIMIT_MS / 1000} s`);
    }
    const pool = new Pool(origin, { connections: 1, ...(trust ? { connect: trust } : {}) });
    try {
      const res = await pool.request({ method: 'GET', path: '/readyz' });
      await res.body.text();
      if (res.statusCode === 200) return;
    } catch {
      // not listening yet
    } finally {
      await pool.close().catch(() => undefined);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Runs `client.call` in `inFlight` closed loops for `ms`; timed samples go to `tally`. */
async function drive(client: Client, inFlight: number, ms: number, tally: Tally | null): Promise<void> {
  const deadline = performance.now() + ms;
  const worker = async (): Promise<void> => {
    while (performance.now() < deadline) {
      const start = performance.now();
      const status = await client.call();
      if (tally === null) continue;
      tally.samples.push(performance.now() - start);
      tally.statuses.set(status, (tally.statuses.get(status) ?? 0) + 1);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
}

/** One timed run of a case against its daemon: the daemon's CPU and peak, ours, the wall. */
async function measure(kase: Case, daemon: Daemon, ms: number, tally: Tally): Promise<void> {
  const client = kase.open();
  try {
    // One untimed call: a keep-alive case starts on an open connection (or session).
    await client.call();
    const count = tally.samples.length;
    const span = interval(daemon.pid);
    const ours = process.cpuUsage();
    const started = performance.now();
    await drive(client, kase.inFlight, ms, tally);
    const wallMs = performance.now() - started;
    const used = process.cpuUsage(ours);
    const stats = span.end();
    tally.rounds.push({ requests: tally.samples.length - count, wallMs, daemonCpuMs: stats.cpuMs, clientCpuMs: (used.user + used.system) / 1000 });
    tally.peakRssMiB = Math.max(tally.peakRssMiB, stats.peakRssMiB);
    tally.peakReset &&= span.peakReset;
  } finally {
    await client.close();
  }
}

/** The negotiated version and cipher, and whether a second connection offering the first's session resumes it. */
async function handshakeFacts(port: number, trust: Trust): Promise<string> {
  type Handshake = { version: string; cipher: string; resumed: boolean; session: Buffer | undefined };
  const open = (session?: Buffer): Promise<Handshake> =>
    new Promise((done, fail) => {
      const seen: Handshake = { version: '', cipher: '', resumed: false, session: undefined };
      const socket = connectTls({ host: '127.0.0.1', port, ...trust, ALPNProtocols: ['http/1.1'], ...(session ? { session } : {}) });
      socket.on('session', (s: Buffer) => {
        seen.session = s;
      });
      socket.once('error', fail);
      // TLS 1.3 sends its tickets after the handshake: a request makes them arrive before the answer.
      socket.once('secureConnect', () => {
        const cipher = socket.getCipher();
        Object.assign(seen, { version: socket.getProtocol() ?? '?', cipher: cipher.standardName ?? cipher.name, resumed: socket.isSessionReused() });
        socket.end(`GET /readyz HTTP/1.1\r\nHost: ${DOMAIN}\r\nConnection: close\r\n\r\n`);
      });
      socket.resume();
      socket.once('close', () => done(seen));
    });
  const first = await open();
  const second = await open(first.session);
  return `${first.version} ${first.cipher}; session resumption ${second.resumed ? 'works' : 'refused'}`;
}

function answers(statuses: Map<number, number>): string {
  return [...statuses]
    .sort(([a], [b]) => a - b)
    .map(([status, n]) => `${status}×${n}`)
    .join(' ');
}

const micros = (us: number): string => `${Math.round(us)} µs`;

export const tls: Scenario = {
  name: 'tls',
  description: 'tools/list over clear text, HTTPS/1.1, HTTPS/2 and a new TLS connection per request: req/s, latency, daemon CPU per request, same run',
  async run() {
    const seconds = Math.max(0.5, Number(process.env.BENCH_TLS_SECONDS ?? '3'));
    const rounds = Math.max(1, Math.floor(Number(process.env.BENCH_TLS_ROUNDS ?? '2')));
    const warmupSeconds = Math.max(0, Number(process.env.BENCH_TLS_WARMUP_SECONDS ?? '1'));
    const warmupRequests = Math.max(0, Math.floor(Number(process.env.BENCH_TLS_WARMUP_REQUESTS ?? '2000')));
    const concurrency = Math.max(1, Math.floor(Number(process.env.BENCH_TLS_CONCURRENCY ?? '16')));
    const h2Window = Math.max(DEFAULT_H2_WINDOW, Math.floor(Number(process.env.BENCH_TLS_H2_WINDOW ?? String(2 ** 20))));
    const only = (process.env.BENCH_TLS_CASES ?? '').split(',').filter((k) => k !== '');
    const dir = mkdtempSync(join(tmpdir(), 'mailcairn-bench-tls-'));
    trackDir(dir);
    const log = (line: string): void => void process.stderr.write(`[tls] ${line}\n`);
    const letGo = exitWhenInterrupted('tls');

    const daemons: Daemon[] = [];
    const cases: Case[] = [];
    const tallies = new Map<string, Tally>();
    let facts = '';
    let answerBytes = 0;
    let loadAtStart = Number.NaN;
    let loadAtEnd = Number.NaN;
    try {
      const apiKey = `mc_${randomBytes(24).toString('base64url')}`;
      const apiKeyFile = join(dir, 'agent.key');
      writeFileSync(apiKeyFile, apiKey);
      const ca = createCa(join(dir, 'pki'), 'Bench Root');
      const leaf = issue(ca, { name: 'mail', dns: [DOMAIN], eku: ['serverAuth'], keyUsage: ['digitalSignature'] });
      const chainFile = join(dir, 'mail-chain.pem');
      writeFileSync(chainFile, chainOf(leaf, ca));
      const trust: Trust = { ca: ca.cert, servername: DOMAIN };

      log('starting the clear-text and the TLS daemon');
      const clear = await startDaemon(join(dir, 'clear-text'), 'clear text', apiKeyFile, null);
      daemons.push(clear);
      const secure = await startDaemon(join(dir, 'https'), 'TLS', apiKeyFile, { chain: chainFile, key: leaf.keyPath, trust });
      daemons.push(secure);
      facts = await handshakeFacts(Number(new URL(secure.origin).port), trust);

      const all: Case[] = [
        {
          key: 'http1',
          name: 'HTTP/1.1 keep-alive',
          daemon: 'clear text',
          connections: '1',
          inFlight: 1,
          open: () => undiciClient(clear.origin, { connections: 1, apiKey }),
        },
        {
          key: 'https1',
          name: 'HTTPS/1.1 keep-alive',
          daemon: 'TLS',
          connections: '1',
          inFlight: 1,
          open: () => undiciClient(secure.origin, { connections: 1, trust, apiKey }),
        },
        {
          key: 'h2',
          name: `HTTPS/2 ×${concurrency} streams`,
          daemon: 'TLS',
          connections: '1',
          inFlight: concurrency,
          open: () => http2Client(secure.origin, trust, apiKey, h2Window),
        },
        {
          key: 'https1-many',
          name: `HTTPS/1.1 ×${concurrency} connections`,
          daemon: 'TLS',
          connections: String(concurrency),
          inFlight: concurrency,
          open: () => undiciClient(secure.origin, { connections: concurrency, trust, apiKey }),
        },
        {
          key: 'new-full',
          name: 'HTTPS new connection (full handshake)',
          daemon: 'TLS',
          connections: '1 per request',
          inFlight: 1,
          open: () => undiciClient(secure.origin, { connections: 1, trust, reset: true, sessionCache: false, apiKey }),
        },
        {
          key: 'new-resumed',
          name: 'HTTPS new connection (resumed)',
          daemon: 'TLS',
          connections: '1 per request',
          inFlight: 1,
          open: () => undiciClient(secure.origin, { connections: 1, trust, reset: true, apiKey }),
        },
      ];
      const unknown = only.filter((k) => !all.some((c) => c.key === k));
      if (unknown.length > 0) throw new Error(`BENCH_TLS_CASES: unknown ${unknown.join(', ')}; known: ${all.map((c) => c.key).join(', ')}`);
      cases.push(...all.filter((c) => only.length === 0 || only.includes(c.key)));
      const daemonOf = (kase: Case): Daemon => (kase.daemon === 'TLS' ? secure : clear);

      // The request path (authentication, the MCP exchange) warmed alike in both daemons: the TLS daemon serves five cases to clear text's one.
      log(`warm-up: ${warmupRequests} keep-alive requests per daemon, then ${warmupSeconds} s per case`);
      answerBytes = await undiciBody(clear.origin, trust, apiKey);
      for (const kase of all.filter((c) => c.key === 'http1' || c.key === 'https1')) {
        const client = kase.open();
        for (let i = 0; i < warmupRequests; i++) await client.call();
        await client.close();
      }
      if (warmupSeconds > 0) {
        for (const kase of cases) {
          const client = kase.open();
          await drive(client, kase.inFlight, warmupSeconds * 1000, null);
          await client.close();
        }
      }
      globalThis.gc?.();
      for (const kase of cases) {
        tallies.set(kase.name, { samples: [], rounds: [], peakRssMiB: 0, peakReset: true, statuses: new Map() });
      }
      loadAtStart = loadavg()[0]!;
      for (let r = 0; r < rounds; r++) {
        const order = r % 2 === 0 ? cases : [...cases].reverse();
        log(`round ${r + 1} of ${rounds}: ${seconds} s per case, ${r % 2 === 0 ? 'clear text first' : 'clear text last'}`);
        for (const kase of order) await measure(kase, daemonOf(kase), seconds * 1000, tallies.get(kase.name)!);
      }
      loadAtEnd = loadavg()[0]!;
    } finally {
      for (const daemon of daemons) await daemon.stop();
      letGo();
      if (process.env.BENCH_CPU_PROF) log(`CPU profiles in ${resolve(process.env.BENCH_CPU_PROF)}`);
      rmSync(dir, { recursive: true, force: true });
    }

    const figures = cases.map((kase) => {
      const t = tallies.get(kase.name)!;
      const latency = summarize(t.samples, 1);
      const perRound = {
        perSecond: t.rounds.map((r) => (r.requests * 1000) / r.wallMs),
        cpuUs: t.rounds.map((r) => (r.daemonCpuMs * 1000) / r.requests),
        clientCpuUs: t.rounds.map((r) => (r.clientCpuMs * 1000) / r.requests),
      };
      return {
        kase,
        t,
        latency,
        perRound,
        served: t.statuses.size === 1 && t.statuses.has(200),
        perSecond: median(perRound.perSecond),
        cpuUs: median(perRound.cpuUs),
      };
    });
    const rows: Row[] = figures.map(({ kase, t, latency, perRound, served, perSecond, cpuUs }, index) => ({
      case: kase.name,
      daemon: kase.daemon,
      connections: kase.connections,
      'in flight': kase.inFlight,
      requests: latency.count,
      'req/s': Math.round(perSecond),
      'p50 µs': latency.p50Us,
      'p99 µs': latency.p99Us,
      'daemon CPU µs/req': Math.round(cpuUs),
      'per round': perRound.cpuUs.map((us) => Math.round(us)).join(' '),
      'client CPU µs/req': Math.round(median(perRound.clientCpuUs)),
      'peak RSS MiB': `${round(t.peakRssMiB, 1)}${t.peakReset ? '' : ' (lifetime)'}`,
      answers: served ? answers(t.statuses) : `${answers(t.statuses)}: not served, figures time a refusal`,
      note:
        index === 0
          ? `${rounds} rounds × ${seconds} s, order reversed every other round; ${availableParallelism()} cores; load ${round(loadAtStart, 1)} → ${round(loadAtEnd, 1)}`
          : index === 1
            ? `${facts}; EC P-256 leaf; answer ${formatBytes(answerBytes)}`
            : '',
    }));

    // A case left out (BENCH_TLS_CASES) or not served leaves its goal unchecked (n/a).
    const of = (key: string): (typeof figures)[number] | undefined => figures.find((f) => f.kase.key === key && f.served);
    const [plain, keepAlive, h2, h1Many] = ['http1', 'https1', 'h2', 'https1-many'].map(of);
    // Each round runs the two sides of a goal next to each other (forward or reversed): their per-round ratios show the spread.
    const spread = (ours: readonly number[], peer: readonly number[], holds: (ratio: number) => boolean): string => {
      const ratios = ours.map((x, i) => x / peer[i]!).filter(Number.isFinite);
      if (ratios.length < 2) return '';
      return `; rounds ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}×, ${ratios.filter(holds).length} of ${ratios.length} met`;
    };
    const keepAliveRatio = (keepAlive?.cpuUs ?? Number.NaN) / (plain?.cpuUs ?? Number.NaN);
    const keepAliveGoal = goalRow({
      goal: `HTTPS/1.1 keep-alive daemon CPU per request ≤ ${KEEP_ALIVE_GOAL}× clear text's`,
      measured:
        keepAlive && plain
          ? `${micros(keepAlive.cpuUs)} (${keepAliveRatio.toFixed(2)}×${spread(keepAlive.perRound.cpuUs, plain.perRound.cpuUs, (r) => r <= KEEP_ALIVE_GOAL)})`
          : keepAlive
            ? micros(keepAlive.cpuUs)
            : 'n/a',
      peer: plain ? micros(plain.cpuUs) : 'n/a',
      met: Number.isFinite(keepAliveRatio) ? keepAliveRatio <= KEEP_ALIVE_GOAL : null,
    });
    const h2Ratio = (h2?.perSecond ?? Number.NaN) / (h1Many?.perSecond ?? Number.NaN);
    const h2Goal = goalRow({
      goal: `HTTP/2, ${concurrency} streams on one connection, ≥ 1.0× the req/s of HTTP/1.1 on ${concurrency} connections`,
      measured:
        h2 && h1Many
          ? `${Math.round(h2.perSecond)} req/s (${h2Ratio.toFixed(2)}×${spread(h2.perRound.perSecond, h1Many.perRound.perSecond, (r) => r >= 1)})`
          : h2
            ? `${Math.round(h2.perSecond)} req/s`
            : 'n/a',
      peer: h1Many ? `${Math.round(h1Many.perSecond)} req/s` : 'n/a',
      met: Number.isFinite(h2Ratio) ? h2Ratio >= 1 : null,
    });
    return [...rows, keepAliveGoal, h2Goal];
  },
};
