/**
 * telemetry: what exporting metrics and traces costs `tools/list` and
 * `search_emails` through `/mcp`, against the same calls with telemetry
 * off, in one run (issue 31: CPU per request ≤ 1.05× off with metrics,
 * ≤ 1.15× with metrics and traces).
 *
 * Setup: the `search` scenario's private Dovecot holding BENCH_MESSAGES
 * generated messages (default 2000, `bench` profile, seed 42) and three of
 * its compiled daemons (search.ts `startDaemon`: API-key authentication,
 * one run mirroring the folder, log level warn), identical but for
 * `Telemetry` (docs/operations.md):
 *  - off: `Enabled` false (nothing of OpenTelemetry's SDK is loaded);
 *  - metrics: the Prometheus exporter on a listener of its own, scraped
 *    (`GET /metrics`) at once and then every BENCH_TELEMETRY_SCRAPE_MS
 *    (15000: the scrape interval of Prometheus's example configuration) by
 *    a loop in the bench, and OTLP/HTTP metrics pushed every
 *    BENCH_TELEMETRY_PUSH_SECONDS (60: the SDK's default export interval;
 *    0: no push) to a loopback sink (bench/peers/otlp-sink.ts, answering
 *    200): both exporters at once, at an operator's rates. A collection's
 *    cost does not grow with the calls, so its share of a call depends on
 *    how many calls fall between two; it is measured apart (below), and
 *    BENCH_TELEMETRY_SCRAPE_MS=1000 BENCH_TELEMETRY_PUSH_SECONDS=5 runs
 *    the rates earlier runs used (TM1–TM9);
 *  - metrics + traces: the same, and OTLP/HTTP traces (protobuf) to the sink.
 * Every key is written (`http/protobuf`, loopback endpoints) and the
 * daemons get our environment without its OTEL_ variables, so each
 * configuration is exactly what it says.
 *
 * Passes: BENCH_TELEMETRY_PASSES (3) times over, every daemon is started
 * afresh (the first started rotating by pass), mirrors, is measured as
 * below and is stopped; the figures pool every pass's rounds. One pass's
 * ratios moved by as much as the 5% goal between runs (TM12–TM15: metrics
 * on tools/list 1.10, 1.04, 0.97, 1.07× off) while its A/A pair stayed
 * within 0.94–1.02×: what one process happens to be (its heap's layout,
 * what its JIT made, being started first) is a share of a run's figure, and
 * it averages out only over several processes.
 *
 * Measured: once every daemon has mirrored the mailbox, one MCP SDK client
 * per daemon (Streamable HTTP, keep-alive, `Authorization: Bearer`) calls
 * `tools/list`, and `search_emails` for the `search` scenario's rare word
 * (20 results: the cheap search, where a fixed cost per call shows most).
 * BENCH_TELEMETRY_WARMUP (1000) untimed calls of each per daemon; then
 * the bench waits (up to 180 s) until every daemon spends at most 20 ms of
 * CPU a second with nothing asked of it, so that work left from the mirror
 * falls on no round; then BENCH_TELEMETRY_REQUESTS (6000) timed calls of
 * each per daemon in BENCH_TELEMETRY_ROUNDS (12) rounds, in every pass. A round runs one
 * operation then the other (which one first alternates by round); within an
 * operation the daemons take turns call by call, the order rotated each
 * turn, so drift in the machine's load hits every configuration alike.
 *
 * Figures (docs/benchmarks.md "Wall, CPU and peak memory"): latency p50/p99
 * over every timed call of a configuration and operation; daemon CPU per
 * call = utime + stime of the whole daemon process (every thread: actors
 * record metrics and open spans in theirs) from /proc/<pid>/stat over the
 * operation's interval in each round (peers/process-stats.ts `interval`),
 * summed over the rounds ÷ the calls summed: the mean cost of a call, each
 * garbage collection counted once wherever it fell. The goals are judged on
 * it. Beside it, each round's value and their median: what a daemon does
 * now and then (a major collection, a batch of spans) lands in one round
 * and not the next, so the rounds are uneven (TM10's were bimodal) and
 * their median is not the mean. The main thread's own CPU per call
 * (/proc/<pid>/task/<pid>/stat, the same intervals) is shown beside it: the
 * HTTP exchange, the MCP SDK and the instruments' records. The interval is
 * the same wall for every daemon, so what an exporter does in the
 * background (a scrape, a push, a batch of spans) falls on its own
 * configuration. Peak RSS: VmHWM reset at the start of each
 * interval, the highest. Each configuration's row says what it exported
 * (scrapes answered and series in the last one, OTLP pushes, spans received
 * per call): one that exported nothing is flagged and its goal reads n/a.
 * Spans are sent in batches, so a few from one interval may be exported in
 * the next.
 *
 * After the rounds, with no calls: each daemon's CPU per second over
 * BENCH_TELEMETRY_IDLE_SECONDS (10) with nothing scraped (what telemetry
 * costs by the second: actor threads forwarding their measurements, timers,
 * a push that falls in it), then IDLE_SCRAPES scrapes one after another of
 * each daemon with metrics: its CPU over them, less that idle rate, per
 * scrape (the collection, the store's gauges read by the query pool, and
 * the exposition).
 *
 * BENCH_TELEMETRY_CONFIGS (comma-separated keys: off, metrics, traces) runs
 * some configurations only (a goal whose sides are not both run reads n/a);
 * `off-again`, named there, adds a second daemon with telemetry off, whose
 * ratio to the first is the bench's own noise (an A/A comparison);
 * `metrics-base` and `traces-base` add those configurations run by the daemon
 * of another build, BENCH_TELEMETRY_BASE=<its dist/> (e.g. main's, built and
 * copied aside): a change's before and after in the same rounds.
 * BENCH_CPU_PROF=<dir>: `<dir>/telemetry-<key>/`, a `.cpuprofile` per thread of each daemon.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { startDovecot } from '../../test/harness/dovecot.ts';
import { generateMailbox } from '../../test/harness/generator.ts';
import { writeMaildir } from '../../test/harness/place-mail.ts';
import { trackDir } from '../../test/harness/processes.ts';
import { reservePort } from '../../test/helpers/ports.ts';
import { formatTimeSpan } from '../../config/schema/time-span.ts';
import { goalRow } from '../goals.ts';
import { daemonBinIn } from '../peers/daemon.ts';
import { startOtlpSink, type OtlpSink } from '../peers/otlp-sink.ts';
import { interval } from '../peers/process-stats.ts';
import type { Row, Scenario } from '../scenario.ts';
import { formatBytes, median, round, summarize } from '../stats.ts';
import {
  callTool,
  chooseShapes,
  connectClient,
  type Daemon,
  describe,
  mainThreadCpuMs,
  PASSWORD,
  RESULTS,
  startDaemon,
  USER,
  waitForMirror,
} from './search.ts';
import { exitWhenInterrupted } from '../interrupted.ts';

type Key = 'off' | 'off-again' | 'metrics' | 'traces' | 'metrics-base' | 'traces-base';
/** `byDefault` false: run only when BENCH_TELEMETRY_CONFIGS names it; `base`: the daemon of the build BENCH_TELEMETRY_BASE names. */
type Configuration = { key: Key; name: string; metrics: boolean; traces: boolean; goal: number | null; byDefault?: false; base?: true };
const CONFIGURATIONS: readonly Configuration[] = [
  { key: 'off', name: 'off', metrics: false, traces: false, goal: null },
  // A second daemon with telemetry off: its ratio to the first is the bench's own noise on this machine (an A/A comparison).
  { key: 'off-again', name: 'off (again)', metrics: false, traces: false, goal: null, byDefault: false },
  { key: 'metrics', name: 'metrics', metrics: true, traces: false, goal: 1.05 },
  { key: 'traces', name: 'metrics + traces', metrics: true, traces: true, goal: 1.15 },
  // The same two from another build (BENCH_TELEMETRY_BASE): a change's before and after in one run.
  { key: 'metrics-base', name: 'metrics (base build)', metrics: true, traces: false, goal: null, byDefault: false, base: true },
  { key: 'traces-base', name: 'metrics + traces (base build)', metrics: true, traces: true, goal: null, byDefault: false, base: true },
];
type Operation = 'tools/list' | 'search_emails';
const OPERATIONS: readonly Operation[] = ['tools/list', 'search_emails'];
/** The batch span processor exports at least this often (its default delay is 5 s): the wait before the spans are counted. */
const SPAN_FLUSH_MS = 6_000;

