/**
 * mime-parse: throughput of parseMessage (actors/mime-parse) on one thread
 * beside its peer measured in the same run on the same messages, mailparser's
 * `simpleParser`; then through the `mime-parse` pool of two threads (raw
 * moved, as the sync actor sends it); then the HTML reducer beside
 * html-to-text on the corpus's single-part HTML mails.
 *
 * Message sets: the real corpus (../shared/corpus/real, or
 * $MAILCAIRN_CORPUS/real) and, when test/harness/generator.ts is present, a
 * generated `bench` mailbox ($MAILCAIRN_BENCH_MESSAGES messages, default
 * 1000, ~63 KB average, attachments up to 5 MB). Goal: ≤ 0.5 ms per average
 * 63 KB message per core.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { simpleParser } from 'mailparser';
import { htmlToText } from '../../actors/mime-parse/html-text.ts';
import { parseMessage } from '../../actors/mime-parse/parse-message.ts';
import { MIME_PARSE_TASK, ParseReply } from '../../actors/mime-parse/protocol.ts';
import { createPool } from '../../runtime/pool/pool.ts';
import type { Row, Scenario } from '../scenario.ts';
import { round, summarize } from '../stats.ts';

type MessageSet = { name: string; raws: Buffer[] };

/** Parses before measuring: on one thread, by the peer, and through the pool (both threads). */
const WARM_OURS = 3_000;
const WARM_PEER = 600;
const WARM_POOL = 6_000;

/** The repository root, from bench/scenarios/ in the sources or dist/bench/scenarios/ when built. */
const repoRoot = fileURLToPath(new URL(import.meta.url.includes('/dist/') ? '../../../' : '../../', import.meta.url));

