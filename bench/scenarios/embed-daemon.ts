/**
 * embed-daemon: the semantic backfill as the service runs it with the local
 * model, and searches through /mcp meanwhile (issue 34, item 4: 50,000
 * messages within one hour on two cores, search p99 ≤ 100 ms during the
 * backfill).
 *
 * A private Dovecot holds `MAILCAIRN_BENCH_EMBED_MESSAGES` (default 1,000)
 * messages of issue 34's `realistic` shape; the compiled daemon mirrors them
 * with `Embeddings: Provider Local` declared (the model on its default
 * threads: one per core, at most two, below normal priority; the first
 * `Embeddings:PassagesPerMessage` passages of each message, the default
 * unless `MAILCAIRN_BENCH_PASSAGES_PER_MESSAGE` asks another or `all`). Then:
 *
 * 1. Searches before anything is activated (lexical, the machine otherwise
 *    idle): `search_emails` through /mcp, the search scenario's shapes in
 *    turn, one call at a time; the peer column of the rows below.
 * 2. `POST /api/admin/embeddings/activation`, and the status polled until
 *    every message is embedded: messages per wall second, the daemon's
 *    CPU-seconds (the kernel's accounting of the whole process) per message,
 *    and what that rate makes of 50,000 messages against one hour.
 * 3. Meanwhile the same searches, `SEARCH_PAUSE_MS` apart: p50 and p99
 *    as a client sees them, and how many were answered hybrid (each of those
 *    placed its query on a model thread busy with the backfill).
 *
 *   npm run bench -- embed-daemon
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startDovecot } from '../../test/harness/dovecot.ts';
import { generateMailbox } from '../../test/harness/generator.ts';
import { writeMaildir } from '../../test/harness/place-mail.ts';
import { trackDir } from '../../test/harness/processes.ts';
import { readStats } from '../peers/process-stats.ts';
import { benchPassagesPerMessage } from '../retrieval-vectors.ts';
import type { Scenario } from '../scenario.ts';
import { round } from '../stats.ts';
import { activateAndEmbed, startHybridDaemon } from './hybrid-daemon.ts';
import { callTool, chooseShapes, connectClient, type Daemon, ms, p, PASSWORD, RESULTS, sample, USER, waitForMirror } from './search.ts';
import { exitWhenInterrupted } from '../interrupted.ts';

const GOAL_MESSAGES = 50_000;
/** Between two searches during the backfill: a busy agent's pace (each hybrid search embeds its query on a model thread), not a load test. */
const SEARCH_PAUSE_MS = 250;
const SEARCHES_BEFORE = 60;