/** One round of an operation on one daemon: calls made, the daemon's CPU over the interval, and its main thread's part. */
type Round = { calls: number; cpuMs: number; mainMs: number };
type Tally = { samples: number[]; rounds: Round[]; peakRssMiB: number; peakReset: boolean };
type Scrapes = { answered: number; failed: number; bytes: number; series: number };

/** A configuration under test over the whole run: where it exports, and what its daemons did (summed over the passes). */
type Subject = {
  configuration: Configuration;
  /** The OTLP sink its daemons push to (one for every pass), when it pushes anything. */
  sink: OtlpSink | null;
  scrapes: Scrapes;
  tallies: Map<Operation, Tally>;
  /** MCP calls made and spans received from the first warm-up call on. */
  calls: number;
  spansBefore: number;
  /** After each pass's rounds, with no calls: the daemon's CPU over that wall, nothing scraped; and what one scrape cost it (metrics on). */
  idle: { cpuMs: number; seconds: number; scrapeCpuMs: number[] };
};

/** A configuration's daemon in the pass under way: its client and, when metrics are on, its Prometheus scrape URL. */
type Live = { s: Subject; daemon: Daemon; client: Client; scrapeUrl: string | null };

/** `Telemetry` as docs/operations.md describes it; `ExportInterval` is a time span like every other (`00:00:05`). */
function telemetrySection(c: Configuration, prometheusPort: number, sink: OtlpSink | null, pushSeconds: number): Record<string, unknown> {
  if (!c.metrics && !c.traces) return { Enabled: false };
  // A sink is started only when something is pushed to it (traces, or metrics every pushSeconds).
  const otlp = { Endpoint: sink?.endpoint ?? '', Protocol: 'http/protobuf' };
  return {
    Enabled: true,
    ServiceName: 'mailcairn-bench',
    Metrics: {
      Prometheus: { Enabled: true, Host: '127.0.0.1', Port: prometheusPort },
      Otlp: pushSeconds > 0 ? { Enabled: true, ...otlp, ExportInterval: formatTimeSpan(pushSeconds * 1000) } : { Enabled: false },
    },
    Traces: { Otlp: c.traces ? { Enabled: true, ...otlp } : { Enabled: false } },
  };
}

