/**
 * The ingest path's stages alone, in this thread, on PROFILE_MESSAGES
 * generated messages (default 3000, the `bench` profile): parse, SHA-256 of
 * the raw, structured clone of raws and of parse results (one thread hop
 * each), and storeBatch into a fresh file database (synchronous=FULL,
 * batches of 200) with its parts switched off one at a time by dropping
 * triggers or skipping rows: what each costs per MB.
 *
 *   npx tsc -p tsconfig.bench.json && node dist/bench/ingest-stages.js
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import Libsql from 'libsql';
import { parseMessage } from '../actors/mime-parse/parse-message.ts';
import type { ParseReply } from '../actors/mime-parse/protocol.ts';
import { reconcileAccounts } from '../runtime/store/accounts.ts';
import { syncBindings } from '../runtime/store/mailbox/bindings.ts';
import { storeBatch, type FetchedMessage } from '../runtime/store/mailbox/store-batch.ts';
import { migrate } from '../runtime/store/migrate.ts';
import { openStore } from '../runtime/store/open.ts';
import { generateMailbox } from '../test/harness/generator.ts';

const count = Number(process.env.PROFILE_MESSAGES ?? '3000');
const raws = [...generateMailbox({ seed: 42, count, profile: 'bench' })].map((m) => Buffer.from(m.raw));
const mb = raws.reduce((n, r) => n + r.length, 0) / 2 ** 20;
const out = (line: string): void => void process.stdout.write(`${line}\n`);
out(
  `${count} messages, ${mb.toFixed(0)} MB; load ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);

function timed<T>(name: string, f: () => T): T {
  const cpu = process.cpuUsage();
  const t0 = performance.now();
  const result = f();
  const ms = performance.now() - t0;
  const used = process.cpuUsage(cpu);
  out(
    `${name.padEnd(44)} wall ${ms.toFixed(0).padStart(6)} ms  CPU ${((used.user + used.system) / 1000).toFixed(0).padStart(6)} ms  ${(ms / mb).toFixed(2)} ms/MB`,
  );
  return result;
}

const replies: ParseReply[] = timed('parse', () => raws.map((r) => parseMessage(r, 'bench')));
timed('sha256 of raws', () => raws.map((r) => createHash('sha256').update(r).digest()));
timed('structuredClone raws (one hop)', () => raws.map((r) => structuredClone(r)));
timed('structuredClone parse replies (one hop)', () => replies.map((r) => structuredClone(r)));
const bodyMb = replies.reduce((n, r) => n + (r.ok ? r.message.bodyText.length + r.message.passages.reduce((k, p) => k + p.length, 0) : 0), 0) / 2 ** 20;
out(`body text + passages: ${bodyMb.toFixed(1)} M chars`);

type Variant = { name: string; setup?: string; parsed: boolean; raw: boolean; passages: boolean; sync?: 'Full' | 'Normal'; pageSize?: number };
const only = process.env.STAGES_ONLY;
const all: Variant[] = [
  { name: 'store: everything', parsed: true, raw: true, passages: true },
  { name: 'store: everything, synchronous=NORMAL', parsed: true, raw: true, passages: true, sync: 'Normal' },
  { name: 'store: no FTS index (trigger dropped)', setup: 'DROP TRIGGER search_documents_insert', parsed: true, raw: true, passages: true },
  { name: 'store: no passages', parsed: true, raw: true, passages: false },
  { name: 'store: no raw', parsed: true, raw: false, passages: true },
  { name: 'store: raw only (no parse results)', parsed: false, raw: true, passages: false },
  { name: 'store: everything, page_size 16384', parsed: true, raw: true, passages: true, pageSize: 16384 },
  { name: 'store: everything, page_size 65536', parsed: true, raw: true, passages: true, pageSize: 65536 },
  { name: 'store: raw only, page_size 65536', parsed: false, raw: true, passages: false, pageSize: 65536 },
  { name: 'store: everything, cache_size 16 MB', setup: 'PRAGMA cache_size = -16000', parsed: true, raw: true, passages: true },
  { name: 'store: everything, cache_size 8 MB', setup: 'PRAGMA cache_size = -8000', parsed: true, raw: true, passages: true },
  { name: 'store: everything, cache_size 4 MB', setup: 'PRAGMA cache_size = -4000', parsed: true, raw: true, passages: true },
];
const variants = only ? all.filter((v) => v.name.includes(only)) : all;
for (const v of variants) {
  const dir = mkdtempSync(join(tmpdir(), 'mailcairn-stages-'));
  try {
    if (v.pageSize) {
      const fresh = new Libsql(join(dir, 'mail.db'));
      fresh.pragma(`page_size = ${v.pageSize}`);
      fresh.exec('CREATE TABLE page_size_set (x); DROP TABLE page_size_set');
      fresh.close();
    }
    const db = openStore({ database: join(dir, 'mail.db'), busyTimeoutMs: 1000, synchronous: v.sync ?? 'Full', checkpoints: 'background' });
    migrate(db);
    reconcileAccounts(db, ['bench'], 1);
    const binding = syncBindings(db, 'bench', [{ alias: 'inbox', path: 'INBOX' }], 1)[0]!;
    if (v.setup) db.exec(v.setup);
    const messages: FetchedMessage[] = raws.map((raw, i) => {
      const r = replies[i]!;
      const parsed = v.parsed && r.ok ? { ...r.message, passages: v.passages ? r.message.passages : [] } : null;
      return {
        uid: i + 1,
        flags: [],
        keywords: [],
        modseq: null,
        internalDate: null,
        size: raw.length,
        state: 'stored',
        raw: v.raw ? raw : Buffer.alloc(1),
        parsed,
      };
    });
    let epoch: number | null = null;
    timed(v.name, () => {
      for (let i = 0; i < messages.length; i += 200) {
        const batch = messages.slice(i, i + 200);
        const res = storeBatch(db, {
          accountId: 'bench',
          bindingId: binding.id,
          uidValidity: 1,
          expectedEpoch: epoch,
          messages: batch,
          advanceTo: { lastUid: batch[batch.length - 1]!.uid, highestModseq: null },
          now: Date.now(),
        });
        if (!res.ok) throw new Error('refused');
        epoch = res.epoch;
      }
    });
    db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
