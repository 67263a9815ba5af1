/**
 * Hybrid `search_emails` in process at mailbox scale (issue 15): the
 * 50,000-message store bench/search-engine.ts builds (generated mail, real
 * parser, real full-text index), copied, migrated, split into folders (1 %,
 * 20 %, the rest), and given a serving generation of random unit vectors
 * (384 dimensions) for every passage. Reports p50/p99 of `coverage` (what
 * each answer now carries) and of `searchEmails` lexical (degraded: a
 * generation serves, no query vector) and hybrid, whole mailbox and one
 * folder, in one read transaction each as a pool thread runs it.
 *
 * The vector half (actors/mail-query/vector-index.ts): the in-memory sign-bit
 * index's cold load (time, bytes per row), and per scope (the whole
 * mailbox, the two folders, a received range of about 2 % of the mail: the
 * sizes either side of `EXACT_SCOPE_ROWS`) p50/p99 of the
 * exact `nearestMessages` and of the index path (top 50 messages) with
 * recall@10 and recall@50 of the index against exact, for several
 * candidate counts (by Hamming distance alone, and the chosen pool narrowed
 * by the query's components), each on this connection and on a second one whose file
 * is memory-mapped as the query pool's are (actors/mail-query/task.ts),
 * query by query in turn (changing `mmap_size` on one connection remaps
 * it): on the random vectors (a hard case for sign bits), on a
 * second generation of clustered synthetic vectors (topics: a centroid plus
 * noise, cosine ≈ 0.7 to it), and, in memory, on the retrieval scenario's
 * cached real embeddings when `os.tmpdir()/mailcairn-retrieval-vectors/`
 * holds them (bench/retrieval-vectors.ts writes them during
 * `npm run bench -- retrieval`).
 *
 * The `searchEmails` rows run on the mapped connection, as the pool does.
 *
 * Env: BENCH_RECALL_QUERIES (default 30) queries per scope and case.
 *
 *   BENCH_MESSAGES=50000 node --import tsx bench/search-engine.ts   # once, builds the store
 *   BENCH_MESSAGES=50000 node --import tsx bench/hybrid-search.ts [iterations=30]
 */