/** Our environment without the OTEL_ variables, which a daemon with telemetry on would read beside its configuration. */
function withoutOtel(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('OTEL_')));
}

/** Scrapes every URL at once and then every `ms` (a scrape still in flight is not started again) until the returned stop. */
function scrapeLoop(live: readonly Live[], ms: number): () => Promise<void> {
  const inFlight = new Map<Live, Promise<void>>();
  const scrape = async ({ s, scrapeUrl }: Live): Promise<void> => {
    try {
      const res = await fetch(scrapeUrl!);
      const text = await res.text();
      if (res.status !== 200) {
        s.scrapes.failed++;
        return;
      }
      s.scrapes.answered++;
      s.scrapes.bytes += Buffer.byteLength(text);
      s.scrapes.series = text.split('\n').filter((line) => line !== '' && !line.startsWith('#')).length;
    } catch {
      s.scrapes.failed++;
    }
  };
  const tick = (): void => {
    for (const l of live) {
      if (l.scrapeUrl === null || inFlight.has(l)) continue;
      inFlight.set(
        l,
        scrape(l).finally(() => inFlight.delete(l)),
      );
    }
  };
  // Prometheus scrapes a target as soon as it finds it, then every interval.
  tick();
  const timer = setInterval(tick, ms);
  return async () => {
    clearInterval(timer);
    await Promise.all(inFlight.values());
  };
}

