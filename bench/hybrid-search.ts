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
 *   BENCH_MESSAGES=50000 node --import tsx bench/search-engine.ts   # once, builds the store
 *   BENCH_MESSAGES=50000 node --import tsx bench/hybrid-search.ts [iterations=30]
 */
import { copyFileSync, existsSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { type QueryScope, SearchEmailsInput } from '../actors/mail-query/protocol.ts';
import { searchEmails } from '../actors/mail-query/search.ts';
import { syncBindings } from '../runtime/store/mailbox/bindings.ts';
import { beginGeneration, coverage, type PassageVector, promoteGeneration, writeVectors } from '../runtime/store/mailbox/vectors.ts';
import { migrate } from '../runtime/store/migrate.ts';
import { openStore } from '../runtime/store/open.ts';
import { many, one } from '../runtime/store/rows.ts';

const total = Number(process.env.BENCH_MESSAGES ?? 50_000);
const iterations = Number(process.argv[2] ?? 30);
const DIMENSIONS = 384;

const source = [7, 6].map((v) => join(tmpdir(), `mailcairn-search-engine-${total}-v${v}.db`)).find(existsSync);
if (source === undefined) throw new Error(`no store of ${total} messages: run bench/search-engine.ts with BENCH_MESSAGES=${total} first`);
const database = join(tmpdir(), `mailcairn-hybrid-search-${total}.db`);
for (const suffix of ['', '-wal', '-shm']) rmSync(database + suffix, { force: true });
copyFileSync(source, database);
const db = openStore({ database, busyTimeoutMs: 5_000, synchronous: 'Normal' });

let seed = 42;
function random(): number {
  seed = (seed * 1_103_515_245 + 12_345) >>> 0;
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
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!;
function timed(fn: () => unknown): { p50: number; p99: number } {
  for (let i = 0; i < 3; i++) fn();
  const samples: number[] = [];
  for (let i = 0; i < iterations; i++) {
    const t0 = performance.now();
    db.exec('BEGIN');
    try {
      fn();
    } finally {
      db.exec('COMMIT');
    }
    samples.push(performance.now() - t0);
  }
  samples.sort((a, b) => a - b);
  return { p50: Number(percentile(samples, 50).toFixed(2)), p99: Number(percentile(samples, 99).toFixed(2)) };
}

try {
  const setup = performance.now();
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
  const messages = one<{ n: number }>(db.prepare("SELECT count(*) AS n FROM messages WHERE state = 'stored'"))!.n;
  console.log(
    `${messages} stored messages, ${passages.length} passage vectors of ${DIMENSIONS} dims; setup ${((performance.now() - setup) / 1000).toFixed(0)} s; ` +
      `${iterations} iterations; load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
  );

  const all = [id('inbox'), id('small'), id('large')];
  const rows: Array<Record<string, unknown>> = [];
  for (const [name, bindingIds] of [
    ['whole mailbox', all],
    ['folder 20 %', [id('large')]],
    ['folder 1 %', [id('small')]],
  ] as const) {
    rows.push({ case: `coverage (store query), ${name}`, ...timed(() => coverage(db, generation, bindingIds)) });
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
      rows.push({ case: `lexical (degraded), ${shape}, ${name}`, ...timed(() => searchEmails(db, scope, input)) });
      rows.push({ case: `hybrid, ${shape}, ${name}`, ...timed(() => searchEmails(db, scope, input, { generation, vector: unitVector() })) });
    }
  }
  console.table(rows);
} finally {
  db.close();
  for (const suffix of ['', '-wal', '-shm']) rmSync(database + suffix, { force: true });
}
