/**
 * `mail-query.store-gauges`: the figures the store gauges export, read at
 * each metrics collection (docs/operations.md "Metrics"). A collection must
 * stay cheap at any mailbox size, so every count here is answered from an
 * index, never by reading message rows, let alone bodies:
 * - messages of a folder: a range of `messages_binding_state` (binding, state);
 * - not yet indexed: the partial index `messages_underived` (the derivation
 *   writer's queue, empty once caught up), grouped by binding;
 * - caught up at: the folder's retained runs (`sync_folder_runs_binding`);
 * - change journal: `jobs_by_type` for each account's total, the partial
 *   indexes `jobs_live_key` for the entries not ended (few) and `jobs_dropped`
 *   (migration 14) for the dropped ones; completed is what remains, so the
 *   ended entries, which are never deleted, are counted from an index alone;
 * - outbox: the covering index `outgoing_listing` (id, account, stage);
 * - embedding coverage: passages with a vector of the serving generation
 *   over the passages embedding works on, `count(*)`s SQLite answers from an index
 *   without decoding a row (a `count(DISTINCT message_id)` decodes every one:
 *   60 ms against 3 at 100,000 messages), unless a reindex holds vectors of
 *   another generation, where the serving one's are counted by a range;
 * - spend: one row of `embedding_spend` by its key.
 * bench/store-gauges.ts measures a collection at mailbox scale.
 *
 * Reads only, inside the task's read transaction. Importable by `task.ts`.
 */
import type { Database } from '../../runtime/store/open.ts';
import { many, one } from '../../runtime/store/rows.ts';
import { JOURNAL_STATES, type StoreGaugesReply, type StoreGaugesRequest } from './protocol/store-gauges.ts';
import { STAGES, type Stage } from '../../runtime/store/outbox/vocabulary.ts';
import { prepared } from './statements.ts';

type JournalState = (typeof JOURNAL_STATES)[number];

const sql = {
  binding: 'SELECT id FROM folder_bindings WHERE account_id = ? AND alias = ? AND retired_at IS NULL',
  messages: "SELECT count(*) AS n FROM messages WHERE binding_id = ? AND state IN ('stored', 'oversized', 'unreadable')",
  underived: `SELECT binding_id, count(*) AS n FROM messages INDEXED BY messages_underived
    WHERE account_id = ? AND parse_version IS NULL AND state = 'stored' GROUP BY binding_id`,
  caughtUp: "SELECT max(ended_at) AS at FROM sync_folder_runs WHERE binding_id = ? AND outcome = 'ok' AND has_more = 0",
  journalTotal: "SELECT account_id, count(*) AS n FROM jobs WHERE type = 'mailbox-change' GROUP BY account_id",
  journalLive: `SELECT account_id, state, attempt_count > 0 AS attempted, count(*) AS n FROM jobs INDEXED BY jobs_live_key
    WHERE state IN ('queued', 'running', 'dead') AND type = 'mailbox-change' GROUP BY 1, 2, 3`,
  journalDropped: "SELECT account_id, count(*) AS n FROM jobs WHERE state = 'dropped' AND type = 'mailbox-change' GROUP BY account_id",
  outbox: 'SELECT account_id, stage, count(*) AS n FROM outgoing_emails INDEXED BY outgoing_listing GROUP BY account_id, stage',
  serving: "SELECT id FROM embedding_generations WHERE state = 'serving'",
  passages: 'SELECT count(*) AS n FROM passages',
  passagesWithin: 'SELECT count(*) AS n FROM passages WHERE ordinal < ?',
  otherVectors:
    'SELECT EXISTS (SELECT 1 FROM passage_vectors WHERE generation_id < ?1) OR EXISTS (SELECT 1 FROM passage_vectors WHERE generation_id > ?1) AS other',
  allVectors: 'SELECT count(*) AS n FROM passage_vectors',
  vectorsOf: 'SELECT count(*) AS n FROM passage_vectors INDEXED BY passage_vectors_seq WHERE generation_id = ?',
  spent: 'SELECT characters FROM embedding_spend WHERE period_start = ?',
};

