/**
 * search-engine: `searchEmails` in process, per query shape, on a database
 * seeded directly (no IMAP, no daemon) so a 50,000-message index is built in
 * minutes and kept between runs.
 *
 *   npx tsc -p tsconfig.bench.json && node --expose-gc dist/bench/search-engine.js
 *
 * BENCH_MESSAGES (default 10000) generated messages (`bench` profile, seed
 * 42, as the search scenario), parsed in process by the real parser and
 * stored through storeBatch, 200 per transaction. The raw MIME stored is a
 * stand-in of a few bytes (search never reads it; it would cost 3 GB at
 * 50k). The database is kept at $TMPDIR/mailcairn-search-engine-<N>.db and
 * reused while its schema version matches; BENCH_REBUILD=1 forces a new one.
 *
 * Shapes as in bench/scenarios/search.ts (chosen from the index the same
 * way, without the notmuch agreement step). BENCH_ITERATIONS (default 200)
 * per shape, in one read transaction each, as a pool thread runs it; wall
 * p50/p99 and the p50 of the thread's CPU time (steadier on a shared machine).
 * BENCH_EXPLAIN=1 also prints each shape's plan.
 */
import { copyFileSync, existsSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import Libsql from 'libsql';
import { parseMessage } from '../actors/mime-parse/parse-message.ts';
import { SearchEmailsInput } from '../actors/mail-query/protocol/mail-reads.ts';
import type { QueryScope } from '../actors/mail-query/protocol/query-scope.ts';
import { searchEmails } from '../actors/mail-query/search.ts';
import { reconcileAccounts } from '../runtime/store/accounts.ts';
import { syncBindings } from '../runtime/store/mailbox/bindings.ts';
import { storeBatch, type FetchedMessage } from '../runtime/store/mailbox/store-batch.ts';
import { migrate } from '../runtime/store/migrate.ts';
import { migrations } from '../runtime/store/migrations/index.ts';
import { openStore, type Database } from '../runtime/store/open.ts';
import { generateMailbox } from '../test/harness/generator.ts';
import { subjectBigrams } from '../test/harness/generator-words.ts';
import { round, summarize } from './stats.ts';

const total = Number(process.env.BENCH_MESSAGES ?? 10_000);
const iterations = Number(process.env.BENCH_ITERATIONS ?? 200);
const schema = migrations.length;
const database = join(tmpdir(), `mailcairn-search-engine-${total}-v${schema}.db`);
const scope: QueryScope = { accounts: [{ id: 'bench', folders: ['inbox'] }] };

function build(): void {
  for (const suffix of ['', '-wal', '-shm']) rmSync(database + suffix, { force: true });
  const db = openStore({ database, busyTimeoutMs: 5_000, synchronous: 'Normal' });
  migrate(db);
  reconcileAccounts(db, ['bench'], 1);
  const binding = syncBindings(db, 'bench', [{ alias: 'inbox', path: 'INBOX' }], 1)[0]!.id;
  const started = performance.now();
  let epoch: number | null = null;
  let batch: FetchedMessage[] = [];
  let uid = 0;
  const flush = () => {
    const result = storeBatch(db, {
      accountId: 'bench',
      bindingId: binding,
      uidValidity: 1,
      expectedEpoch: epoch,
      messages: batch,
      advanceTo: { lastUid: uid, highestModseq: BigInt(uid) },
      now: Date.now(),
    });
    if (!result.ok) throw new Error('batch refused');
    epoch = result.epoch;
    batch = [];
  };
  for (const m of generateMailbox({ seed: 42, count: total, profile: 'bench' })) {
    uid++;
    const reply = parseMessage(m.raw, 'bench');
    batch.push({
      uid,
      flags: m.flags,
      keywords: [],
      modseq: BigInt(uid),
      internalDate: m.internalDate.getTime(),
      size: m.raw.length,
      state: reply.ok ? 'stored' : 'unreadable',
      raw: Buffer.from('stand-in'),
      parsed: reply.ok ? reply.message : null,
    });
    if (batch.length === 200) flush();
    if (uid % 5000 === 0) console.error(`seeded ${uid} in ${round((performance.now() - started) / 1000)} s`);
  }
  if (batch.length > 0) flush();
  db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
  db.close();
}

type Shape = { name: string; input: Record<string, unknown> };

function shapes(): Shape[] {
  const db = new Libsql(database, { readonly: true });
  try {
    db.exec("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, 'search_index', 'row')");
    const terms = (min: number, max: number, pattern: RegExp): string[] =>
      (db.prepare('SELECT term FROM temp.vocab WHERE doc BETWEEN ? AND ? ORDER BY doc DESC, term').all([min, max]) as Array<{ term: string }>)
        .map((r) => r.term)
        .filter((t) => pattern.test(t));
    const common = terms(Math.floor(total * 0.5), Math.floor(total * 0.95), /^[a-z]{5,}$/)[0]!;
    const rare = terms(3, 10, /^[a-z0-9]{4,}$/)[0]!;
    const bigram = subjectBigrams()[0]!;
    const sender = (
      db
        .prepare(
          `SELECT lower(json_extract(j.value, '$.address')) AS address, count(*) AS n FROM messages m, json_each(m.from_json) j
         WHERE m.state = 'stored' GROUP BY address ORDER BY n DESC, address LIMIT 1`,
        )
        .get() as { address: string }
    ).address;
    const dates = (db.prepare("SELECT internal_date AS d FROM messages WHERE state = 'stored' ORDER BY internal_date").all() as Array<{ d: number }>).map(
      (r) => r.d,
    );
    const lo = new Date(dates[Math.floor(dates.length * 0.45)]!).toISOString();
    const hi = new Date(dates[Math.floor(dates.length * 0.55)]!).toISOString();
    return [
      { name: 'common word', input: { queryText: common } },
      { name: 'rare word', input: { queryText: rare } },
      { name: 'phrase', input: { queryText: `"${bigram}"` } },
      { name: 'common word + sender', input: { queryText: common, senderAddress: sender } },
      { name: 'common word + date range', input: { queryText: common, receivedOnOrAfter: lo, receivedBefore: hi } },
      { name: 'common word + filters', input: { queryText: common, receivedOnOrAfter: lo, isSeen: true, hasAttachments: false } },
    ];
  } finally {
    db.close();
  }
}

function measure(db: Database, shape: Shape): { p50: number; p99: number; 'cpu p50': number; matches: number } {
  const input = SearchEmailsInput.parse({ ...shape.input, resultLimit: 20 });
  const once = () => {
    db.exec('BEGIN');
    try {
      return searchEmails(db, scope, input);
    } finally {
      db.exec('COMMIT');
    }
  };
  for (let i = 0; i < 5; i++) once();
  const samples: number[] = [];
  const cpu: number[] = [];
  let matches = 0;
  for (let i = 0; i < iterations; i++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    matches = once().matches.length;
    samples.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
  }
  const s = summarize(samples, 1);
  const c = summarize(cpu, 1);
  return { p50: round(s.p50Us / 1000, 3), p99: round(s.p99Us / 1000, 3), 'cpu p50': round(c.p50Us / 1000, 3), matches };
}

/** A database seeded at an earlier schema version, copied and migrated (a migration's cost is reported, not hidden). */
function migrated(): boolean {
  for (let version = schema - 1; version >= 1; version--) {
    const older = join(tmpdir(), `mailcairn-search-engine-${total}-v${version}.db`);
    if (!existsSync(older)) continue;
    copyFileSync(older, database);
    const db = openStore({ database, busyTimeoutMs: 5_000, synchronous: 'Normal' });
    const started = performance.now();
    migrate(db);
    console.error(`migrated a v${version} copy in ${round((performance.now() - started) / 1000)} s`);
    db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    db.close();
    return true;
  }
  return false;
}

if (process.env.BENCH_REBUILD === '1' || (!existsSync(database) && !migrated())) build();
const db = openStore({ database, busyTimeoutMs: 5_000, synchronous: 'Normal' });
const rows = shapes().map((shape) => ({ shape: shape.name, query: JSON.stringify(shape.input).slice(0, 80), ...measure(db, shape) }));
console.log(
  `messages ${total}, iterations ${iterations}, load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
console.table(rows);
db.close();
