/**
 * retrieval: recall@10 and MRR of `search_emails` over the labelled
 * evaluation set (bench/fixtures/retrieval-eval.json, docs/semantic-search.md
 * "Evaluation set"), per kind of query.
 *
 * The whole of `corpus/real/` and the set's generated mailboxes are stored in
 * one folder of a fresh database the way the sync actor and the derivation
 * writer store them (`storeBatch` with the parse), each message received at
 * its `Date` header (generated mail: its internal date), as the labels
 * assume. Each query runs through `searchEmails` in process with its filters
 * and 10 results.
 *
 * Only the lexical column exists so far: no embedding provider is wired in
 * yet (issue 15), so the vector and hybrid columns say so instead of a figure.
 * For `none` queries (nothing relevant) the row counts the queries that
 * answered anything at all.
 *
 *   npm run bench -- retrieval
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseMessage } from '../../actors/mime-parse/parse-message.ts';
import { decodeStoredEmailId, SearchEmailsInput, type QueryScope } from '../../actors/mail-query/protocol.ts';
import { searchEmails } from '../../actors/mail-query/search.ts';
import { reconcileAccounts } from '../../runtime/store/accounts.ts';
import { syncBindings } from '../../runtime/store/mailbox/bindings.ts';
import { storeBatch, type FetchedMessage } from '../../runtime/store/mailbox/store-batch.ts';
import { migrate } from '../../runtime/store/migrate.ts';
import { openStore, type Database } from '../../runtime/store/open.ts';
import { corpusAvailable, loadCorpus, withoutEnvelope } from '../../test/harness/corpus.ts';
import { generateMailbox } from '../../test/harness/generator.ts';
import { type EvalQuery, type EvalRef, loadEvalSet, QUERY_KINDS } from '../retrieval-eval.ts';
import type { Row, Scenario } from '../scenario.ts';

const ACCOUNT = 'eval';
const FOLDER = 'inbox';
const RESULTS = 10;
const scope: QueryScope = { accounts: [{ id: ACCOUNT, folders: [FOLDER] }] };

type Source = { key: string; raw: Buffer; receivedAt: number | null };

/** A reference's key: the same for the labels and for what is stored. */
function keyOf(ref: EvalRef): string {
  return ref.corpus === 'real' ? `real:${ref.path}` : `generated:${ref.mailbox}:${ref.messageId}`;
}

function sources(generated: Record<string, { seed: number; count: number; profile: 'small' | 'bench' }>): Source[] {
  const real = loadCorpus('real').map((m) => ({ key: `real:${m.name.replace(/^real\//, '')}`, raw: withoutEnvelope(m.raw), receivedAt: null }));
  const made = Object.entries(generated).flatMap(([name, g]) =>
    [...generateMailbox({ seed: g.seed, count: g.count, profile: g.profile })].map((m) => ({
      key: `generated:${name}:${m.messageId}`,
      raw: m.raw,
      receivedAt: m.internalDate.getTime(),
    })),
  );
  return [...real, ...made];
}

/** Stores every source in one folder; returns stored id → key. */
function store(db: Database, all: readonly Source[]): Map<number, string> {
  reconcileAccounts(db, [ACCOUNT], 1);
  const binding = syncBindings(db, ACCOUNT, [{ alias: FOLDER, path: 'INBOX' }], 1)[0]!;
  const keys: string[] = [];
  const batch: FetchedMessage[] = [];
  for (const s of all) {
    const reply = parseMessage(s.raw, ACCOUNT);
    if (!reply.ok) continue;
    keys.push(s.key);
    batch.push({
      uid: batch.length + 1,
      flags: [],
      keywords: [],
      modseq: null,
      internalDate: s.receivedAt ?? reply.message.sentAt,
      size: s.raw.length,
      state: 'stored',
      raw: s.raw,
      parsed: reply.message,
    });
  }
  const result = storeBatch(db, {
    accountId: ACCOUNT,
    bindingId: binding.id,
    uidValidity: 1,
    expectedEpoch: null,
    messages: batch,
    advanceTo: { lastUid: batch.length, highestModseq: null },
    now: Date.now(),
  });
  if (!result.ok) throw new Error('the evaluation mailbox was refused');
  const rows = db.prepare('SELECT id, uid FROM messages WHERE binding_id = ?').all([binding.id]) as Array<{ id: number; uid: number }>;
  return new Map(rows.map((r) => [Number(r.id), keys[Number(r.uid) - 1]!]));
}

type Scores = { queries: number; recall: number; reciprocal: number; answeredAny: number };

function lexical(db: Database, keys: Map<number, string>, q: EvalQuery): { recall: number; reciprocal: number; answered: number } {
  const input = SearchEmailsInput.parse({ queryText: q.query, ...(q.filters ?? {}), resultLimit: RESULTS });
  const ranked = searchEmails(db, scope, input).matches.map((m) => keys.get(decodeStoredEmailId(m.storedEmailId) ?? -1));
  const relevant = new Set(q.relevant.map(keyOf));
  const found = ranked.filter((k) => k !== undefined && relevant.has(k)).length;
  const first = ranked.findIndex((k) => k !== undefined && relevant.has(k));
  return { recall: relevant.size === 0 ? 0 : found / relevant.size, reciprocal: first === -1 ? 0 : 1 / (first + 1), answered: ranked.length };
}

export const retrieval: Scenario = {
  name: 'retrieval',
  description: 'recall@10 and MRR of search_emails over the labelled evaluation set, per kind of query (lexical; vector and hybrid once embeddings exist)',
  async run() {
    if (!corpusAvailable()) throw new Error('the shared corpus is not present (set MAILCAIRN_CORPUS)');
    const set = loadEvalSet();
    const dir = mkdtempSync(join(tmpdir(), 'mailcairn-retrieval-'));
    const db = openStore({ database: join(dir, 'eval.db'), busyTimeoutMs: 1_000, synchronous: 'Normal' });
    try {
      migrate(db);
      const keys = store(db, sources(set.generated));
      const scores = new Map<string, Scores>();
      for (const q of set.queries) {
        const s = scores.get(q.kind) ?? { queries: 0, recall: 0, reciprocal: 0, answeredAny: 0 };
        const r = lexical(db, keys, q);
        s.queries += 1;
        s.recall += r.recall;
        s.reciprocal += r.reciprocal;
        if (r.answered > 0) s.answeredAny += 1;
        scores.set(q.kind, s);
      }
      return QUERY_KINDS.map((kind): Row => {
        const s = scores.get(kind) ?? { queries: 0, recall: 0, reciprocal: 0, answeredAny: 0 };
        const none = kind === 'none';
        return {
          kind,
          queries: s.queries,
          mailbox: `${keys.size} messages`,
          'lexical recall@10': none ? null : round(s.recall / s.queries),
          'lexical MRR': none ? null : round(s.reciprocal / s.queries),
          'answered anything': `${s.answeredAny} of ${s.queries}`,
          vector: 'not built: no embedding provider wired in yet',
          hybrid: 'not built',
        };
      });
    } finally {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  },
};

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}