/** A daemon is settled once it spends at most this much CPU a second with no call to serve (2% of a core). */
const SETTLED_CPU_MS_PER_S = 20;
/** How long to wait for the daemons to settle before measuring anyway (the row's note says so). */
const SETTLE_LIMIT_MS = 180_000;

/**
 * Waits, a second at a time, until no daemon spends more than
 * SETTLED_CPU_MS_PER_S with nothing asked of it: work left from the mirror
 * (derived data, the store's maintenance) would otherwise fall on the first
 * rounds of every configuration. The seconds waited, or null when the limit passed first.
 */
async function settle(live: readonly Live[]): Promise<number | null> {
  const started = performance.now();
  while (performance.now() - started < SETTLE_LIMIT_MS) {
    const spans = live.map((l) => interval(l.daemon.pid));
    await sleep(1_000);
    if (spans.every((span) => span.end().cpuMs <= SETTLED_CPU_MS_PER_S)) return Math.round((performance.now() - started) / 1000);
  }
  return null;
}

/** Scrapes in a row after the rounds: what one costs the daemon. */
const IDLE_SCRAPES = 20;

/** The daemon's CPU per scrape over IDLE_SCRAPES scrapes one after another, less its idle rate over that time. */
async function scrapeCost(l: Live, idleCpuMsPerSecond: number): Promise<number> {
  const span = interval(l.daemon.pid);
  const started = performance.now();
  for (let i = 0; i < IDLE_SCRAPES; i++) {
    const res = await fetch(l.scrapeUrl!);
    await res.text();
    if (res.status !== 200) throw new Error(`a scrape of the ${l.s.configuration.name} daemon answered ${res.status}`);
  }
  const seconds = (performance.now() - started) / 1000;
  return Math.max(0, span.end().cpuMs - idleCpuMsPerSecond * seconds) / IDLE_SCRAPES;
}

async function call(l: Live, op: Operation, searchArgs: Record<string, unknown>): Promise<void> {
  l.s.calls++;
  if (op === 'tools/list') await l.client.listTools();
  else await callTool(l.client, 'search_emails', searchArgs);
}

/** What a configuration exported, for its row; `exported` false when it should have and did not. */
function exportedBy(s: Subject): { text: string; exported: boolean } {
  const c = s.configuration;
  if (!c.metrics && !c.traces) return { text: '', exported: true };
  const parts: string[] = [];
  let exported = true;
  if (c.metrics) {
    const { answered, failed, bytes, series } = s.scrapes;
    parts.push(
      `scrapes ${answered} answered${failed > 0 ? `, ${failed} failed` : ''}, ${series} series, ${formatBytes(answered > 0 ? bytes / answered : 0)} each`,
    );
    if (s.sink !== null) parts.push(`OTLP metric pushes ${s.sink.metrics.requests} (${formatBytes(s.sink.metrics.bytes)})`);
    exported &&= answered > 0 && series > 0;
  }
  if (c.traces && s.sink !== null) {
    const spans = s.sink.traces.spans - s.spansBefore;
    parts.push(
      `spans ${spans} (${round(spans / Math.max(1, s.calls), 2)} per call) in ${s.sink.traces.requests} exports (${formatBytes(s.sink.traces.bytes)})`,
    );
    exported &&= spans > 0;
  }
  return { text: parts.join('; '), exported };
}

