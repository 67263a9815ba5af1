/**
 * What one metrics collection of the store gauges costs at mailbox scale
 * (`mail-query.store-gauges`, read on a query pool thread at each scrape):
 * a real database file with N messages over 2 accounts × 4 folders, each
 * with a subject, addresses and 3 passages, 2 % of them not derived yet,
 * every derived one embedded (384 dimensions) by the serving generation,
 * N/10 change-journal entries (most done, a few pending and dead) and N/50
 * sends. Reports p50/p99 of the collection (its read transaction included)
 * over repeated runs, warm (the pages in the OS cache), and the query plan
 * of each statement so a full scan shows.
 *
 *   node --import tsx bench/store-gauges.ts [messages=100000] [runs=50]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { storeGauges } from '../actors/mail-query/store-gauges.ts';
import { LOCAL_PASSAGES_PER_MESSAGE } from '../config/schema/embeddings.ts';
import { reconcileAccounts } from '../runtime/store/accounts.ts';
import { syncBindings } from '../runtime/store/mailbox/bindings.ts';
import { beginGeneration, promoteGeneration } from '../runtime/store/mailbox/vectors.ts';
import { migrate } from '../runtime/store/migrate.ts';
import { openStore } from '../runtime/store/open.ts';
import { many, one, run } from '../runtime/store/rows.ts';

const MESSAGES = Number(process.argv[2] ?? 100_000);
const RUNS = Number(process.argv[3] ?? 50);
const PASSAGES = 3;
const DIMENSIONS = 384;
const ACCOUNTS = ['alice', 'bob'];
const FOLDERS = ['inbox', 'archive', 'sent', 'lists'];

const dir = mkdtempSync(join(tmpdir(), 'mailcairn-gauges-'));
const database = join(dir, 'mail.db');
const db = openStore({ database, busyTimeoutMs: 1000, synchronous: 'Normal' });
try {
  migrate(db);
  reconcileAccounts(db, ACCOUNTS, 1);
  const bindings = ACCOUNTS.flatMap((account) =>
    syncBindings(
      db,
      account,
      FOLDERS.map((alias) => ({ alias, path: alias.toUpperCase() })),
      1,
    ).map((b) => ({ account, id: b.id })),
  );
  const generation = beginGeneration(db, { provider: 'bench', model: 'random', dimensions: DIMENSIONS, distance: 'cosine' }, 1);
  promoteGeneration(db, generation.id, 1);
  const vector = Buffer.alloc(DIMENSIONS * 4, 1);
  const insertMessage = db.prepare(
    `INSERT INTO messages (account_id, binding_id, uidvalidity, uid, state, internal_date, size, subject, from_json, to_json, parse_version, stored_at, updated_at)
     VALUES (?, ?, 1, ?, 'stored', ?, 40000, ?, ?, ?, ?, 1, 1)`,
  );
  const insertPassage = db.prepare(
    "INSERT INTO passages (message_id, ordinal, text, parse_version) VALUES (?, ?, 'a passage of the body, about this long', 1)",
  );
  const insertVector = db.prepare(
    'INSERT INTO passage_vectors (generation_id, passage_id, message_id, account_id, binding_id, received, vector) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  const insertJob = db.prepare(
    `INSERT INTO jobs (type, account_id, idempotency_key, payload, state, attempt_count, enqueued_at, due_at, ended_at, dead_lettered_at, dropped_at)
     VALUES ('mailbox-change', ?, ?, ?, ?, ?, 1, 1, 1, ?, ?)`,
  );
  const insertSend = db.prepare(
    `INSERT INTO outgoing_emails (account_id, requester, idempotency_key, fingerprint, origin, message_id, envelope_from, raw_mime, size_bytes, stage, due_at, recorded_at)
     VALUES (?, 'agent', ?, 'f', 'new', '<m@example.org>', 'alice@example.org', ?, 3000, ?, 1, 1)`,
  );
  const started = performance.now();
  db.transaction(() => {
    for (let n = 0; n < MESSAGES; n++) {
      const binding = bindings[n % bindings.length]!;
      const derived = n % 50 !== 7;
      const from = JSON.stringify([{ name: `Sender ${n % 997}`, address: `sender${n % 997}@example.org` }]);
      const subject = `Quarterly figures and the plan for the next review, number ${n}`;
      const id = Number(
        run(insertMessage, [binding.account, binding.id, n + 1, 1_600_000_000_000 + n * 60_000, subject, from, '[]', derived ? 1 : null]).lastInsertRowid,
      );
      if (!derived) continue;
      for (let p = 0; p < PASSAGES; p++) {
        const passage = Number(run(insertPassage, [id, p]).lastInsertRowid);
        run(insertVector, [generation.id, passage, id, binding.account, binding.id, n, vector]);
      }
    }
    const payload = JSON.stringify({ effect: { kind: 'set-seen', value: true }, messageId: 1, base: { flags: [], keywords: [] }, requester: 'agent' });
    for (let j = 0; j < MESSAGES / 10; j++) {
      const state = j % 500 === 0 ? 'queued' : j % 700 === 0 ? 'dead' : j % 900 === 0 ? 'dropped' : 'done';
      const ended = state === 'dead' || state === 'dropped' ? 1 : null;
      run(insertJob, [ACCOUNTS[j % 2]!, `mailbox-change:${j}`, payload, state, state === 'queued' ? 0 : 1, ended, state === 'dropped' ? 1 : null]);
    }
    const raw = Buffer.alloc(3000, 65);
    for (let s = 0; s < MESSAGES / 50; s++) run(insertSend, [ACCOUNTS[s % 2]!, `send-${s}`, raw, s % 40 === 0 ? 'Recorded' : 'Sent']);
  }).immediate();
  db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
  db.exec('ANALYZE');
  const filled = performance.now() - started;

  const request = {
    type: 'mail-query.store-gauges' as const,
    scope: { accounts: ACCOUNTS.map((id) => ({ id, folders: FOLDERS })) },
    spendPeriodMs: 86_400_000,
    now: Date.now(),
    // The local model's bound: the coverage counts passages by ordinal, the dearer of its two forms.
    passagesPerMessage: LOCAL_PASSAGES_PER_MESSAGE,
  };
  const collect = db.transaction(() => storeGauges(db, request));
  const first = performance.now();
  const reply = collect.deferred();
  const cold = performance.now() - first;
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    collect.deferred();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  const pct = (p: number) => times[Math.min(times.length - 1, Math.floor((times.length * p) / 100))]!.toFixed(2);
  const pages = one<{ n: number }>(db.prepare('SELECT page_count * page_size AS n FROM pragma_page_count(), pragma_page_size()'))!.n;
  console.log(`store: ${MESSAGES} messages, ${MESSAGES * PASSAGES} passage vectors (most), ${MESSAGES / 10} journal entries, ${MESSAGES / 50} sends;`);
  console.log(`  ${(pages / 2 ** 20).toFixed(0)} MiB, filled in ${(filled / 1000).toFixed(1)} s`);
  console.log(`collection: first ${cold.toFixed(2)} ms; p50 ${pct(50)} ms, p99 ${pct(99)} ms over ${RUNS} runs`);
  console.log(
    `  sample: ${JSON.stringify(reply.folders[0])}, coverage ${reply.embeddingCoverage.toFixed(3)}, journal ${JSON.stringify(reply.journal.slice(0, 4))}`,
  );
  // Every statement's plan: an index named on each line, and no `SCAN messages` / `SCAN passage_vectors` of the table itself.
  const statements = [
    "SELECT count(*) FROM messages WHERE binding_id = 1 AND state IN ('stored', 'oversized', 'unreadable')",
    "SELECT binding_id, count(*) FROM messages INDEXED BY messages_underived WHERE account_id = 'alice' AND parse_version IS NULL AND state = 'stored' GROUP BY binding_id",
    "SELECT max(ended_at) FROM sync_folder_runs WHERE binding_id = 1 AND outcome = 'ok' AND has_more = 0",
    "SELECT account_id, count(*) FROM jobs WHERE type = 'mailbox-change' GROUP BY account_id",
    "SELECT account_id, state, attempt_count > 0, count(*) FROM jobs INDEXED BY jobs_live_key WHERE state IN ('queued', 'running', 'dead') AND type = 'mailbox-change' GROUP BY 1, 2, 3",
    "SELECT account_id, count(*) FROM jobs WHERE state = 'dropped' AND type = 'mailbox-change' GROUP BY account_id",
    'SELECT account_id, stage, count(*) FROM outgoing_emails INDEXED BY outgoing_listing GROUP BY account_id, stage',
    'SELECT count(*) FROM passages',
    `SELECT count(*) FROM passages WHERE ordinal < ${LOCAL_PASSAGES_PER_MESSAGE}`,
    'SELECT EXISTS (SELECT 1 FROM passage_vectors WHERE generation_id < 1) OR EXISTS (SELECT 1 FROM passage_vectors WHERE generation_id > 1)',
    'SELECT count(*) FROM passage_vectors',
    'SELECT count(*) FROM passage_vectors INDEXED BY passage_vectors_seq WHERE generation_id = 1',
  ];
  for (const sql of statements) {
    const plan = many<{ detail: string }>(db.prepare(`EXPLAIN QUERY PLAN ${sql}`)).map((r) => r.detail);
    const statement = db.prepare(sql);
    const t0 = performance.now();
    for (let i = 0; i < 10; i++) many(statement);
    console.log(`  ${((performance.now() - t0) / 10).toFixed(2)} ms  ${plan.join(' | ')}`);
  }
} finally {
  db.close();
  rmSync(dir, { recursive: true, force: true });
}
