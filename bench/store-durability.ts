/**
 * What `synchronous=FULL` costs against NORMAL (both in WAL) for the writes
 * the sync actor makes: scenario `batch-200x20k` commits 200 messages of
 * 20 KB raw MIME plus the checkpoint advance in one transaction; scenario
 * `single-update` commits one small update per transaction (a flag change).
 * The two modes alternate round by round on fresh files so drift in the disk
 * hits both. Figures belong to the machine they ran on (docs/storage.md).
 *
 *   node --import tsx bench/store-durability.ts [--rounds 4] [--batches 10] [--dir /path/on/the/data/disk]
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHistogram, performance, type RecordableHistogram } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { migrate } from '../runtime/store/migrate.ts';
import { openStore, type Database } from '../runtime/store/open.ts';
import { run } from '../runtime/store/rows.ts';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '4' }, batches: { type: 'string', default: '10' }, dir: { type: 'string' } } });
const rounds = Number(values.rounds);
const batches = Number(values.batches);
const batchSize = 200;
const mimeBytes = 20 * 1024;
const modes = ['Full', 'Normal'] as const;
type Mode = (typeof modes)[number];

// Text-like, incompressible bodies; built once so hashing is not timed.
const bodies = Array.from({ length: batchSize }, () => {
  const mime = Buffer.from(`Subject: bench\r\n\r\n${randomBytes(mimeBytes).toString('base64')}`).subarray(0, mimeBytes);
  return { mime, sha256: createHash('sha256').update(mime).digest() };
});

const histograms = new Map<string, RecordableHistogram>();
function record(name: string, ms: number): void {
  let histogram = histograms.get(name);
  if (histogram === undefined) {
    histogram = createHistogram();
    histograms.set(name, histogram);
  }
  histogram.record(Math.max(1, Math.round(ms * 1000))); // microseconds
}

function setUp(dir: string, mode: Mode): Database {
  const db = openStore({ database: join(dir, `${mode}.db`), busyTimeoutMs: 5000, synchronous: mode });
  migrate(db);
  db.exec(`INSERT INTO accounts (id, created_at, updated_at) VALUES ('bench', 1, 1);
    INSERT INTO folder_bindings (account_id, alias, generation, remote_path, created_at) VALUES ('bench', 'inbox', 1, 'INBOX', 1);
    INSERT INTO checkpoints (binding_id, uidvalidity, highest_uid, advanced_at) VALUES (1, 1, 0, 1);`);
  return db;
}

function storeBatches(db: Database, mode: Mode): void {
  const message = db.prepare(
    "INSERT INTO messages (account_id, binding_id, uidvalidity, uid, state, size, stored_at, updated_at) VALUES ('bench', 1, 1, ?, 'stored', ?, ?, ?)",
  );
  const raw = db.prepare('INSERT INTO message_raw (message_id, mime, sha256, stored_at) VALUES (?, ?, ?, ?)');
  const advance = db.prepare('UPDATE checkpoints SET highest_uid = ?, advanced_at = ? WHERE binding_id = 1');
  let uid = 0;
  const storeBatch = db.transaction(() => {
    const now = Date.now();
    for (const body of bodies) {
      uid += 1;
      const id = run(message, [uid, body.mime.length, now, now]).lastInsertRowid;
      run(raw, [id, body.mime, body.sha256, now]);
    }
    run(advance, [uid, now]);
  });
  storeBatch(); // warm-up, not recorded
  for (let i = 0; i < batches; i += 1) {
    const started = performance.now();
    storeBatch.immediate();
    record(`batch-200x20k ${mode}`, performance.now() - started);
  }
  const flag = db.prepare('UPDATE messages SET flags = ?, updated_at = ? WHERE id = ?');
  for (let i = 0; i < batches * 10; i += 1) {
    const started = performance.now();
    run(flag, [i % 2 === 0 ? '["\\\\Seen"]' : '[]', Date.now(), 1 + (i % uid)]);
    record(`single-update ${mode}`, performance.now() - started);
  }
}

const dir = mkdtempSync(join(values.dir ?? tmpdir(), 'mailcairn-bench-'));
try {
  for (let round = 0; round < rounds; round += 1) {
    for (const mode of round % 2 === 0 ? modes : [...modes].reverse()) {
      const roundDir = mkdtempSync(join(dir, `${mode}-`));
      const db = setUp(roundDir, mode);
      storeBatches(db, mode);
      db.close();
      rmSync(roundDir, { recursive: true, force: true });
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const ms = (us: number) => (us / 1000).toFixed(2);
console.log(`scenario        mode    n    median ms  p95 ms   msgs/s (median)  MB/s (median)`);
for (const [name, histogram] of [...histograms].sort(([a], [b]) => a.localeCompare(b))) {
  const [scenario = '', mode = ''] = name.split(' ');
  const median = histogram.percentile(50);
  const perCommit = scenario.startsWith('batch') ? batchSize : 1;
  const rate = (perCommit / (median / 1e6)).toFixed(0);
  const mb = scenario.startsWith('batch') ? ((perCommit * mimeBytes) / (1024 * 1024) / (median / 1e6)).toFixed(1) : '-';
  console.log(
    `${scenario.padEnd(15)} ${mode.padEnd(7)} ${String(histogram.count).padEnd(4)} ${ms(median).padStart(9)}  ${ms(histogram.percentile(95)).padStart(7)}  ${rate.padStart(15)}  ${mb.padStart(13)}`,
  );
}
