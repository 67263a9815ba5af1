/**
 * embed-backfill: what the semantic backfill of a mailbox costs with the
 * local model (issue 34, item 4: 50,000 messages within one hour on two
 * cores), from its two factors, each measured:
 *
 * - model runs per passage: a generated mailbox (`MAILCAIRN_BENCH_BACKFILL_MESSAGES`,
 *   default 2,000, seed 34, profile `bench`) stored as the sync actor stores
 *   it; the texts the embedding actor would send read by its own query
 *   (`unembeddedSegment`, cut at the model's input bound), and how many of
 *   them are distinct once normalised (actors/embedding/repeats.ts): a repeat
 *   takes the vector of its first and costs no model run. The peer column
 *   counts identical texts only. The same for the retrieval scenario's
 *   evaluation mailbox (real corpus and generated mail), when the corpus is
 *   present: real mail repeats itself more than the generator's. And how
 *   many passages are almost wholly quoted lines: the most a rule leaving
 *   quoted text out could save (a model run costs the same whatever the
 *   length, so only whole passages saved count).
 * - CPU-seconds per model run: USE-lite in this thread (its only one: tfjs in
 *   Node has no WebAssembly threads) over the first 64 distinct texts, in
 *   batches of `BATCH_TEXTS`, after a warm-up batch (process CPU time).
 *
 * Passages per CPU-second is their quotient; the one-hour goal needs 50,000 ×
 * (passages per message) ÷ 3,600 passages/s from two cores, i.e. half that
 * per CPU-second. Wall time on a shared machine says little; CPU-seconds do.
 * What this does not measure: the actor's own overhead (SQLite reads and
 * writes, hashing), and searches served meanwhile.
 *
 *   npm run bench -- embed-backfill
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashKey, textHash } from '../../actors/embedding/repeats.ts';
import { BATCH_TEXTS, LOCAL_DIMENSIONS, LOCAL_DISTANCE, LOCAL_MAX_INPUT_CHARACTERS, LOCAL_MODEL, LocalUseLite } from '../../actors/embedding/local-use-lite.ts';
import { unembeddedSegment } from '../../runtime/store/mailbox/embedding-work.ts';
import { beginGeneration } from '../../runtime/store/mailbox/vectors.ts';
import { migrate } from '../../runtime/store/migrate.ts';
import { type Database, openStore } from '../../runtime/store/open.ts';
import { corpusAvailable } from '../../test/harness/corpus.ts';
import { generateMailbox } from '../../test/harness/generator.ts';
import { loadEvalSet } from '../retrieval-eval.ts';
import type { Row, Scenario } from '../scenario.ts';
import { sources, store } from './retrieval.ts';

const GOAL_MESSAGES = 50_000;
const GOAL_SECONDS = 3_600;
const CORES = 2;
const SAMPLE_TEXTS = 64;

/** The generated mailbox, stored as the retrieval scenario stores its own (received at its internal date). */
function storeGenerated(db: Database, count: number): void {
  const generated = [...generateMailbox({ seed: 34, count, profile: 'bench' })];
  store(
    db,
    generated.map((m, i) => ({ key: `generated:backfill:${i}`, raw: m.raw, receivedAt: m.internalDate.getTime() })),
  );
}

/** CPU-seconds of one model run, over `texts` in batches as the provider runs them (a warm-up batch first). */
async function cpuPerRun(texts: readonly string[]): Promise<number> {
  const model = new LocalUseLite();
  try {
    await model.embed(texts.slice(0, BATCH_TEXTS));
    const before = process.cpuUsage();
    for (let i = 0; i < texts.length; i += BATCH_TEXTS) await model.embed(texts.slice(i, i + BATCH_TEXTS));
    const used = process.cpuUsage(before);
    return (used.user + used.system) / 1e6 / texts.length;
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

/** The evaluation mailbox of the retrieval scenario (real corpus and its generated mailboxes), when the corpus is present. */
function evaluationMailbox(dir: string): Passages | null {
  if (!corpusAvailable()) return null;
  const db = openStore({ database: join(dir, 'eval.db'), busyTimeoutMs: 1_000, synchronous: 'Normal' });
  try {
    migrate(db);
    store(db, sources(loadEvalSet().generated));
    return passagesToSend(db);
  } finally {
    db.close();
  }
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

export const embedBackfill: Scenario = {
  name: 'embed-backfill',
  description:
    'semantic backfill with the local model: model runs per passage (repeats embedded once; peer: identical texts only), CPU-seconds per run, passages per CPU-second (peer: every passage embedded), and 50,000 messages on two cores against one hour',
  async run() {
    const count = Number(process.env.MAILCAIRN_BENCH_BACKFILL_MESSAGES ?? 2_000);
    const dir = mkdtempSync(join(tmpdir(), 'mailcairn-backfill-'));
    const db = openStore({ database: join(dir, 'backfill.db'), busyTimeoutMs: 1_000, synchronous: 'Normal' });
    try {
      migrate(db);
      storeGenerated(db, count);
      const generated = passagesToSend(db);
      const evaluation = evaluationMailbox(dir);
      const runsPerPassage = generated.distinct.size / generated.passages;
      const cpuRun = await cpuPerRun([...generated.distinct.values()].slice(0, SAMPLE_TEXTS));
      const perCpuBefore = 1 / cpuRun;
      const perCpuAfter = 1 / (cpuRun * runsPerPassage);
      const passagesPerMessage = generated.passages / generated.messages;
      const neededPerCpu = (GOAL_MESSAGES * passagesPerMessage) / GOAL_SECONDS / CORES;
      const hours = (perCpu: number) => (GOAL_MESSAGES * passagesPerMessage) / (perCpu * CORES) / 3_600;
      return [
        ...repeatRows('generated', generated),
        ...(evaluation === null ? [] : repeatRows('evaluation mailbox', evaluation)),
        { row: 'CPU-seconds per model run (USE-lite, one thread)', goal: null, measured: round(cpuRun, 3), peer: null, 'met?': null },
        {
          row: 'generated: passages per CPU-second',
          goal: round(neededPerCpu, 1),
          measured: round(perCpuAfter, 1),
          peer: round(perCpuBefore, 1),
          'met?': perCpuAfter >= neededPerCpu ? 'yes' : 'no',
        },
        {
          row: `generated: ${GOAL_MESSAGES} messages on ${CORES} cores, fully busy (hours)`,
          goal: 1,
          measured: round(hours(perCpuAfter)),
          peer: round(hours(perCpuBefore)),
          'met?': hours(perCpuAfter) <= 1 ? 'yes' : 'no',
        },
      ];
    } finally {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