const perCallUs = (r: Round): number => (r.cpuMs * 1000) / r.calls;
/** CPU per call over every round: each round's CPU summed over its calls summed (the mean cost, every collection counted once). */
function overallUs(rounds: readonly Round[], part: 'cpuMs' | 'mainMs' = 'cpuMs'): number {
  const cpuMs = rounds.reduce((sum, r) => sum + r[part], 0);
  const calls = rounds.reduce((sum, r) => sum + r.calls, 0);
  return calls > 0 ? (cpuMs * 1000) / calls : Number.NaN;
}
const micros = (us: number): string => `${Math.round(us)} µs`;

export const telemetry: Scenario = {
  name: 'telemetry',
  description:
    'tools/list and search_emails through /mcp with telemetry off, metrics on (Prometheus scraped, OTLP pushed), metrics + OTLP traces: latency and daemon CPU per call, same run',
  async run() {
    const total = Number(process.env.BENCH_MESSAGES ?? '2000');
    const requests = Math.max(10, Math.floor(Number(process.env.BENCH_TELEMETRY_REQUESTS ?? '6000')));
    const rounds = Math.max(1, Math.floor(Number(process.env.BENCH_TELEMETRY_ROUNDS ?? '12')));
    const passes = Math.max(1, Math.floor(Number(process.env.BENCH_TELEMETRY_PASSES ?? '3')));
    const warmup = Math.max(1, Math.floor(Number(process.env.BENCH_TELEMETRY_WARMUP ?? '1000')));
    const scrapeMs = Math.max(100, Number(process.env.BENCH_TELEMETRY_SCRAPE_MS ?? '15000'));
    const pushSeconds = Math.max(0, Math.floor(Number(process.env.BENCH_TELEMETRY_PUSH_SECONDS ?? '60')));
    const idleSeconds = Math.max(1, Number(process.env.BENCH_TELEMETRY_IDLE_SECONDS ?? '10'));
    const only = (process.env.BENCH_TELEMETRY_CONFIGS ?? '').split(',').filter((k) => k !== '');
    const unknown = only.filter((k) => !CONFIGURATIONS.some((c) => c.key === k));
    if (unknown.length > 0) throw new Error(`BENCH_TELEMETRY_CONFIGS: unknown ${unknown.join(', ')}; known: ${CONFIGURATIONS.map((c) => c.key).join(', ')}`);
    const configurations = CONFIGURATIONS.filter((c) => (only.length === 0 ? c.byDefault !== false : only.includes(c.key)));
    const baseDist = process.env.BENCH_TELEMETRY_BASE;
    if (configurations.some((c) => c.base) && !baseDist)
      throw new Error("BENCH_TELEMETRY_CONFIGS: metrics-base and traces-base need BENCH_TELEMETRY_BASE (another build's dist/)");
    const baseBin = baseDist ? daemonBinIn(baseDist) : undefined;
    const perRound = Math.ceil(requests / rounds);

    const dir = mkdtempSync(join(tmpdir(), 'mailcairn-bench-telemetry-'));
    trackDir(dir);
    const log = (line: string): void => void process.stderr.write(`[telemetry] ${line}\n`);
    const letGo = exitWhenInterrupted('telemetry');

    // One subject per configuration for the whole run; each pass gives it a fresh daemon and client.
    const subjects: Subject[] = [];
    const sinks: OtlpSink[] = [];
    let pass: Array<{ s: Subject; daemon: Daemon; client: Client | null; scrapeUrl: string | null }> = [];
    let stopScraping: (() => Promise<void>) | null = null;
    let query = '';
    let loadAtStart = Number.NaN;
    let loadAtEnd = Number.NaN;
    const settled: Array<number | null> = [];
    const stopPass = async (): Promise<void> => {
      await stopScraping?.();
      stopScraping = null;
      for (const p of pass) await p.client?.close().catch(() => undefined);
      for (const p of pass) await p.daemon.stop();
      pass = [];
    };
    const dovecot = await startDovecot({ users: [{ user: USER, password: PASSWORD }] });
    try {
      log(`writing ${total} messages`);
      await writeMaildir(dovecot, USER, 'INBOX', generateMailbox({ seed: 42, count: total, profile: 'bench' }));
      const env = withoutOtel();
      for (const configuration of configurations) {
        const on = configuration.metrics || configuration.traces;
        const sink = on && (configuration.traces || pushSeconds > 0) ? await startOtlpSink() : null;
        if (sink !== null) sinks.push(sink);
        subjects.push({
          configuration,
          sink,
          scrapes: { answered: 0, failed: 0, bytes: 0, series: 0 },
          tallies: new Map(OPERATIONS.map((op) => [op, { samples: [], rounds: [], peakRssMiB: 0, peakReset: true }])),
          calls: 0,
          spansBefore: sink?.traces.spans ?? 0,
          idle: { cpuMs: 0, seconds: 0, scrapeCpuMs: [] },
        });
      }
      for (let p = 0; p < passes; p++) {
        // Each pass starts the daemons afresh, first in a different order: what one process happens to be
        // (its heap's layout, what its JIT made, being started first) is averaged over the passes.
        const order = subjects.map((_, i) => subjects[(i + p) % subjects.length]!);
        for (const s of order) {
          const c = s.configuration;
          const prometheusPort = await reservePort();
          log(`pass ${p + 1} of ${passes}: starting the daemon with telemetry ${c.name}`);
          const daemon = await startDaemon(
            join(dir, `${c.key}-${p + 1}`),
            dovecot.port,
            { Telemetry: telemetrySection(c, prometheusPort, s.sink, pushSeconds) },
            { profile: `telemetry-${c.key}-${p + 1}`, env, ...(c.base ? { bin: baseBin } : {}) },
          );
          pass.push({ s, daemon, client: null, scrapeUrl: c.metrics ? `http://127.0.0.1:${prometheusPort}/metrics` : null });
        }
        log('waiting for every daemon to mirror the mailbox');
        const mirrored = await Promise.all(pass.map(({ daemon }) => waitForMirror(daemon, total)));
        const shape = (await chooseShapes(pass[0]!.daemon.database, null, mirrored[0]!.stored)).find((s) => s.name === 'rare word')!;
        query = `${shape.name}: ${describe(shape)}, ${shape.ours} matches, ${RESULTS} results at most`;
        const searchArgs = { queryText: shape.queryText, ...shape.filters, resultLimit: RESULTS };
        for (const p of pass) p.client = await connectClient(p.daemon.port, `bench-telemetry-${p.s.configuration.key}`);
        // The turns below follow the configurations' own order; only the start order rotates.
        const live: Live[] = subjects.map((s) => {
          const p = pass.find((q) => q.s === s)!;
          return { s, daemon: p.daemon, client: p.client!, scrapeUrl: p.scrapeUrl };
        });
        // Every daemon answers alike, or the comparison is of different work.
        const answers = await Promise.all(
          live.map(async (l) => {
            l.s.calls++;
            return ((await callTool(l.client, 'search_emails', searchArgs)).matches as unknown[]).length;
          }),
        );
        if (new Set(answers).size !== 1) throw new Error(`the daemons answered ${answers.join(', ')} matches for the same search`);

        stopScraping = scrapeLoop(live, scrapeMs);
        log(`warm-up: ${warmup} calls of each operation per daemon`);
        for (const op of OPERATIONS) for (const l of live) for (let i = 0; i < warmup; i++) await call(l, op, searchArgs);
        globalThis.gc?.();
        const settledSeconds = await settle(live);
        settled.push(settledSeconds);
        log(settledSeconds === null ? `the daemons did not settle within ${SETTLE_LIMIT_MS / 1000} s: measuring anyway` : `settled after ${settledSeconds} s`);

        log(`measuring: ${requests} calls of each operation per daemon in ${rounds} rounds, the daemons taking turns`);
        if (p === 0) loadAtStart = loadavg()[0]!;
        for (let r = 0; r < rounds; r++) {
          for (const op of r % 2 === 0 ? OPERATIONS : [...OPERATIONS].reverse()) {
            const spans = live.map((l) => interval(l.daemon.pid));
            const mainBefore = live.map((l) => mainThreadCpuMs(l.daemon.pid));
            for (let i = 0; i < perRound; i++) {
              for (let k = 0; k < live.length; k++) {
                const l = live[(i + k) % live.length]!;
                const start = performance.now();
                await call(l, op, searchArgs);
                l.s.tallies.get(op)!.samples.push(performance.now() - start);
              }
            }
            for (const [i, l] of live.entries()) {
              const stats = spans[i]!.end();
              const tally = l.s.tallies.get(op)!;
              tally.rounds.push({ calls: perRound, cpuMs: stats.cpuMs, mainMs: mainThreadCpuMs(l.daemon.pid) - mainBefore[i]! });
              tally.peakRssMiB = Math.max(tally.peakRssMiB, stats.peakRssMiB);
              tally.peakReset &&= spans[i]!.peakReset;
            }
          }
        }
        await stopScraping();
        stopScraping = null;
        log(`idle: ${idleSeconds} s with no calls and no scrape, then ${IDLE_SCRAPES} scrapes one after another`);
        const quiet = live.map((l) => interval(l.daemon.pid));
        const quietStarted = performance.now();
        await sleep(idleSeconds * 1000);
        const quietSeconds = (performance.now() - quietStarted) / 1000;
        for (const [i, l] of live.entries()) {
          const cpuMs = quiet[i]!.end().cpuMs;
          l.s.idle.cpuMs += cpuMs;
          l.s.idle.seconds += quietSeconds;
          if (l.scrapeUrl !== null) l.s.idle.scrapeCpuMs.push(await scrapeCost(l, cpuMs / quietSeconds));
        }
        if (p === passes - 1) loadAtEnd = loadavg()[0]!;
        if (subjects.some((s) => s.configuration.traces)) await sleep(SPAN_FLUSH_MS);
        await stopPass();
      }
    } catch (err) {
      for (const { daemon } of pass) if (daemon.state() !== 'running') log(`mailcairnd ${daemon.state()}; its log ends:\n${daemon.logTail(30)}`);
      throw err;
    } finally {
      await stopPass();
      for (const sink of sinks) await sink.stop();
      await dovecot.stop();
      letGo();
      if (process.env.BENCH_CPU_PROF) log(`CPU profiles in ${resolve(process.env.BENCH_CPU_PROF)}`);
      rmSync(dir, { recursive: true, force: true });
    }
    const settledNote = settled.every((x) => x !== null)
      ? `settled after ${settled.join(', ')} s`
      : `${settled.filter((x) => x === null).length} of ${passes} passes never settled`;

    // Figures per operation and configuration; ratios against off in the same operation.
    const figures = OPERATIONS.flatMap((op) =>
      subjects.map((s) => {
        const t = s.tallies.get(op)!;
        const cpuPerRound = t.rounds.map(perCallUs);
        return {
          op,
          s,
          t,
          latency: summarize(t.samples, 1),
          cpuPerRound,
          cpuUs: overallUs(t.rounds),
          mainUs: overallUs(t.rounds, 'mainMs'),
          medianUs: median(cpuPerRound),
          ...exportedBy(s),
        };
      }),
    );
    const offOf = (op: Operation): (typeof figures)[number] | undefined => figures.find((f) => f.op === op && f.s.configuration.key === 'off');
    const ratio = (ours: number, off: number | undefined): number | string => (off !== undefined && off > 0 ? round(ours / off, 2) : 'n/a');
    const rows: Row[] = figures.map((f, index) => {
      const off = offOf(f.op);
      return {
        operation: f.op,
        telemetry: f.s.configuration.name,
        calls: f.latency.count,
        'p50 µs': f.latency.p50Us,
        'p99 µs': f.latency.p99Us,
        'p50 × off': ratio(f.latency.p50Us, off?.latency.p50Us),
        'p99 × off': ratio(f.latency.p99Us, off?.latency.p99Us),
        'daemon CPU µs/call': Math.round(f.cpuUs),
        'CPU × off': ratio(f.cpuUs, off?.cpuUs),
        'main thread µs/call': Math.round(f.mainUs),
        'main × off': ratio(f.mainUs, off?.mainUs),
        'median of rounds µs': Math.round(f.medianUs),
        'median × off': ratio(f.medianUs, off?.medianUs),
        'per round': f.cpuPerRound.map((us) => Math.round(us)).join(' '),
        'peak RSS MiB': `${round(f.t.peakRssMiB, 1)}${f.t.peakReset ? '' : ' (lifetime)'}`,
        exported: f.exported ? f.text : `NOTHING EXPORTED: figures time no telemetry; ${f.text}`,
        note:
          index === 0
            ? `${warmup} warm-up calls, then ${rounds} rounds, operations alternating, daemons in turn; ${passes} passes of fresh daemons, each started first in turn; ${settledNote}; ${availableParallelism()} cores; load ${round(loadAtStart, 1)} → ${round(loadAtEnd, 1)}`
            : index === 1
              ? `search_emails: ${query}; scrape every ${scrapeMs} ms, OTLP metric push ${pushSeconds > 0 ? `every ${pushSeconds} s` : 'off'}`
              : '',
      };
    });

    // What telemetry costs with no call to serve: every second (forwarding, timers, batches), and each scrape.
    const idleRate = (s: Subject): number => (s.idle.seconds > 0 ? s.idle.cpuMs / s.idle.seconds : Number.NaN);
    const idleOff = subjects.find((s) => s.configuration.key === 'off');
    const idleRows: Row[] = subjects.map((s) => ({
      operation: 'no calls',
      telemetry: s.configuration.name,
      'idle CPU ms/s': round(idleRate(s), 2),
      'idle above off ms/s': idleOff !== undefined && s !== idleOff ? round(idleRate(s) - idleRate(idleOff), 2) : '',
      'CPU ms per scrape': s.idle.scrapeCpuMs.length === 0 ? '' : round(median(s.idle.scrapeCpuMs), 2),
      note: `${round(s.idle.seconds, 1)} s with no scrape over the passes (an OTLP push may fall in it); then ${IDLE_SCRAPES} scrapes one after another each pass, less that idle rate (the median pass)`,
    }));

    // Issue 31's goals: CPU per call ≤ 1.05× off with metrics, ≤ 1.15× with metrics and traces; per-round ratios show the spread.
    const goals = figures
      .filter((f) => f.s.configuration.goal !== null)
      .map((f) => {
        const bound = f.s.configuration.goal!;
        const off = offOf(f.op);
        const checkable = off !== undefined && f.exported && Number.isFinite(f.cpuUs) && off.cpuUs > 0;
        const r = checkable ? f.cpuUs / off.cpuUs : Number.NaN;
        const perRoundRatios = off ? f.cpuPerRound.map((us, i) => us / off.cpuPerRound[i]!).filter(Number.isFinite) : [];
        const spread =
          perRoundRatios.length > 1
            ? `; rounds ${Math.min(...perRoundRatios).toFixed(2)}–${Math.max(...perRoundRatios).toFixed(2)}×, ${perRoundRatios.filter((x) => x <= bound).length} of ${perRoundRatios.length} met`
            : '';
        return goalRow({
          goal: `${f.op}: daemon CPU per call with ${f.s.configuration.name} ≤ ${bound.toFixed(2)}× off`,
          measured: checkable ? `${micros(f.cpuUs)} (${r.toFixed(2)}×${spread})` : f.exported ? micros(f.cpuUs) : `${micros(f.cpuUs)}, nothing exported`,
          peer: off ? micros(off.cpuUs) : 'n/a',
          met: checkable ? r <= bound : null,
        });
      });
    return [...rows, ...idleRows, ...goals];
  },
};
