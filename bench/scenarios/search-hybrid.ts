/**
 * search-hybrid: issue 15's goal, `search_emails` hybrid p50 ≤ 15 ms and
 * p99 ≤ 50 ms through `/mcp`, measured end to end on the compiled daemon.
 *
 * Setup as the `search` scenario (search.ts: a private Dovecot holding
 * BENCH_MESSAGES generated messages, the daemon mirroring them, the same
 * query shapes chosen from the mirrored index; no notmuch here, so each
 * shape is the first candidate we match). The daemon also declares an
 * OpenAI-compatible embedding profile whose provider is the embedding
 * stand-in (test/harness/embedding-standin.ts: hashed bag-of-words vectors,
 * 384 dimensions, on loopback in this process), and an admin endpoint whose
 * key holds service.admin.spend and service.admin.read.
 *
 * Phases, on one daemon:
 *  1. lexical: each shape through /mcp while nothing is activated;
 *  2. activation (`POST /api/admin/embeddings/activation`), then the
 *     backfill until `GET /api/admin/embeddings` shows every stored email
 *     embedded (progress on stderr; bounded by BENCH_EMBED_WAIT_MINUTES,
 *     default 30);
 *  3. warm-up: until its in-memory vector index is loaded, a pool thread
 *     answers by the exact scan (the load runs in the background), so three
 *     rounds of 20 searches each followed by a 3 s pause come first;
 *  4. hybrid: the same shapes through /mcp; every answer must say
 *     `retrievalMode: 'hybrid'` (the others are counted in the row).
 * Each query is placed by the stand-in (one provider call per search), so
 * its cost is inside the hybrid figures; a bare POST of one short input to
 * the stand-in is timed on its own row. The stand-in shares this process's
 * event loop with the MCP client, and the calls are sequential.
 *
 * BENCH_ITERATIONS (default 200) timed calls per shape and mode.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startDovecot } from '../../test/harness/dovecot.ts';
import { startEmbeddingStandin, type EmbeddingStandin } from '../../test/harness/embedding-standin.ts';
import { generateMailbox } from '../../test/harness/generator.ts';
import { writeMaildir } from '../../test/harness/place-mail.ts';
import { trackDir } from '../../test/harness/processes.ts';
import { reservePort } from '../../test/helpers/ports.ts';
import { boundGoal, millis } from '../goals.ts';
import { apiKeyEntry } from '../peers/daemon-config.ts';
import { readStats, resetPeak } from '../peers/process-stats.ts';
import type { Row, Scenario } from '../scenario.ts';
import { round } from '../stats.ts';
import {
  callTool,
  chooseShapes,
  connectClient,
  type Daemon,
  describe,
  ms,
  p,
  PASSWORD,
  RESULTS,
  sample,
  type Shape,
  sizes,
  startDaemon,
  USER,
  waitForMirror,
} from './search.ts';

const DIMENSIONS = 384;
/** The bench operator's admin key: activation and status (`Authorization: Bearer`). */
const ADMIN_KEY = 'bench-admin-key-0123456789abcdef';
const ADMIN_PERMISSIONS = ['service.admin.spend', 'service.admin.read'];
const WARMUP_ROUNDS = 3;
const WARMUP_SEARCHES = 20;
const WARMUP_PAUSE_MS = 3_000;

type Admin = { get(path: string): Promise<Record<string, unknown>>; post(path: string): Promise<Record<string, unknown>> };

function adminClient(port: number): Admin {
  const call = async (method: string, path: string): Promise<Record<string, unknown>> => {
    const res = await fetch(`http://127.0.0.1:${port}/api/admin${path}`, {
      method,
      headers: { Authorization: `Bearer ${ADMIN_KEY}`, ...(method === 'POST' ? { 'Content-Type': 'application/json' } : {}) },
      ...(method === 'POST' ? { body: '{}' } : {}),
    });
    const json = (await res.json()) as Record<string, unknown>;
    // The status and the problem's title only: a problem names no mail, but the body is not echoed.
    if (!res.ok) throw new Error(`admin ${method} ${path}: ${res.status} ${String(json.title ?? '')}`);
    return json;
  };
  return { get: (path) => call('GET', path), post: (path) => call('POST', path) };
}

/** The daemon's configuration sections of this scenario: the stand-in as provider, and the admin endpoint. */
function hybridSections(standin: EmbeddingStandin, adminPort: number, adminKeyFile: string): Record<string, unknown> {
  return {
    // Characters are counted against a budget: 50,000 messages need more than the default 10 million.
    Embeddings: { BaseAddress: standin.baseAddress, Model: 'bench-bow', Dimensions: DIMENSIONS, BatchSize: 256, MaxInputCharactersPerPeriod: 100_000_000_000 },
    EmbeddingBackfill: { BatchSize: 2000 },
    AdminEndpoint: {
      Enabled: true,
      BindAddress: '127.0.0.1',
      Port: adminPort,
      Authentication: [{ ...apiKeyEntry('bench-admin', `file:${adminKeyFile}`), Permissions: ADMIN_PERMISSIONS }],
    },
  };
}

