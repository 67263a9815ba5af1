/**
 * Embedding for the `retrieval` scenario (bench/scenarios/retrieval.ts): the
 * stored passages as the product will send them, embedded by the local
 * USE-lite provider on worker threads or by an OpenAI-compatible provider,
 * with an on-disk cache so that a re-run does not embed the mailbox again;
 * and the throughput figures.
 *
 * The cache is `os.tmpdir()/mailcairn-retrieval-vectors/`, one file per
 * chunk of `CHUNK` texts, named by the SHA-256 of the provider id, the
 * dimensions and the chunk's texts: a changed text, limit or model misses.
 * Progress goes to stderr. Bench code only.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { EmbeddingProvider } from '../actors/embedding/provider.ts';
import type { Database } from '../runtime/store/open.ts';

const CHUNK = 128;
const CACHE_DIR = join(tmpdir(), 'mailcairn-retrieval-vectors');

/** One passage to embed: the text exactly as the product sends it (subject line first for a message's first passage). */
export type PassageText = { passageId: number; messageId: number; text: string };

/**
 * Every passage of the binding's stored mail in id order; the first of a
 * message is prefixed with its subject and a newline; each cut to `maxChars`
 * when the provider has a limit (the embedding actor cuts before it counts).
 */
export function passageTexts(db: Database, bindingId: number, maxChars: number | undefined): PassageText[] {
  const rows = db
    .prepare(
      `SELECT p.id AS passageId, p.message_id AS messageId, p.ordinal AS ordinal, p.text AS text, m.subject AS subject
       FROM passages p JOIN messages m ON m.id = p.message_id
       WHERE m.binding_id = ? AND m.state = 'stored' ORDER BY p.id`,
    )
    .all([bindingId]) as Array<{ passageId: number; messageId: number; ordinal: number; text: string; subject: string | null }>;
  return rows.map((r) => {
    const subject = (r.subject ?? '').replace(/\s+/g, ' ').trim();
    const full = Number(r.ordinal) === 0 && subject !== '' ? `${subject}\n${r.text}` : r.text;
    return { passageId: Number(r.passageId), messageId: Number(r.messageId), text: maxChars === undefined ? full : full.slice(0, maxChars) };
  });
}

function chunkFile(tag: string, dims: number, texts: readonly string[]): string {
  const h = createHash('sha256').update(`${tag}\0${dims}\0`);
  for (const t of texts) h.update(t).update('\0');
  return join(CACHE_DIR, `${h.digest('hex').slice(0, 32)}.f32`);
}

function readChunk(file: string, count: number, dims: number): Float32Array[] | undefined {
  if (!existsSync(file)) return undefined;
  const buf = readFileSync(file);
  if (buf.length !== count * dims * 4) return undefined;
  const all = new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length));
  return Array.from({ length: count }, (_, i) => all.subarray(i * dims, (i + 1) * dims));
}

