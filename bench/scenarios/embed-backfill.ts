/**
 * embed-backfill: what the semantic backfill of a mailbox costs with the
 * local model (issue 34, item 4: 50,000 messages within one hour on two
 * cores), from its factors, each measured:
 *
 * - passages per message and model runs per passage, for two generated
 *   mailboxes (`MAILCAIRN_BENCH_BACKFILL_MESSAGES`, default 2,000, seed 34):
 *   profile `bench` and issue 34's `realistic` shape, stored as the sync
 *   actor stores them; the texts the embedding actor would send read by its
 *   own query (`unembeddedSegment`, cut at the model's input bound), and how
 *   many of them are distinct once normalised (actors/embedding/repeats.ts):
 *   a repeat takes the vector of its first and costs no model run. The peer
 *   column counts identical texts only. The same for the retrieval
 *   scenario's evaluation mailbox (real corpus and generated mail), when the
 *   corpus is present: real mail repeats itself more than the generator's.
 *   And how many passages are almost wholly quoted lines.
 * - CPU-seconds per text: the provider on one model thread over
 *   `SAMPLE_TEXTS` distinct texts taken evenly through the `bench` mailbox,
 *   in calls of `Embeddings:BatchSize` (64) as the actor sends them, after a
 *   warm-up call (the process's CPU time, its model thread included).
 * - texts per wall second on the threads the service starts by default
 *   (`defaultLocalThreads`: one per core, at most two), the same calls one
 *   after another as the actor makes them; and what that rate makes of
 *   50,000 messages of each mailbox, against one hour (peer: one thread).
 *   Wall time moves with the machine's load: the load is printed with the
 *   run. The service's own figure, its actor and searches included, is
 *   embed-daemon's.
 *
 * What this does not measure: the actor's own work between calls (SQLite
 * reads and writes, hashing), and searches served meanwhile.
 *
 *   npm run bench -- embed-backfill
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { hashKey, textHash } from '../../actors/embedding/repeats.ts';
import { BATCH_TEXTS, LOCAL_DIMENSIONS, LOCAL_DISTANCE, LOCAL_MAX_INPUT_CHARACTERS, LOCAL_MODEL, LocalUseLite } from '../../actors/embedding/local-use-lite.ts';
import { defaultLocalThreads } from '../../config/schema/embeddings.ts';
import { unembeddedSegment } from '../../runtime/store/mailbox/embedding-work.ts';
import { beginGeneration } from '../../runtime/store/mailbox/vectors.ts';
import { migrate } from '../../runtime/store/migrate.ts';
import { type Database, openStore } from '../../runtime/store/open.ts';
import { corpusAvailable } from '../../test/harness/corpus.ts';
import { generateMailbox } from '../../test/harness/generator.ts';
import { loadEvalSet } from '../retrieval-eval.ts';
import type { Row, Scenario } from '../scenario.ts';
import { benchPassagesPerMessage } from '../retrieval-vectors.ts';
import { sources, store } from './retrieval.ts';

const GOAL_MESSAGES = 50_000;
const GOAL_SECONDS = 3_600;
const CORES = 2;
const SAMPLE_TEXTS = 256;
/** Passages per provider call: the schema's default `Embeddings:BatchSize`. */
const CALL_TEXTS = 64;

/** A generated mailbox, stored as the retrieval scenario stores its own (received at its internal date). */
function storeGenerated(db: Database, count: number, profile: 'bench' | 'realistic'): void {
  const generated = [...generateMailbox({ seed: 34, count, profile })];
  store(
    db,
    generated.map((m, i) => ({ key: `generated:backfill:${i}`, raw: m.raw, receivedAt: m.internalDate.getTime() })),
  );
}

/** `count` texts taken evenly through `texts`. */
function spread(texts: readonly string[], count: number): string[] {
  const step = Math.max(1, texts.length / count);
  return Array.from({ length: Math.min(count, texts.length) }, (_, i) => texts[Math.floor(i * step)]!);
}

/** CPU-seconds per text over `texts` sent in calls of `perCall` (a warm-up call first), on `threads` model threads; and texts per wall second. */
async function embedTimed(texts: readonly string[], perCall: number, threads: number): Promise<{ cpuPerText: number; perWallSecond: number }> {
  const model = new LocalUseLite({ threads });
  try {
    // Every thread loads its model before the clock starts.
    await model.embed(texts.slice(0, BATCH_TEXTS * threads));
    const before = process.cpuUsage();
    const started = performance.now();
    for (let i = 0; i < texts.length; i += perCall) await model.embed(texts.slice(i, i + perCall));
    const wallS = (performance.now() - started) / 1000;
    const used = process.cpuUsage(before);
    return { cpuPerText: (used.user + used.system) / 1e6 / texts.length, perWallSecond: texts.length / wallS };
  } finally {
    await model.close();
  }
}

const round = (x: number, places = 2): number => Math.round(x * 10 ** places) / 10 ** places;

type Passages = { messages: number; passages: number; distinctRaw: number; distinct: Map<string, string>; quoted: number };

const QUOTED_LINE = /^[ \t]*>/;
/** At least 90 % of its non-blank lines start with `>` (the first passage's subject line is one line of it). */
function mostlyQuoted(text: string): boolean {
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  return lines.length > 0 && lines.filter((l) => QUOTED_LINE.test(l)).length >= 0.9 * lines.length;
}

