/**
 * What one retention step costs the outbox's writer: 5,000 ended sends of
 * 50 KB with three recipients each, in a file store with synchronous=FULL,
 * erased 200 per step as the outbox actor does (actors/outbox/retention.ts).
 * A measurement, not a test:
 *
 *   node --import tsx bench/outbox-retention-steps.ts
 *
 * MAILCAIRN_BENCH_SENDS changes the count. Only the erasing steps are timed.
 * Figures are recorded in docs/reliability.md, "Outbox records under stewardship".
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { reconcileAccounts } from '../runtime/store/accounts.ts';
import { migrate } from '../runtime/store/migrate.ts';
import { openStore } from '../runtime/store/open.ts';
import { recordSend } from '../runtime/store/outbox/outgoing.ts';
import { eraseEndedSends } from '../runtime/store/outbox/retention.ts';
import { run } from '../runtime/store/rows.ts';

const SENDS = Number(process.env.MAILCAIRN_BENCH_SENDS ?? 5_000);
const STEP = 200;
const NO_CEILINGS = { periodMs: 1, perAccount: null, perCaller: null, perDeployment: null };

const dir = mkdtempSync(join(tmpdir(), 'mailcairn-retention-bench-'));
try {
  const db = openStore({ database: join(dir, 'store.db'), busyTimeoutMs: 1_000, synchronous: 'Full' });
  migrate(db);
  reconcileAccounts(db, ['alice'], 1);
  const raw = Buffer.alloc(50_000, 65);
  const recipients = [
    { address: 'p@example.org', header: 'to' as const },
    { address: 'q@example.org', header: 'cc' as const },
    { address: 'r@example.org', header: 'bcc' as const },
  ];
  for (let i = 0; i < SENDS; i++) {
    const send = { accountId: 'alice', requester: 'bench', idempotencyKey: `k${i}`, fingerprint: 'f', origin: 'new' as const, draftId: null };
    recordSend(db, { ...send, messageId: `<m${i}@example.org>`, envelopeFrom: 'a@example.org', raw, recipients, now: 1 }, NO_CEILINGS);
  }
  run(db.prepare("UPDATE outgoing_emails SET stage = 'Cancelled', ended_at = 5"));
  const times: number[] = [];
  for (;;) {
    const started = performance.now();
    const erased = eraseEndedSends(db, 10, STEP, 100);
    times.push(performance.now() - started);
    if (erased < STEP) break;
  }
  db.close();
  times.sort((a, b) => a - b);
  const median = times[times.length >> 1] ?? 0;
  const worst = times.at(-1) ?? 0;
  process.stdout.write(
    `${JSON.stringify({ sends: SENDS, mimeBytes: raw.length, step: STEP, steps: times.length, medianMs: +median.toFixed(1), worstMs: +worst.toFixed(1) })}\n`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
