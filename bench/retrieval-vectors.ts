/**
 * Embedding for the `retrieval` scenario (bench/scenarios/retrieval.ts): the
 * stored passages as the product will send them, embedded by the local
 * USE-lite provider (each lane a provider with a model thread of its own)
 * or by an OpenAI-compatible provider,
 * with an on-disk cache so that a re-run does not embed the mailbox again;
 * and the throughput figures.
 *
 * The cache is `os.tmpdir()/mailcairn-retrieval-vectors/`, one file per
 * model and dimensions holding a vector per distinct text (by SHA-256): a
 * run with another character limit embeds only the texts that changed.
 * Progress goes to stderr. Bench code only.
 */
import { createHash } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, readFileSync, truncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalUseLite } from '../actors/embedding/local-use-lite.ts';
import { LOCAL_PASSAGES_PER_MESSAGE } from '../config/schema/embeddings.ts';
import type { EmbeddingProvider } from '../actors/embedding/provider.ts';
import type { Database } from '../runtime/store/open.ts';

const CHUNK = 128;
const CACHE_DIR = join(tmpdir(), 'mailcairn-retrieval-vectors');

/** One passage to embed: the text exactly as the product sends it (subject line first for a message's first passage). */
export type PassageText = { passageId: number; messageId: number; text: string };

/**
 * Passages embedded per message by the local model in this run: the
 * product's default (`LOCAL_PASSAGES_PER_MESSAGE`), or
 * `MAILCAIRN_BENCH_PASSAGES_PER_MESSAGE` (a number, or `all`) to compare.
 * Null: every passage.
 */
export function benchPassagesPerMessage(): number | null {
  const written = process.env.MAILCAIRN_BENCH_PASSAGES_PER_MESSAGE;
  if (written === undefined || written === '') return LOCAL_PASSAGES_PER_MESSAGE;
  if (written === 'all') return null;
  const n = Number(written);
  if (!Number.isInteger(n) || n < 1) throw new Error('MAILCAIRN_BENCH_PASSAGES_PER_MESSAGE: a whole number of 1 or more, or all');
  return n;
}

/**
 * Every passage of the binding's stored mail in id order, of each message its
 * first `perMessage` (null: all); the first of a message is prefixed with its
 * subject and a newline; each cut to `maxChars` when the provider has a limit
 * (the embedding actor cuts before it counts).
 */
export function passageTexts(db: Database, bindingId: number, maxChars: number | undefined, perMessage: number | null = null): PassageText[] {
  const rows = db
    .prepare(
      `SELECT p.id AS passageId, p.message_id AS messageId, p.ordinal AS ordinal, p.text AS text, m.subject AS subject
       FROM passages p JOIN messages m ON m.id = p.message_id
       WHERE m.binding_id = ? AND m.state = 'stored' AND p.ordinal < ? ORDER BY p.id`,
    )
    .all([bindingId, perMessage ?? 2 ** 31]) as Array<{ passageId: number; messageId: number; ordinal: number; text: string; subject: string | null }>;
  return rows.map((r) => {
    const subject = (r.subject ?? '').replace(/\s+/g, ' ').trim();
    const full = Number(r.ordinal) === 0 && subject !== '' ? `${subject}\n${r.text}` : r.text;
    return { passageId: Number(r.passageId), messageId: Number(r.messageId), text: maxChars === undefined ? full : full.slice(0, maxChars) };
  });
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/**
 * The cache of one model: a file of records, each the SHA-256 of a text
 * (32 bytes) and its vector. A record cut short by an interrupted run is
 * dropped on reading.
 */
class VectorLog {
  readonly file: string;
  private readonly record: number;
  readonly vectors = new Map<string, Float32Array>();

  constructor(tag: string, dims: number) {
    this.file = join(CACHE_DIR, `${sha256(`${tag}\0${dims}`).toString('hex').slice(0, 32)}.vectors`);
    this.record = 32 + dims * 4;
    if (!existsSync(this.file)) return;
    const buf = readFileSync(this.file);
    const whole = buf.length - (buf.length % this.record);
    if (whole !== buf.length) truncateSync(this.file, whole);
    for (let at = 0; at < whole; at += this.record) {
      const bytes = buf.subarray(at + 32, at + this.record);
      this.vectors.set(buf.subarray(at, at + 32).toString('hex'), new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length)));
    }
  }

  append(keys: readonly string[], vectors: readonly Float32Array[]): void {
    mkdirSync(CACHE_DIR, { recursive: true });
    const parts: Buffer[] = [];
    keys.forEach((key, i) => {
      const v = vectors[i]!;
      parts.push(Buffer.from(key, 'hex'), Buffer.from(v.buffer, v.byteOffset, v.byteLength));
      this.vectors.set(key, v);
    });
    appendFileSync(this.file, Buffer.concat(parts));
  }
}