/** Polls the embedding status until every stored email is embedded; progress on stderr. */
async function waitForEmbedding(admin: Admin, d: Daemon, standin: EmbeddingStandin, limitMs: number, log: (line: string) => void): Promise<number> {
  const started = performance.now();
  let lastLog = 0;
  for (;;) {
    if (d.state() !== 'running') throw new Error(`mailcairnd ${d.state()} while embedding`);
    const status = await admin.get('/embeddings');
    const serving = status.serving as { embeddedEmailCount: number; emailCount: number } | null;
    // The stand-in records every request with its inputs: dropped here, or 255,000 passages would sit in this process.
    standin.requests.length = 0;
    const elapsed = performance.now() - started;
    if (serving !== null && serving.emailCount > 0 && serving.embeddedEmailCount >= serving.emailCount) {
      log(`embedded ${serving.embeddedEmailCount}/${serving.emailCount} in ${round(elapsed / 1000, 1)} s`);
      return elapsed;
    }
    if (elapsed - lastLog >= 15_000) {
      lastLog = elapsed;
      log(
        `embedding: ${serving ? `${serving.embeddedEmailCount}/${serving.emailCount}` : 'not serving yet'} after ${round(elapsed / 1000)} s; waiting for ${String(status.waitingFor ?? 'nothing')}`,
      );
    }
    if (elapsed > limitMs) throw new Error(`not every email embedded within ${limitMs / 60_000} min`);
    await sleep(2_000);
  }
}

/** A bare provider call: one short input, the wire format the daemon sends. */
async function standinCall(standin: EmbeddingStandin): Promise<void> {
  const res = await fetch(`${standin.baseAddress}/v1/embeddings`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: 'bench-bow', input: ['quarterly report'] }),
  });
  if (!res.ok) throw new Error(`stand-in answered ${res.status}`);
  await res.arrayBuffer();
}

type Timed = { p50: number; p99: number; notHybrid: number; calls: number };

