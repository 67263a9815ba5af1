/**
 * search-hybrid: issue 15's goal, `search_emails` hybrid p50 ≤ 15 ms and
 * p99 ≤ 50 ms through `/mcp`, measured end to end on the compiled daemon.
 *
 * Setup as the `search` scenario (search.ts: per corpus of BENCH_CORPUS,
 * default `bench,realistic`, corpora.ts, a private Dovecot holding
 * BENCH_MESSAGES generated messages in the corpus's folders, the daemon
 * mirroring them, the same query shapes chosen from the mirrored index; no
 * notmuch here, so each shape is the first candidate we match). The daemon also declares an
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
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDovecot } from '../../test/harness/dovecot.ts';
import { startEmbeddingStandin, type EmbeddingStandin } from '../../test/harness/embedding-standin.ts';
import { writeMaildirs } from '../../test/harness/place-mail.ts';
import { trackDir } from '../../test/harness/processes.ts';
import { boundGoal, millis } from '../goals.ts';
import { readStats, resetPeak } from '../peers/process-stats.ts';
import type { Row, Scenario } from '../scenario.ts';
import { round } from '../stats.ts';
import { activateAndEmbed, STANDIN_DIMENSIONS, standinEmbeddings, startHybridDaemon, warmUpVectorIndex } from './hybrid-daemon.ts';
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
  USER,
  waitForMirror,
} from './search.ts';
import { exitWhenInterrupted } from '../interrupted.ts';
import { benchCorpora, type Corpus } from './corpora.ts';

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
  description: 'search_emails through /mcp, lexical then hybrid (embedding stand-in as provider), against issue 15 goal, per corpus',
  async run() {
    const letGo = exitWhenInterrupted('search-hybrid');
    try {
      const rows: Row[] = [];
      for (const corpus of benchCorpora()) rows.push(...(await hybridCorpus(corpus)));
      return rows;
    } finally {
      letGo();
    }
  },
};

/** One corpus: its own Dovecot, stand-in and daemon; its rows, each measure and goal named with the corpus. */
async function hybridCorpus(corpus: Corpus): Promise<Row[]> {
  const { iterations } = sizes();
  const total = corpus.count;
  const where = `${corpus.label}, ${total.toLocaleString('en')}`;
  const embedLimitMs = Number(process.env.BENCH_EMBED_WAIT_MINUTES ?? '30') * 60_000;
  const dir = mkdtempSync(join(tmpdir(), 'mailcairn-bench-hybrid-'));
  trackDir(dir);
  const log = (line: string): void => void process.stderr.write(`[search-hybrid] ${corpus.label}: ${line}\n`);
  const rows: Row[] = [];
  let daemon: Daemon | null = null;
  const standin = await startEmbeddingStandin({ dimensions: STANDIN_DIMENSIONS });
  const dovecot = await startDovecot({ users: [{ user: USER, password: PASSWORD }] });
  try {
    log(`writing ${total} messages`);
    await writeMaildirs(
      dovecot,
      USER,
      (function* () {
        for (const m of corpus.messages()) yield { ...m, folder: m.folder ?? 'INBOX' };
      })(),
      corpus.folders,
    );
    log('mailcairnd mirroring');
    const started = await startHybridDaemon(join(dir, 'mailcairn'), dovecot.port, { Embeddings: standinEmbeddings(standin) }, corpus.folders);
    daemon = started.daemon;
    const admin = started.admin;
    const d = daemon;
    const { mirrorMs, stored } = await waitForMirror(d, total);
    log('choosing query shapes');
    const shapes = await chooseShapes(d.database, null, stored);

    const loadAtStart = loadavg()
      .map((l) => round(l, 1))
      .join(' ');
    const peakReset = resetPeak(d.pid);
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
      const embedded = await activateAndEmbed(admin, d, standin, embedLimitMs, log);
      await warmUpVectorIndex(
        client,
        shapes.map((shape) => ({ queryText: shape.queryText, ...shape.filters, resultLimit: RESULTS })),
        log,
      );
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
          measure: `search_emails: ${shape.name} (${where})`,
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
        measure: `stand-in bare call (${where})`,
        query: 'POST /v1/embeddings, one short input',
        'hybrid p50 ms': ms(bare.p50Us),
        'hybrid p99 ms': ms(bare.p99Us),
        note: 'the provider call each hybrid search makes to place its query, timed alone from this process',
      });
      rows.push({
        measure: `mailcairnd hybrid phases (${where})`,
        query: '',
        note:
          `peak RSS ${round(usage.peakRssMiB)} MiB over lexical, embedding and hybrid phases${peakReset ? '' : ' (lifetime peak: reset refused)'}; ` +
          `peak after the lexical phase ${round(lexicalRss)} MiB; messages ${stored}; mirror ${round(mirrorMs / 1000, 1)} s; ` +
          `embedding ${embedded.embeddedEmailCount}/${embedded.emailCount} emails in ${round(embedded.embedMs / 1000, 1)} s (activation ${embedded.outcome}, ${embedded.passages} passages); ` +
          `load average at start ${loadAtStart}, at end ${load}`,
      });
      rows.push(
        ...shapes.flatMap((shape, i) => [
          boundGoal(`${shape.name} (${where}): hybrid MCP p50 ≤ 15 ms`, hybrid[i]!.p50, 15, millis, lexical[i]!.p50),
          boundGoal(`${shape.name} (${where}): hybrid MCP p99 ≤ 50 ms`, hybrid[i]!.p99, 50, millis, lexical[i]!.p99),
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
  }
  return rows;
}