export function storeGauges(db: Database, request: StoreGaugesRequest): StoreGaugesReply {
  return {
    folders: request.scope.accounts.flatMap((account) => folderFigures(db, account.id, account.folders)),
    journal: journalFigures(
      db,
      request.scope.accounts.map((a) => a.id),
    ),
    outbox: outboxFigures(
      db,
      request.scope.accounts.map((a) => a.id),
    ),
    embeddingCoverage: coverage(db, request.passagesPerMessage),
    embeddingSpent:
      one<{ characters: number }>(prepared(db, sql.spent), [Math.floor(request.now / request.spendPeriodMs) * request.spendPeriodMs])?.characters ?? 0,
  };
}

function folderFigures(db: Database, account: string, aliases: readonly string[]): StoreGaugesReply['folders'] {
  const underived = new Map(many<{ binding_id: number; n: number }>(prepared(db, sql.underived), [account]).map((r) => [r.binding_id, r.n]));
  return [...new Set(aliases)].map((folder) => {
    const binding = one<{ id: number }>(prepared(db, sql.binding), [account, folder])?.id;
    if (binding === undefined) return { account, folder, messages: 0, unindexed: 0, caughtUpAt: null };
    return {
      account,
      folder,
      messages: one<{ n: number }>(prepared(db, sql.messages), [binding])?.n ?? 0,
      unindexed: underived.get(binding) ?? 0,
      caughtUpAt: one<{ at: number | null }>(prepared(db, sql.caughtUp), [binding])?.at ?? null,
    };
  });
}

/**
 * Per account and state, as the flag tool names them: queued never tried is
 * `pending`, running or retried `converging`, dead or dropped
 * `dead-lettered`, done `completed` (the total less the others, so the
 * ended entries, which only grow, are counted from an index alone).
 */
function journalFigures(db: Database, accounts: readonly string[]): StoreGaugesReply['journal'] {
  const counts = new Map(accounts.map((a) => [a, { pending: 0, converging: 0, completed: 0, 'dead-lettered': 0 } as Record<JournalState, number>]));
  const live = many<{ account_id: string; state: 'queued' | 'running' | 'dead'; attempted: number; n: number }>(prepared(db, sql.journalLive));
  for (const row of live) {
    const c = counts.get(row.account_id);
    if (c === undefined) continue;
    c[row.state === 'dead' ? 'dead-lettered' : row.state === 'running' || row.attempted === 1 ? 'converging' : 'pending'] += row.n;
  }
  for (const row of many<{ account_id: string; n: number }>(prepared(db, sql.journalDropped))) {
    const c = counts.get(row.account_id);
    if (c !== undefined) c['dead-lettered'] += row.n;
  }
  for (const row of many<{ account_id: string; n: number }>(prepared(db, sql.journalTotal))) {
    const c = counts.get(row.account_id);
    if (c !== undefined) c.completed = row.n - c.pending - c.converging - c['dead-lettered'];
  }
  return [...counts].flatMap(([account, c]) => JOURNAL_STATES.map((state) => ({ account, state, entries: c[state] })));
}

function outboxFigures(db: Database, accounts: readonly string[]): StoreGaugesReply['outbox'] {
  const counts = new Map(accounts.map((a) => [a, new Map<Stage, number>()]));
  for (const row of many<{ account_id: string; stage: Stage; n: number }>(prepared(db, sql.outbox))) counts.get(row.account_id)?.set(row.stage, row.n);
  return [...counts].flatMap(([account, c]) => STAGES.map((stage) => ({ account, stage, sends: c.get(stage) ?? 0 })));
}

/**
 * Of the passages of stored mail that embedding works on (each message's
 * first `perMessage`; null: all; a tombstoned message's are deleted with
 * it), the share with a vector of the serving generation. The embedding
 * actor embeds a message's passages together, so this is the share of
 * messages embedded, weighted by their passages. 1 when there is nothing to
 * embed; 0 with no generation serving. Vectors made under a higher bound
 * count too (the share is capped at 1).
 */
function coverage(db: Database, perMessage: number | null): number {
  const serving = one<{ id: number }>(prepared(db, sql.serving))?.id;
  if (serving === undefined) return 0;
  const passages =
    (perMessage === null ? one<{ n: number }>(prepared(db, sql.passages)) : one<{ n: number }>(prepared(db, sql.passagesWithin), [perMessage]))?.n ?? 0;
  if (passages === 0) return 1;
  const shared = one<{ other: number }>(prepared(db, sql.otherVectors), [serving])?.other === 1;
  const vectors = one<{ n: number }>(shared ? prepared(db, sql.vectorsOf) : prepared(db, sql.allVectors), shared ? [serving] : [])?.n ?? 0;
  return Math.min(1, vectors / passages);
}