/** Embeds chunks; answers vectors in order. */
export type Embedder = { embed(texts: readonly string[]): Promise<Float32Array[]>; close(): Promise<void> };

/**
 * The vectors of `texts`, from the cache of the model `tag` where present,
 * else computed by `embedder` (chunks of distinct texts run concurrently up
 * to `parallel`) and cached.
 */
export async function cachedVectors(
  tag: string,
  dims: number,
  texts: readonly string[],
  embedder: () => Embedder,
  parallel: number,
  label: string,
): Promise<{ vectors: Float32Array[]; computed: number; ms: number }> {
  const log = new VectorLog(tag, dims);
  const keys = texts.map((t) => sha256(t).toString('hex'));
  const wanted = new Map<string, string>();
  keys.forEach((key, i) => {
    if (!log.vectors.has(key)) wanted.set(key, texts[i]!);
  });
  const missing = [...wanted];
  const chunks: Array<Array<[string, string]>> = [];
  for (let i = 0; i < missing.length; i += CHUNK) chunks.push(missing.slice(i, i + CHUNK));
  const todo = missing.length;
  process.stderr.write(`${label}: ${texts.length} texts, ${todo} distinct texts to embed, the rest cached\n`);
  const started = performance.now();
  let done = 0;
  let next = 0;
  const lane = async (): Promise<void> => {
    const e = embedder();
    try {
      for (let c = chunks[next++]; c !== undefined; c = chunks[next++]) {
        const got = await e.embed(c.map(([, text]) => text));
        if (got.length !== c.length || got.some((v) => v.length !== dims)) throw new Error(`${label}: wrong vectors from the provider`);
        log.append(
          c.map(([key]) => key),
          got,
        );
        done += c.length;
        const s = (performance.now() - started) / 1000;
        process.stderr.write(`${label}: ${done}/${todo} in ${s.toFixed(0)} s (${(done / s).toFixed(1)} texts/s)\n`);
      }
    } finally {
      await e.close();
    }
  };
  if (todo > 0) await Promise.all(Array.from({ length: Math.min(parallel, chunks.length) }, lane));
  return { vectors: keys.map((key) => log.vectors.get(key)!), computed: todo, ms: todo === 0 ? 0 : performance.now() - started };
}

/** The local provider with one model thread of its own (its own model and tfjs), as the embedding actor runs each. */
export function localModel(maxInputCharacters?: number): Embedder {
  const provider = new LocalUseLite({ threads: 1, ...(maxInputCharacters === undefined ? {} : { maxInputCharacters }) });
  return { embed: (texts) => provider.embed(texts), close: () => provider.close() };
}

/** A provider in this thread, as an embedder of chunks (split into `batch`-sized calls). */
export function inThread(provider: EmbeddingProvider, batch: number): Embedder {
  return {
    async embed(texts) {
      const out: Float32Array[] = [];
      for (let i = 0; i < texts.length; i += batch) out.push(...(await provider.embed(texts.slice(i, i + batch))));
      return out;
    },
    close: async () => undefined,
  };
}

export type Throughput = { threads: number; texts: number; meanChars: number; wallS: number; textsPerS: number; textsPerCpuS: number };

/**
 * Texts per second of `threads` local providers (one model thread each) at once,
 * each embedding the same `texts` after a warm-up; per CPU-second from the
 * process's CPU time across the run (the model threads' own, since nothing
 * else in the process works meanwhile).
 */
export async function localThroughput(texts: readonly string[], threads: number): Promise<Throughput> {
  const providers = Array.from({ length: threads }, () => localModel());
  try {
    await Promise.all(providers.map((p) => p.embed(texts.slice(0, 4))));
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await Promise.all(providers.map((p) => p.embed(texts)));
    const wallS = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const cpuS = (cpu.user + cpu.system) / 1e6;
    const n = texts.length * threads;
    return {
      threads,
      texts: n,
      meanChars: Math.round(texts.reduce((s, t) => s + t.length, 0) / texts.length),
      wallS: Math.round(wallS * 10) / 10,
      textsPerS: Math.round((n / wallS) * 10) / 10,
      textsPerCpuS: Math.round((n / cpuS) * 10) / 10,
    };
  } finally {
    await Promise.all(providers.map((p) => p.close()));
  }
}