function corpusSet(): MessageSet | null {
  const dir = join(process.env.MAILCAIRN_CORPUS ?? join(repoRoot, '../shared/corpus'), 'real');
  if (!existsSync(dir)) return null;
  const raws: Buffer[] = [];
  const walk = (d: string): void => {
    for (const name of readdirSync(d).sort()) {
      const path = join(d, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.eml')) raws.push(readFileSync(path));
    }
  };
  walk(dir);
  return { name: 'real corpus', raws };
}

async function generatedSet(): Promise<MessageSet | null> {
  const source = join(repoRoot, 'test/harness/generator.ts');
  if (!existsSync(source)) return null;
  // The generator is test code, not part of the bench build: load it from source through tsx.
  const { register } = await import('tsx/esm/api');
  register();
  const { generateMailbox } = (await import(new URL(`file://${source}`).href)) as {
    generateMailbox(o: { seed: number; count: number; profile: 'bench' }): Iterable<{ raw: Buffer }>;
  };
  const count = Number(process.env.MAILCAIRN_BENCH_MESSAGES ?? 1000);
  const raws = [...generateMailbox({ seed: 20261122, count, profile: 'bench' })].map((m) => m.raw);
  return { name: `generated x${count}`, raws };
}

function megabytes(raws: Buffer[]): number {
  return raws.reduce((sum, r) => sum + r.byteLength, 0) / 1e6;
}

function row(set: MessageSet, parser: string, samplesMs: number[], wallMs: number, threads: number): Row {
  const s = summarize(samplesMs, wallMs);
  const mb = megabytes(set.raws);
  return {
    set: set.name,
    parser,
    threads,
    messages: set.raws.length,
    MB: round(mb),
    'msg/s': s.perSecond,
    'MB/s': round(mb / (wallMs / 1000)),
    'p50 µs': s.p50Us,
    'p99 µs': s.p99Us,
    'µs/msg/core': round(((wallMs * threads) / set.raws.length) * 1000, 0),
  };
}

function timeOurs(set: MessageSet): { samples: number[]; wall: number } {
  const samples: number[] = [];
  let wall = 0;
  for (const raw of set.raws) {
    const start = performance.now();
    const reply = parseMessage(raw, 'bench');
    const elapsed = performance.now() - start;
    if (reply.ok && reply.message.threadId.length !== 22) throw new Error('parseMessage returned a malformed reply');
    samples.push(elapsed);
    wall += elapsed;
  }
  return { samples, wall };
}

async function timePeer(set: MessageSet): Promise<{ samples: number[]; wall: number }> {
  const samples: number[] = [];
  let wall = 0;
  for (const raw of set.raws) {
    const start = performance.now();
    await simpleParser(raw).catch(() => null);
    const elapsed = performance.now() - start;
    samples.push(elapsed);
    wall += elapsed;
  }
  return { samples, wall };
}

/** Messages enough to warm the JIT (V8 needs a few thousand parses to settle): the set, repeated. */
function warmUp(set: MessageSet, count: number): MessageSet {
  const raws: Buffer[] = [];
  while (raws.length < count) raws.push(...set.raws.slice(0, count - raws.length));
  return { name: set.name, raws };
}

/**
 * All messages through a pool of two threads, 32 in flight, each raw copied
 * then moved; measured once both threads' JIT is warm.
 */
async function timePool(set: MessageSet): Promise<{ samples: number[]; wall: number }> {
  const pool = createPool({ id: 'mime-parse', entry: MIME_PARSE_TASK, minThreads: 2, maxThreads: 2 });
  try {
    const ask = async (raw: Buffer, into: number[] | null): Promise<void> => {
      const copy = new Uint8Array(raw);
      const start = performance.now();
      await pool.ask({ type: 'mime-parse.parse', account: 'bench', raw: copy }, { transfer: [copy.buffer], reply: ParseReply, deadlineMs: 60_000 });
      into?.push(performance.now() - start);
    };
    const pass = async (samples: number[] | null): Promise<number> => {
      const start = performance.now();
      let next = 0;
      const lane = async (): Promise<void> => {
        while (next < set.raws.length) await ask(set.raws[next++]!, samples);
      };
      await Promise.all(Array.from({ length: 32 }, lane));
      return performance.now() - start;
    };
    for (let warmed = 0; warmed < WARM_POOL; warmed += set.raws.length) await pass(null);
    const samples: number[] = [];
    const wall = await pass(samples);
    return { samples, wall };
  } finally {
    await pool.close();
  }
}

/** Single-part HTML mails whose body needs no transfer decoding: the reducer's input as is. */
function htmlBodies(set: MessageSet): string[] {
  const out: string[] = [];
  for (const raw of set.raws) {
    const text = raw.toString('latin1');
    const split = text.search(/\r?\n\r?\n/);
    if (split === -1) continue;
    const head = text.slice(0, split);
    if (/^content-type:\s*text\/html/im.test(head) && !/^content-transfer-encoding:\s*(base64|quoted)/im.test(head)) out.push(text.slice(split));
  }
  return out;
}

function timeHtml(bodies: string[], reduce: (html: string) => string, label: string): Row {
  for (const body of bodies.slice(0, 100)) reduce(body);
  const samples: number[] = [];
  let wall = 0;
  for (const body of bodies) {
    const start = performance.now();
    reduce(body);
    const elapsed = performance.now() - start;
    samples.push(elapsed);
    wall += elapsed;
  }
  const s = summarize(samples, wall);
  const mb = bodies.reduce((sum, b) => sum + b.length, 0) / 1e6;
  return {
    set: 'html bodies (real)',
    parser: label,
    threads: 1,
    messages: bodies.length,
    MB: round(mb),
    'msg/s': s.perSecond,
    'MB/s': round(mb / (wall / 1000)),
    'p50 µs': s.p50Us,
    'p99 µs': s.p99Us,
    'µs/msg/core': round((wall / bodies.length) * 1000, 0),
  };
}

type Convert = (html: string, options: object) => string;

/** html-to-text ships no types (it comes with mailparser): loaded by name, typed here. */
async function loadConvert(): Promise<Convert> {
  const name = 'html-to-text';
  return ((await import(name)) as { convert: Convert }).convert;
}

const htmlToTextOptions = {
  wordwrap: false as const,
  selectors: [
    { selector: 'a', options: { ignoreHref: true } },
    { selector: 'img', format: 'skip' },
  ],
};

export const mimeParse: Scenario = {
  name: 'mime-parse',
  description: 'parseMessage vs mailparser simpleParser (same messages, same run, one thread), a pool of 2, and the HTML reducer vs html-to-text',
  async run() {
    const sets = [corpusSet(), await generatedSet()].filter((s): s is MessageSet => s !== null);
    const rows: Row[] = [];
    for (const set of sets) {
      timeOurs(warmUp(set, WARM_OURS)); // also loads the charset tables iconv-lite builds lazily
      await timePeer(warmUp(set, WARM_PEER));
      const ours = timeOurs(set);
      const peer = await timePeer(set);
      const pooled = await timePool(set);
      rows.push(row(set, 'parseMessage', ours.samples, ours.wall, 1));
      rows.push(row(set, 'simpleParser (peer)', peer.samples, peer.wall, 1));
      rows.push(row(set, 'parseMessage, pool', pooled.samples, pooled.wall, 2));
    }
    const real = sets.find((s) => s.name === 'real corpus');
    if (real) {
      const bodies = htmlBodies(real);
      const convert = await loadConvert();
      rows.push(timeHtml(bodies, htmlToText, 'html-text.ts'));
      rows.push(timeHtml(bodies, (html) => convert(html, htmlToTextOptions), 'html-to-text (peer)'));
    }
    return rows;
  },
};