function writeChunk(file: string, vectors: readonly Float32Array[]): void {
  mkdirSync(CACHE_DIR, { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, Buffer.concat(vectors.map((v) => Buffer.from(v.buffer, v.byteOffset, v.byteLength))));
  renameSync(tmp, file);
}

/** Embeds chunks; answers vectors in order. */
export type Embedder = { embed(texts: readonly string[]): Promise<Float32Array[]>; close(): Promise<void> };

/**
 * The vectors of `texts`, from the cache where present, else computed by
 * `embedder` (chunks run concurrently up to `parallel`) and cached.
 */
export async function cachedVectors(
  tag: string,
  dims: number,
  texts: readonly string[],
  embedder: () => Embedder,
  parallel: number,
  label: string,
): Promise<{ vectors: Float32Array[]; computed: number; ms: number }> {
  const chunks: Array<{ start: number; texts: string[]; file: string }> = [];
  for (let start = 0; start < texts.length; start += CHUNK) {
    const part = texts.slice(start, start + CHUNK);
    chunks.push({ start, texts: part, file: chunkFile(tag, dims, part) });
  }
  const vectors: Float32Array[] = new Array(texts.length);
  const missing = chunks.filter((c) => {
    const cached = readChunk(c.file, c.texts.length, dims);
    if (cached) for (const [i, v] of cached.entries()) vectors[c.start + i] = v;
    return !cached;
  });
  const todo = missing.reduce((n, c) => n + c.texts.length, 0);
  process.stderr.write(`${label}: ${texts.length - todo} of ${texts.length} vectors cached, ${todo} to embed\n`);
  if (todo === 0) return { vectors, computed: 0, ms: 0 };
  const started = performance.now();
  let done = 0;
  let next = 0;
  const lane = async (): Promise<void> => {
    const e = embedder();
    try {
      for (let c = missing[next++]; c !== undefined; c = missing[next++]) {
        const got = await e.embed(c.texts);
        if (got.length !== c.texts.length || got.some((v) => v.length !== dims)) throw new Error(`${label}: wrong vectors from the provider`);
        writeChunk(c.file, got);
        for (const [i, v] of got.entries()) vectors[c.start + i] = v;
        done += c.texts.length;
        const s = (performance.now() - started) / 1000;
        process.stderr.write(`${label}: ${done}/${todo} in ${s.toFixed(0)} s (${(done / s).toFixed(1)} texts/s)\n`);
      }
    } finally {
      await e.close();
    }
  };
  await Promise.all(Array.from({ length: Math.min(parallel, missing.length) }, lane));
  return { vectors, computed: todo, ms: performance.now() - started };
}

/** The local provider's module, as source (tsx) or compiled (dist/). */
const LOCAL_MODULE = new URL(`../actors/embedding/local-use-lite.${import.meta.url.endsWith('.ts') ? 'ts' : 'js'}`, import.meta.url).href;

/** A LocalUseLite on its own worker thread (its own model and tfjs), as the embedding actor would run it. */
export function localWorker(maxInputCharacters?: number): Embedder {
  const worker = new Worker(
    `const { parentPort, workerData } = require('node:worker_threads');
     import(workerData.module).then(({ LocalUseLite }) => {
       const provider = new LocalUseLite(workerData.max === undefined ? {} : { maxInputCharacters: workerData.max });
       parentPort.on('message', async (m) => {
         try { parentPort.postMessage({ id: m.id, vectors: await provider.embed(m.texts) }); }
         catch (e) { parentPort.postMessage({ id: m.id, error: String((e && e.code) || e) }); }
       });
       parentPort.postMessage({ ready: true });
     });`,
    { eval: true, workerData: { module: LOCAL_MODULE, max: maxInputCharacters } },
  );
  const ready = new Promise<void>((resolve, reject) => {
    worker.once('message', () => resolve());
    worker.once('error', reject);
  });
  let ids = 0;
  const pending = new Map<number, (m: { vectors?: Float32Array[]; error?: string }) => void>();
  worker.on('message', (m: { id?: number; vectors?: Float32Array[]; error?: string }) => {
    if (m.id !== undefined) pending.get(m.id)?.(m);
  });
  const ask = async (msg: Record<string, unknown>): Promise<{ vectors?: Float32Array[]; error?: string }> => {
    await ready;
    const id = ids++;
    return new Promise((resolve) => {
      pending.set(id, (m) => {
        pending.delete(id);
        resolve(m);
      });
      worker.postMessage({ ...msg, id });
    });
  };
  return {
    async embed(texts) {
      const m = await ask({ texts });
      if (m.error !== undefined || !m.vectors) throw new Error(`local worker: ${m.error ?? 'no vectors'}`);
      return m.vectors;
    },
    async close() {
      await worker.terminate();
    },
  };
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
 * Texts per second of the local provider on `threads` worker threads at once,
 * each embedding the same `texts` after a warm-up; per CPU-second from the
 * workers' own CPU time (process.cpuUsage in a worker is the process's, so
 * the delta is taken across the run while nothing else in it works).
 */
export async function localThroughput(texts: readonly string[], threads: number): Promise<Throughput> {
  const workers = Array.from({ length: threads }, () => localWorker());
  try {
    await Promise.all(workers.map((w) => w.embed(texts.slice(0, 4))));
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await Promise.all(workers.map((w) => w.embed(texts)));
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
    await Promise.all(workers.map((w) => w.close()));
  }
}