export const searchHybrid: Scenario = {
  name: 'search-hybrid',
  description: 'search_emails through /mcp, lexical then hybrid (embedding stand-in as provider), against issue 15 goal',
  async run() {
    const { total, iterations } = sizes();
    const embedLimitMs = Number(process.env.BENCH_EMBED_WAIT_MINUTES ?? '30') * 60_000;
    const dir = mkdtempSync(join(tmpdir(), 'mailcairn-bench-hybrid-'));
    trackDir(dir);
    const interrupted = (signal: NodeJS.Signals): void => {
      process.stderr.write(`[search-hybrid] ${signal}: stopping\n`);
      process.exit(130);
    };
    process.once('SIGINT', interrupted);
    process.once('SIGTERM', interrupted);
    const log = (line: string): void => void process.stderr.write(`[search-hybrid] ${line}\n`);
    const rows: Row[] = [];
    let daemon: Daemon | null = null;
    const standin = await startEmbeddingStandin({ dimensions: DIMENSIONS });
    const dovecot = await startDovecot({ users: [{ user: USER, password: PASSWORD }] });
    try {
      log(`writing ${total} messages`);
      await writeMaildir(dovecot, USER, 'INBOX', generateMailbox({ seed: 42, count: total, profile: 'bench' }));
      const daemonDir = join(dir, 'mailcairn');
      mkdirSync(daemonDir, { recursive: true });
      const adminKeyFile = join(daemonDir, 'admin.key');
      writeFileSync(adminKeyFile, ADMIN_KEY);
      const adminPort = await reservePort();
      log('mailcairnd mirroring');
      daemon = await startDaemon(daemonDir, dovecot.port, hybridSections(standin, adminPort, adminKeyFile));
      const d = daemon;
      const { mirrorMs, stored } = await waitForMirror(d, total);
      log('choosing query shapes');
      const shapes = await chooseShapes(d.database, null, stored);

      const loadAtStart = loadavg()
        .map((l) => round(l, 1))
        .join(' ');
      const peakReset = resetPeak(d.pid);
      const admin = adminClient(adminPort);
      const client = await connectClient(d.port, 'bench-search-hybrid');
      const timeShape = async (shape: Shape): Promise<Timed> => {
        const args = { queryText: shape.queryText, ...shape.filters, resultLimit: RESULTS };
        let notHybrid = 0;
        let calls = 0;
        const samples = await sample(iterations, 5, async () => {
          const answer = await callTool(client, 'search_emails', args);
          calls++;
          if (answer.retrievalMode !== 'hybrid') notHybrid++;
        });
        const s = p(samples);
        return { p50: ms(s.p50Us), p99: ms(s.p99Us), notHybrid, calls };
      };
      try {
        log('lexical phase (nothing activated)');
        const lexical: Timed[] = [];
        for (const shape of shapes) lexical.push(await timeShape(shape));
        const lexicalRss = readStats(d.pid)?.peakRssMiB ?? NaN;

        log('activating');
        const activated = await admin.post('/embeddings/activation');
        log(`activation: ${String(activated.outcome)}`);
        const embedMs = await waitForEmbedding(admin, d, standin, embedLimitMs, log);
        const status = await admin.get('/embeddings');
        const serving = status.serving as { embeddedEmailCount: number; emailCount: number };

        log(`warm-up: ${WARMUP_ROUNDS} × (${WARMUP_SEARCHES} searches, ${WARMUP_PAUSE_MS / 1000} s pause) while the pool threads load their vector index`);
        for (let r = 0; r < WARMUP_ROUNDS; r++) {
          for (let i = 0; i < WARMUP_SEARCHES; i++) {
            const shape = shapes[i % shapes.length]!;
            await callTool(client, 'search_emails', { queryText: shape.queryText, ...shape.filters, resultLimit: RESULTS });
          }
          await sleep(WARMUP_PAUSE_MS);
        }
        standin.requests.length = 0;

        log('hybrid phase');
        const hybrid: Timed[] = [];
        for (const shape of shapes) {
          hybrid.push(await timeShape(shape));
          standin.requests.length = 0;
        }
        const bare = p(await sample(iterations, 10, () => standinCall(standin)));
        const usage = readStats(d.pid) ?? { cpuMs: NaN, peakRssMiB: NaN };
        const load = loadavg()
          .map((l) => round(l, 1))
          .join(' ');

        shapes.forEach((shape, i) => {
          const lx = lexical[i]!;
          const hy = hybrid[i]!;
          rows.push({
            measure: `search_emails: ${shape.name}`,
            query: describe(shape),
            matches: shape.ours,
            'lexical p50 ms': lx.p50,
            'lexical p99 ms': lx.p99,
            'hybrid p50 ms': hy.p50,
            'hybrid p99 ms': hy.p99,
            'hybrid/lexical p50': round(hy.p50 / lx.p50, 2),
            note: `${hy.notHybrid} of ${hy.calls} hybrid-phase answers not hybrid; ${lx.notHybrid === lx.calls ? 'lexical phase all lexical' : `${lx.calls - lx.notHybrid} lexical-phase answers hybrid`}`,
          });
        });
        rows.push({
          measure: 'stand-in bare call',
          query: 'POST /v1/embeddings, one short input',
          'hybrid p50 ms': ms(bare.p50Us),
          'hybrid p99 ms': ms(bare.p99Us),
          note: 'the provider call each hybrid search makes to place its query, timed alone from this process',
        });
        rows.push({
          measure: 'mailcairnd hybrid phases',
          query: '',
          note:
            `peak RSS ${round(usage.peakRssMiB)} MiB over lexical, embedding and hybrid phases${peakReset ? '' : ' (lifetime peak: reset refused)'}; ` +
            `peak after the lexical phase ${round(lexicalRss)} MiB; messages ${stored}; mirror ${round(mirrorMs / 1000, 1)} s; ` +
            `embedding ${serving.embeddedEmailCount}/${serving.emailCount} emails in ${round(embedMs / 1000, 1)} s (activation ${String(activated.outcome)}, ${String((activated.forecast as { passages?: number } | undefined)?.passages ?? '?')} passages); ` +
            `load average at start ${loadAtStart}, at end ${load}`,
        });
        rows.push(
          ...shapes.flatMap((shape, i) => [
            boundGoal(`${shape.name}: hybrid MCP p50 ≤ 15 ms`, hybrid[i]!.p50, 15, millis, lexical[i]!.p50),
            boundGoal(`${shape.name}: hybrid MCP p99 ≤ 50 ms`, hybrid[i]!.p99, 50, millis, lexical[i]!.p99),
          ]),
        );
      } finally {
        await client.close().catch(() => undefined);
      }
    } catch (err) {
      if (daemon !== null) log(`failed with mailcairnd ${daemon.state()}; its log ends:\n${daemon.logTail(30)}`);
      throw err;
    } finally {
      await daemon?.stop();
      await dovecot.stop();
      await standin.close();
      rmSync(dir, { recursive: true, force: true });
      process.off('SIGINT', interrupted);
      process.off('SIGTERM', interrupted);
    }
    return rows;
  },
};