export const embedDaemon: Scenario = {
  name: 'embed-daemon',
  description:
    "the service's semantic backfill with the local model (messages per second, CPU per message, 50,000 against one hour) and search_emails p50/p99 through /mcp meanwhile",
  async run() {
    const total = Number(process.env.MAILCAIRN_BENCH_EMBED_MESSAGES ?? 1_000);
    const limitMs = Number(process.env.BENCH_EMBED_WAIT_MINUTES ?? '30') * 60_000;
    const dir = mkdtempSync(join(tmpdir(), 'mailcairn-bench-embed-'));
    trackDir(dir);
    const letGo = exitWhenInterrupted('embed-daemon');
    const log = (line: string): void => void process.stderr.write(`[embed-daemon] ${line}\n`);
    let daemon: Daemon | null = null;
    const dovecot = await startDovecot({ users: [{ user: USER, password: PASSWORD }] });
    try {
      log(`writing ${total} messages (realistic)`);
      await writeMaildir(dovecot, USER, 'INBOX', generateMailbox({ seed: 34, count: total, profile: 'realistic' }));
      // The service's default unless MAILCAIRN_BENCH_PASSAGES_PER_MESSAGE asks another (`all`: every passage a body makes, at most 64).
      const perMessage = benchPassagesPerMessage();
      const embeddedPassages = perMessage === null ? 'every passage of each message' : `the first ${perMessage} passage(s) of each message`;
      log(`mailcairnd mirroring; ${embeddedPassages} embedded`);
      const started = await startHybridDaemon(join(dir, 'mailcairn'), dovecot.port, {
        Embeddings: { Provider: 'Local', MaxInputCharactersPerPeriod: 100_000_000_000, PassagesPerMessage: perMessage ?? 64 },
      });
      daemon = started.daemon;
      const d = daemon;
      const { stored } = await waitForMirror(d, total);
      const shapes = await chooseShapes(d.database, null, stored);
      const argsOf = shapes.map((shape) => ({ queryText: shape.queryText, ...shape.filters, resultLimit: RESULTS }));
      const client = await connectClient(d.port, 'bench-embed-daemon');
      try {
        log('searches before activation');
        let turn = 0;
        const before = p(await sample(SEARCHES_BEFORE, 10, () => callTool(client, 'search_emails', argsOf[turn++ % argsOf.length]!).then(() => undefined)));

        log('activating; searching while the backfill runs');
        const loadAtStart = loadavg().map((l) => round(l, 1));
        const cpuBefore = readStats(d.pid)?.cpuMs ?? Number.NaN;
        const during: number[] = [];
        let hybrid = 0;
        let embedding = true;
        const searching = (async () => {
          while (embedding) {
            const t0 = performance.now();
            const answer = await callTool(client, 'search_emails', argsOf[turn++ % argsOf.length]!);
            during.push(performance.now() - t0);
            if (answer.retrievalMode === 'hybrid') hybrid++;
            await sleep(SEARCH_PAUSE_MS);
          }
        })();
        let embedded: Awaited<ReturnType<typeof activateAndEmbed>>;
        try {
          embedded = await activateAndEmbed(started.admin, d, null, limitMs, log);
        } finally {
          embedding = false;
          await searching;
        }
        const cpuS = ((readStats(d.pid)?.cpuMs ?? Number.NaN) - cpuBefore) / 1000;
        const wallS = embedded.embedMs / 1000;
        const perSecond = embedded.embeddedEmailCount / wallS;
        const hours = GOAL_MESSAGES / perSecond / 3_600;
        const s = p(during);
        const load = loadavg().map((l) => round(l, 1));
        return [
          {
            row: `messages embedded (${embedded.passages} passages forecast: ${embeddedPassages})`,
            goal: null,
            measured: embedded.embeddedEmailCount,
            peer: null,
            'met?': null,
          },
          { row: 'backfill wall seconds', goal: null, measured: round(wallS, 1), peer: null, 'met?': null },
          { row: 'messages per wall second', goal: null, measured: round(perSecond, 2), peer: null, 'met?': null },
          {
            row: 'daemon CPU-seconds per message during the backfill',
            goal: null,
            measured: round(cpuS / embedded.embeddedEmailCount, 4),
            peer: null,
            'met?': null,
          },
          {
            row: `${GOAL_MESSAGES} messages at this rate (hours)`,
            goal: 1,
            measured: round(hours, 2),
            peer: null,
            'met?': hours <= 1 ? 'yes' : 'no',
          },
          { row: `searches during the backfill (answered hybrid: ${hybrid})`, goal: null, measured: during.length, peer: null, 'met?': null },
          {
            row: 'search_emails p50 during the backfill, ms (peer: before activation)',
            goal: null,
            measured: ms(s.p50Us),
            peer: ms(before.p50Us),
            'met?': null,
          },
          {
            row: 'search_emails p99 during the backfill, ms (peer: before activation)',
            goal: 100,
            measured: ms(s.p99Us),
            peer: ms(before.p99Us),
            'met?': ms(s.p99Us) <= 100 ? 'yes' : 'no',
          },
          { row: `load average at the start / end: ${loadAtStart.join(' ')} / ${load.join(' ')}`, goal: null, measured: null, peer: null, 'met?': null },
        ];
      } finally {
        await client.close().catch(() => undefined);
      }
    } catch (err) {
      if (daemon !== null) log(`failed with mailcairnd ${daemon.state()}; its log ends:\n${daemon.logTail(30)}`);
      throw err;
    } finally {
      await daemon?.stop();
      await dovecot.stop();
      rmSync(dir, { recursive: true, force: true });
      letGo();
    }
  },
};
