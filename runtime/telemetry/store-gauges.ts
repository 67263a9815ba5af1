/**
 * The gauges read from the store at each metrics collection (catalogue.ts:
 * messages, not yet indexed and freshness lag per account and folder, the
 * change journal per account and state, the outbox per account and stage,
 * embedding coverage and spend, the store's size). One batch callback on the
 * meter of the provider installed now: with telemetry off that is the API's
 * no-op meter, which never calls it, so registering costs nothing.
 *
 * The figures come from `read`, which the composition root points at the
 * query pool (the main thread runs no SQL); the size is two `stat`s of the
 * database file and its WAL. A read that fails observes nothing of the
 * store (one warning until a read succeeds again); the SDK then reports
 * each point's last value, except the freshness lag, which is observed
 * again from the last figures read, so that it keeps growing while the
 * store cannot be read rather than stand still.
 *
 * Labels are configured identifiers (account id, folder alias) and words of
 * fixed vocabularies (journal states, outbox stages), never mail content.
 *
 * Importable from service/ (the composition root) and tests.
 */
import type { BatchObservableResult, ObservableGauge } from '@opentelemetry/api';
import { stat } from 'node:fs/promises';
import type { Logger } from '../log.ts';
import { METRICS } from './catalogue.ts';
import { currentMeter } from './instruments.ts';

/** What the store holds, as the query pool reads it in one transaction (actors/mail-query/protocol/store-gauges.ts). */
export type StoreFigures = {
  readonly folders: ReadonlyArray<{ account: string; folder: string; messages: number; unindexed: number; caughtUpAt: number | null }>;
  readonly journal: ReadonlyArray<{ account: string; state: string; entries: number }>;
  readonly outbox: ReadonlyArray<{ account: string; stage: string; sends: number }>;
  readonly embeddingCoverage: number;
  readonly embeddingSpent: number;
};

export type StoreGaugeSources = {
  /** The store's figures at `now` (epoch ms). */
  read(now: number): Promise<StoreFigures>;
  /** The database file, whose size with its `-wal` is reported; null for a libSQL server (no file here). */
  file: string | null;
  log: Logger;
  now?: () => number;
};

export type StoreGauges = { close(): void };

const ACCOUNT = 'mailcairn.account';
const FOLDER = 'mailcairn.folder';

export function observeStoreGauges(sources: StoreGaugeSources): StoreGauges {
  const meter = currentMeter();
  const gauge = (def: (typeof METRICS)[keyof typeof METRICS]): ObservableGauge =>
    meter.createObservableGauge(def.name, { description: def.description, unit: def.unit });
  const g = {
    messages: gauge(METRICS.mailboxMessages),
    unindexed: gauge(METRICS.mailboxUnindexed),
    lag: gauge(METRICS.mailboxFreshnessLag),
    journal: gauge(METRICS.changeJournalEntries),
    outbox: gauge(METRICS.outboxSends),
    coverage: gauge(METRICS.embeddingCoverage),
    spent: gauge(METRICS.embeddingSpend),
    size: gauge(METRICS.storeSize),
  };
  const now = sources.now ?? Date.now;
  let failing = false;
  let last: StoreFigures | null = null;
  const observeLag = (result: BatchObservableResult, figures: StoreFigures, at: number): void => {
    for (const f of figures.folders) {
      // A folder never caught up has no lag to tell: its point is left out rather than made up.
      if (f.caughtUpAt !== null) result.observe(g.lag, Math.max(0, (at - f.caughtUpAt) / 1000), { [ACCOUNT]: f.account, [FOLDER]: f.folder });
    }
  };

  const collect = async (result: BatchObservableResult): Promise<void> => {
    const at = now();
    const [figures, size] = await Promise.all([
      sources.read(at).then(
        (f) => {
          failing = false;
          return f;
        },
        (err: unknown) => {
          if (!failing) sources.log.warn({ event: 'telemetry.store-read-failed', code: codeOf(err) }, 'telemetry.store-read-failed');
          failing = true;
          return null;
        },
      ),
      sources.file === null ? Promise.resolve(null) : storeBytes(sources.file),
    ]);
    if (size !== null) result.observe(g.size, size);
    if (figures === null) {
      if (last !== null) observeLag(result, last, at);
      return;
    }
    last = figures;
    for (const f of figures.folders) {
      const labels = { [ACCOUNT]: f.account, [FOLDER]: f.folder };
      result.observe(g.messages, f.messages, labels);
      result.observe(g.unindexed, f.unindexed, labels);
    }
    observeLag(result, figures, at);
    for (const j of figures.journal) result.observe(g.journal, j.entries, { [ACCOUNT]: j.account, 'mailcairn.state': j.state });
    for (const o of figures.outbox) result.observe(g.outbox, o.sends, { [ACCOUNT]: o.account, 'mailcairn.stage': o.stage });
    result.observe(g.coverage, figures.embeddingCoverage);
    result.observe(g.spent, figures.embeddingSpent);
  };
  const observables = Object.values(g);
  meter.addBatchObservableCallback(collect, observables);
  return { close: () => meter.removeBatchObservableCallback(collect, observables) };
}

/** The database file and its write-ahead log, in bytes; null when the file is not there. */
async function storeBytes(file: string): Promise<number | null> {
  const size = (path: string): Promise<number | null> =>
    stat(path).then(
      (s) => s.size,
      () => null,
    );
  const [db, wal] = await Promise.all([size(file), size(`${file}-wal`)]);
  return db === null ? null : db + (wal ?? 0);
}

/** A failure's code for the log line, never its message (it may quote a path or a query). */
function codeOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : 'E_INTERNAL';
}