import { copyFileSync, existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { SearchEmailsInput } from '../actors/mail-query/protocol/mail-reads.ts';
import type { QueryScope } from '../actors/mail-query/protocol/query-scope.ts';
import { searchEmails } from '../actors/mail-query/search.ts';
import { CANDIDATES_PER_RESULT, dropIndex, loadIndex, nearestMessagesFast, POOL_PER_CANDIDATE, SignatureIndex } from '../actors/mail-query/vector-index.ts';
import { syncBindings } from '../runtime/store/mailbox/bindings.ts';
import { beginGeneration, coverage, nearestMessages, type PassageVector, promoteGeneration, writeVectors } from '../runtime/store/mailbox/vectors.ts';
import { migrate } from '../runtime/store/migrate.ts';
import { migrations } from '../runtime/store/migrations/index.ts';
import { openStore } from '../runtime/store/open.ts';
import { many, one } from '../runtime/store/rows.ts';

const total = Number(process.env.BENCH_MESSAGES ?? 50_000);
const iterations = Number(process.argv[2] ?? 30);
const DIMENSIONS = 384;

// The store bench/search-engine.ts keeps for this schema, else an older one (migrated below).
const source = Array.from({ length: migrations.length }, (_, i) => migrations.length - i)
  .map((v) => join(tmpdir(), `mailcairn-search-engine-${total}-v${v}.db`))
  .find(existsSync);
if (source === undefined) throw new Error(`no store of ${total} messages: run bench/search-engine.ts with BENCH_MESSAGES=${total} first`);
// Per process: two runs at once must not share (and delete) one copy.
const database = join(tmpdir(), `mailcairn-hybrid-search-${total}-${process.pid}.db`);
for (const suffix of ['', '-wal', '-shm']) rmSync(database + suffix, { force: true });
copyFileSync(source, database);
const db = openStore({ database, busyTimeoutMs: 5_000, synchronous: 'Normal' });
/** The query pool's `MMAP_BYTES` (task.ts, not imported: importing it defines the pool task). */
const POOL_MMAP_BYTES = 2_147_418_112;
let mapped: ReturnType<typeof openStore> | undefined;

let seed = 42;
function random(): number {
  seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
  return seed / 2 ** 32;
}
function unitVector(): Float32Array<ArrayBuffer> {
  const v = new Float32Array(DIMENSIONS);
  let norm = 0;
  for (let i = 0; i < DIMENSIONS; i++) {
    v[i] = random() * 2 - 1;
    norm += v[i]! * v[i]!;
  }
  const n = Math.sqrt(norm);
  for (let i = 0; i < DIMENSIONS; i++) v[i] = v[i]! / n;
  return v;
}
function gaussian(): number {
  return Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
}
function normalised(v: Float32Array<ArrayBuffer>): Float32Array<ArrayBuffer> {
  let norm = 0;
  for (const x of v) norm += x * x;
  const n = Math.sqrt(norm);
  for (let i = 0; i < v.length; i++) v[i] = v[i]! / n;
  return v;
}
const TOPICS = 200;
const centroids = Array.from({ length: TOPICS }, () => unitVector());
/** A point of a random topic: its centroid plus noise of norm ≈ 1 (cosine ≈ 0.7 to the centroid). */
function clusteredVector(): Float32Array<ArrayBuffer> {
  const c = centroids[Math.floor(random() * TOPICS)]!;
  const v = new Float32Array(DIMENSIONS);
  for (let i = 0; i < DIMENSIONS; i++) v[i] = c[i]! + gaussian() / Math.sqrt(DIMENSIONS);
  return normalised(v);
}
const recallQueries = Number(process.env.BENCH_RECALL_QUERIES ?? 30);
/** Candidates per result (rescored in SQL), and the pool by sign bits per candidate (1: Hamming alone). */
const CANDIDATE_CASES = [
  { perResult: 20, pool: 1 },
  { perResult: 20, pool: 4 },
  { perResult: 10, pool: 8 },
  { perResult: 5, pool: 16 },
] as const;
const caseName = (c: { perResult: number; pool: number }): string =>
  c.pool === 1 ? `${c.perResult * 50} by Hamming` : `${c.perResult * c.pool * 50} by Hamming narrowed to ${c.perResult * 50}`;
const recall = (found: readonly number[], exact: readonly number[], k: number) => {
  const top = new Set(exact.slice(0, k));
  return found.slice(0, k).filter((id) => top.has(id)).length / Math.max(1, Math.min(k, exact.length));
};
const stats = (samples: number[]) => {
  const sorted = [...samples].sort((a, b) => a - b);
  return `${percentile(sorted, 50).toFixed(1)} / ${percentile(sorted, 99).toFixed(1)}`;
};

/** A scope of the vector rows: its name, its bindings and, for a received range, its bounds (ms). */
type VectorScope = readonly [string, readonly number[], { receivedFrom: number; receivedBelow: number }?];

/** Cold load, then exact vs index per scope: p50 / p99 ms and recall, top 50 messages. */
function vectorFigures(label: string, generationId: number, makeQuery: () => Float32Array, scopes: readonly VectorScope[]): void {
  dropIndex(db);
  const t0 = performance.now();
  const index = loadIndex(db, generationId)!;
  dropIndex(mapped!);
  loadIndex(mapped!, generationId);
  const loadMs = performance.now() - t0;
  console.log(
    `${label}: cold load ${(loadMs / 1000).toFixed(2)} s, ${index.rows} rows, ${(index.bytes / index.rows).toFixed(0)} bytes per row, ${(index.bytes / 2 ** 20).toFixed(1)} MiB`,
  );
  const rows: Array<Record<string, unknown>> = [];
  for (const [name, bindingIds, range] of scopes) {
    const queries = Array.from({ length: recallQueries }, makeQuery);
    const exactTimes: number[] = [];
    const exact = queries.map((queryVector) => {
      const t = performance.now();
      const found = db.transaction(() => nearestMessages(db, { generation: generationId, queryVector, bindingIds, limit: 50, ...range })).deferred();
      exactTimes.push(performance.now() - t);
      return found.map((m) => m.messageId);
    });
    rows.push({ scope: name, path: 'exact (SQL)', 'p50 / p99 ms': stats(exactTimes), 'recall@10': 1, 'recall@50': 1 });
    for (const c of CANDIDATE_CASES) {
      const paths = [
        [db, `index, ${caseName(c)}`],
        [mapped!, `index, ${caseName(c)}, mmap`],
      ] as const;
      const times = paths.map(() => [] as number[]);
      const r10 = paths.map(() => 0);
      const r50 = paths.map(() => 0);
      queries.forEach((queryVector, i) => {
        paths.forEach(([conn], p) => {
          const t = performance.now();
          const found = conn
            .transaction(() =>
              nearestMessagesFast(
                conn,
                { generation: generationId, queryVector, bindingIds, limit: 50, ...range },
                { candidatesPerResult: c.perResult, poolPerCandidate: c.pool, exactScopeRows: 0 },
              ),
            )
            .deferred();
          times[p]!.push(performance.now() - t);
          const ids = found.map((m) => m.messageId);
          r10[p]! += recall(ids, exact[i]!, 10);
          r50[p]! += recall(ids, exact[i]!, 50);
        });
      });
      for (const [p, [, path]] of paths.entries())
        rows.push({
          scope: name,
          path,
          'p50 / p99 ms': stats(times[p]!),
          'recall@10': Number((r10[p]! / queries.length).toFixed(3)),
          'recall@50': Number((r50[p]! / queries.length).toFixed(3)),
        });
    }
    // The in-memory half alone (the rest of the index path is the exact rescoring in SQL).
    const from = range?.receivedFrom ?? -1;
    const below = range?.receivedBelow ?? Number.MAX_SAFE_INTEGER;
    const scans = queries.map((queryVector) => {
      const t = performance.now();
      index.candidates(queryVector, { bindingIds, from, below }, 50 * CANDIDATES_PER_RESULT, 50 * CANDIDATES_PER_RESULT * POOL_PER_CANDIDATE);
      return performance.now() - t;
    });
    rows.push({
      scope: name,
      path: `signature scan alone, ${caseName({ perResult: CANDIDATES_PER_RESULT, pool: POOL_PER_CANDIDATE })}`,
      'p50 / p99 ms': stats(scans),
    });
  }
  console.table(rows);
}

/** The retrieval scenario's cached embeddings (512 dimensions), in memory: sign-bit candidates rescored exactly, against exact. */
function realVectorRecall(): void {
  const dir = join(tmpdir(), 'mailcairn-retrieval-vectors');
  if (!existsSync(dir)) return console.log('real embeddings: no cache in', dir);
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.vectors'))) {
    const buf = readFileSync(join(dir, file));
    const dims = [512, 384, 256, 768, 1024, 1536].find((d) => buf.length % (32 + 4 * d) === 0);
    if (dims === undefined) continue;
    const record = 32 + 4 * dims;
    const all: Float32Array[] = [];
    for (let at = 0; at + record <= buf.length; at += record)
      all.push(new Float32Array(buf.buffer.slice(buf.byteOffset + at + 32, buf.byteOffset + at + record)));
    const queries = all.splice(all.length - 200, 200);
    const index = new SignatureIndex(dims, all.length);
    for (const [i, v] of all.entries()) index.add({ passageId: i + 1, messageId: i + 1, bindingId: 1, received: 0, vector: new Uint8Array(v.buffer) });
    const cosine = (a: Float32Array, b: Float32Array) => {
      let dot = 0;
      let na = 0;
      let nb = 0;
      for (let i = 0; i < a.length; i++) {
        dot += a[i]! * b[i]!;
        na += a[i]! * a[i]!;
        nb += b[i]! * b[i]!;
      }
      return 1 - dot / Math.sqrt(na * nb);
    };
    const rows: Array<Record<string, unknown>> = [];
    for (const [count, pool] of [
      [250, 250],
      [250, 4000],
      [500, 500],
      [500, 2000],
      [500, 4000],
      [1000, 1000],
      [1000, 4000],
      [2000, 2000],
    ] as const) {
      let r10 = 0;
      let r50 = 0;
      for (const q of queries) {
        const exact = all
          .map((v, i) => ({ id: i + 1, d: cosine(q, v) }))
          .sort((a, b) => a.d - b.d)
          .slice(0, 50)
          .map((x) => x.id);
        const { passageIds } = index.candidates(q, { bindingIds: [1], from: -1, below: Number.MAX_SAFE_INTEGER }, count, pool);
        const found = passageIds
          .map((id) => ({ id, d: cosine(q, all[id - 1]!) }))
          .sort((a, b) => a.d - b.d)
          .slice(0, 50)
          .map((x) => x.id);
        r10 += recall(found, exact, 10);
        r50 += recall(found, exact, 50);
      }
      rows.push({
        candidates: count === pool ? `${count} by Hamming` : `${pool} by Hamming narrowed to ${count}`,
        'recall@10': Number((r10 / queries.length).toFixed(3)),
        'recall@50': Number((r50 / queries.length).toFixed(3)),
      });
    }
    console.log(`real embeddings (${file}): ${all.length} vectors of ${dims} dimensions, 200 held-out vectors as queries, top 50 passages`);
    console.table(rows);
  }
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!;
/** p50 / p99 of `fn`, in one read transaction each on the mapped connection (as a pool thread runs it). */
function timed(fn: () => unknown): { p50: number; p99: number } {
  const conn = mapped!;
  for (let i = 0; i < 3; i++) fn();
  const samples: number[] = [];
  for (let i = 0; i < iterations; i++) {
    const t0 = performance.now();
    conn.exec('BEGIN');
    try {
      fn();
    } finally {
      conn.exec('COMMIT');
    }
    samples.push(performance.now() - t0);
  }
  samples.sort((a, b) => a - b);
  return { p50: Number(percentile(samples, 50).toFixed(2)), p99: Number(percentile(samples, 99).toFixed(2)) };
}

try {
  const setup = performance.now();
  // A store built before 16 KiB pages (bench/search-engine.ts's may be) keeps its 4 KiB pages, on
  // which a 1,536-byte vector spills to an overflow page: convert the copy, as a new store is made.
  if (one<{ page_size: number }>(db.prepare('PRAGMA page_size'))!.page_size !== 16_384) {
    db.exec('PRAGMA journal_mode = DELETE');
    db.exec('PRAGMA page_size = 16384');
    db.exec('VACUUM');
    db.exec('PRAGMA journal_mode = WAL');
  }
  if (process.env.BENCH_MMAP !== undefined) db.exec(`PRAGMA mmap_size = ${Number(process.env.BENCH_MMAP)}`);
  migrate(db);
  // Folders as mail arrives: 1 % to `small`, 20 % to `large`, the rest stays in the inbox.
  const bindings = syncBindings(
    db,
    'bench',
    [
      { alias: 'inbox', path: 'INBOX' },
      { alias: 'small', path: 'Small' },
      { alias: 'large', path: 'Large' },
    ],
    1,
  );
  const id = (alias: string) => bindings.find((b) => b.alias === alias)!.id;
  db.exec(`UPDATE messages SET binding_id = ${id('small')} WHERE id % 100 = 0`);
  db.exec(`UPDATE messages SET binding_id = ${id('large')} WHERE id % 5 = 1`);
  const generation = beginGeneration(db, { provider: 'openai-compatible', model: 'random', dimensions: DIMENSIONS, distance: 'cosine' }, 1).id;
  promoteGeneration(db, generation, 1);
  const passages = many<{ id: number }>(db.prepare("SELECT p.id FROM passages p JOIN messages m ON m.id = p.message_id WHERE m.state = 'stored'")).map(
    (r) => r.id,
  );
  for (let i = 0; i < passages.length; i += 2000) {
    const batch: PassageVector[] = passages.slice(i, i + 2000).map((passageId) => ({ passageId, vector: unitVector() }));
    writeVectors(db, generation, batch);
  }
  db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
  mapped = openStore({ database, busyTimeoutMs: 5_000, synchronous: 'Normal' });
  mapped.pragma(`mmap_size = ${POOL_MMAP_BYTES}`);
  const messages = one<{ n: number }>(db.prepare("SELECT count(*) AS n FROM messages WHERE state = 'stored'"))!.n;
  console.log(
    `${messages} stored messages, ${passages.length} passage vectors of ${DIMENSIONS} dims; page size ${one<{ page_size: number }>(db.prepare('PRAGMA page_size'))!.page_size}, mmap ${process.env.BENCH_MMAP ?? 0}; setup ${((performance.now() - setup) / 1000).toFixed(0)} s; ` +
      `${iterations} iterations; load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
  );

  const all = [id('inbox'), id('small'), id('large')];
  // A received range holding about 2 % of the mail (about 1,000 messages, 5,000 rows at 50,000): a month or so of a large mailbox.
  const dates = many<{ d: number }>(
    db.prepare("SELECT internal_date AS d FROM messages WHERE state = 'stored' AND internal_date IS NOT NULL ORDER BY internal_date"),
  ).map((r) => r.d);
  const month = { receivedFrom: dates[Math.floor(dates.length * 0.5)]!, receivedBelow: dates[Math.floor(dates.length * 0.52)]! };
  const vectorScopes: VectorScope[] = [
    ['whole mailbox', all],
    ['folder 20 %', [id('large')]],
    ['folder 1 %', [id('small')]],
    ['received range 2 %', all, month],
  ];
  realVectorRecall();
  if (process.env.BENCH_SKIP_CLUSTERED === undefined) {
    const clustered = beginGeneration(db, { provider: 'openai-compatible', model: 'clustered', dimensions: DIMENSIONS, distance: 'cosine' }, 2).id;
    for (let i = 0; i < passages.length; i += 2000)
      writeVectors(
        db,
        clustered,
        passages.slice(i, i + 2000).map((passageId) => ({ passageId, vector: clusteredVector() })),
      );
    db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    vectorFigures('clustered synthetic vectors', clustered, clusteredVector, vectorScopes);
  }
  vectorFigures('random unit vectors', generation, unitVector, vectorScopes);
  // The hybrid rows below answer through the index, loaded (a pool thread loads it in the background).
  const pool = mapped!;
  loadIndex(pool, generation);
  const rows: Array<Record<string, unknown>> = [];
  for (const [name, bindingIds] of [
    ['whole mailbox', all],
    ['folder 20 %', [id('large')]],
    ['folder 1 %', [id('small')]],
  ] as const) {
    rows.push({ case: `coverage (store query), ${name}`, ...timed(() => coverage(pool, generation, bindingIds)) });
  }
  db.exec("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, 'search_index', 'row')");
  // A word in half or more of the mail (the costliest lexical walk is not this one: it stops after 50).
  const common = one<{ term: string }>(
    db.prepare("SELECT term FROM temp.vocab WHERE doc BETWEEN ? AND ? AND term GLOB '[a-z][a-z][a-z][a-z][a-z]*' ORDER BY doc DESC, term LIMIT 1"),
    [Math.floor(messages * 0.5), Math.floor(messages * 0.95)],
  )!.term;
  const scopes: Array<[string, QueryScope]> = [
    ['whole mailbox', { accounts: [{ id: 'bench', folders: ['inbox', 'small', 'large'] }] }],
    ['folder 20 %', { accounts: [{ id: 'bench', folders: ['large'] }] }],
    ['folder 1 %', { accounts: [{ id: 'bench', folders: ['small'] }] }],
  ];
  const sender = one<{ a: string }>(
    db.prepare("SELECT lower(json_extract(j.value, '$.address')) AS a FROM messages m, json_each(m.from_json) j WHERE m.id % 997 = 3 LIMIT 1"),
  )!.a;
  for (const [name, scope] of scopes) {
    for (const [shape, extra] of [
      ['word', { queryText: common }],
      ['word + sender', { queryText: common, senderAddress: sender }],
    ] as const) {
      const input = SearchEmailsInput.parse({ ...extra, resultLimit: 20 });
      rows.push({ case: `lexical (degraded), ${shape}, ${name}`, ...timed(() => searchEmails(pool, scope, input)) });
      rows.push({ case: `hybrid, ${shape}, ${name}`, ...timed(() => searchEmails(pool, scope, input, { generation, vector: unitVector() })) });
    }
  }
  console.table(rows);
} finally {
  mapped?.close();
  db.close();
  for (const suffix of ['', '-wal', '-shm']) rmSync(database + suffix, { force: true });
}