/** The texts the embedding actor would send for the whole store, and how many are distinct as sent and once normalised. */
function passagesToSend(db: Database): Passages {
  const generation = beginGeneration(db, { provider: 'local', model: LOCAL_MODEL, dimensions: LOCAL_DIMENSIONS, distance: LOCAL_DISTANCE }, Date.now());
  const segment = unembeddedSegment(db, generation.id, {
    afterMessageId: 0,
    maxMessages: Number.MAX_SAFE_INTEGER,
    maxCharacters: LOCAL_MAX_INPUT_CHARACTERS,
    passagesPerMessage: benchPassagesPerMessage(),
  });
  const distinct = new Map<string, string>();
  for (const p of segment.passages) {
    const key = hashKey(textHash(p.text));
    if (!distinct.has(key)) distinct.set(key, p.text);
  }
  return {
    messages: new Set(segment.passages.map((p) => p.messageId)).size,
    passages: segment.passages.length,
    distinctRaw: new Set(segment.passages.map((p) => p.text)).size,
    distinct,
    quoted: segment.passages.filter((p) => mostlyQuoted(p.text)).length,
  };
}

function repeatRows(label: string, p: Passages): Row[] {
  return [
    { row: `${label}: passages of ${p.messages} messages`, goal: null, measured: p.passages, peer: null, 'met?': null },
    {
      row: `${label}: model runs per passage (repeats reuse a vector)`,
      goal: null,
      measured: round(p.distinct.size / p.passages, 3),
      peer: round(p.distinctRaw / p.passages, 3),
      'met?': null,
    },
    { row: `${label}: passages ≥ 90 % quoted lines (\`>\`)`, goal: null, measured: p.quoted, peer: null, 'met?': null },
  ];
}

/** A mailbox's passages as the actor would send them, in a database of its own under `dir` (the evaluation mailbox is the retrieval scenario's: real corpus and its generated mail). */
function mailboxPassages(dir: string, name: string, fill: (db: Database) => void): Passages {
  const db = openStore({ database: join(dir, `${name}.db`), busyTimeoutMs: 1_000, synchronous: 'Normal' });
  try {
    migrate(db);
    fill(db);
    return passagesToSend(db);
  } finally {
    db.close();
  }
}

export const embedBackfill: Scenario = {
  name: 'embed-backfill',
  description:
    'semantic backfill with the local model: passages per message and model runs per passage (repeats embedded once; peer: identical texts only), CPU-seconds per text, texts per wall second on the default threads, and 50,000 messages against one hour',
  async run() {
    const count = Number(process.env.MAILCAIRN_BENCH_BACKFILL_MESSAGES ?? 2_000);
    const dir = mkdtempSync(join(tmpdir(), 'mailcairn-backfill-'));
    try {
      const generated = mailboxPassages(dir, 'bench', (db) => storeGenerated(db, count, 'bench'));
      const realistic = mailboxPassages(dir, 'realistic', (db) => storeGenerated(db, count, 'realistic'));
      const evaluation = corpusAvailable() ? mailboxPassages(dir, 'eval', (db) => store(db, sources(loadEvalSet().generated))) : null;
      const sample = spread([...generated.distinct.values()], SAMPLE_TEXTS);
      const one = await embedTimed(sample, CALL_TEXTS, 1);
      const threads = defaultLocalThreads();
      const wall = await embedTimed(sample, CALL_TEXTS, threads);
      const perCpu = 1 / one.cpuPerText;
      const neededPerCpu = (p: Passages) => (GOAL_MESSAGES * (p.passages / p.messages)) / GOAL_SECONDS / CORES;
      // Model runs for 50,000 messages of this mailbox (its passages per message, its repeats), at a rate of texts per second.
      const hours = (p: Passages, textsPerSecond: number) => (GOAL_MESSAGES * (p.distinct.size / p.messages)) / textsPerSecond / 3_600;
      const mailboxRows = (label: string, p: Passages): Row[] => [
        ...repeatRows(label, p),
        {
          row: `${label}: passages per CPU-second (repeats reuse a vector)`,
          goal: round(neededPerCpu(p), 1),
          measured: round(perCpu / (p.distinct.size / p.passages), 1),
          peer: round(perCpu, 1),
          'met?': perCpu / (p.distinct.size / p.passages) >= neededPerCpu(p) ? 'yes' : 'no',
        },
        {
          row: `${label}: ${GOAL_MESSAGES} messages at the measured rate on ${threads} thread(s) (hours)`,
          goal: 1,
          measured: round(hours(p, wall.perWallSecond)),
          peer: round(hours(p, one.perWallSecond)),
          'met?': hours(p, wall.perWallSecond) <= 1 ? 'yes' : 'no',
        },
      ];
      return [
        { row: 'CPU-seconds per text (one model thread)', goal: null, measured: round(one.cpuPerText, 4), peer: null, 'met?': null },
        {
          row: `texts per wall second on ${threads} model thread(s) (peer: one thread)`,
          goal: null,
          measured: round(wall.perWallSecond, 1),
          peer: round(one.perWallSecond, 1),
          'met?': null,
        },
        ...mailboxRows('generated', generated),
        ...mailboxRows('realistic', realistic),
        ...(evaluation === null ? [] : mailboxRows('evaluation mailbox', evaluation)),
      ];
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
