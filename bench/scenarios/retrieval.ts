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
 * Columns per kind of query:
 * - lexical: `searchEmails` with the query's filters.
 * - vector (local): vector search alone with the local USE-lite provider.
 *   Every stored passage is embedded as the embedding actor will send it
 *   (the first passage of a message prefixed with its subject and a newline,
 *   each cut to the provider's `maxInputCharacters`), written into a
 *   generation with `writeVectors`, and the query, embedded by the same
 *   provider, ranks messages with `nearestMessages` under the query's
 *   received range. `nearestMessages` does not filter by sender: for a query
 *   with `senderAddress` the bench reads the nearest 500 and keeps those with
 *   a From address equal to it (or in its @domain), as search will have to.
 * - vector (openai-compatible): the same with an OpenAI-compatible provider,
 *   only when `EMBEDDINGS_BASE_ADDRESS` is set (`EMBEDDINGS_MODEL`,
 *   `EMBEDDINGS_DIMENSIONS`, `EMBEDDINGS_API_KEY` as env names: the key is
 *   read from `env:EMBEDDINGS_API_KEY`).
 * - hybrid: `searchEmails` itself given the placed query (as the MCP layer
 *   passes what the embedding actor answers): both rankings under the
 *   query's filters, fused (actors/mail-query/search.ts).
 * For `none` queries (nothing relevant) the rows count the queries that
 * answered anything at all. Throughput rows follow: the local provider's
 * texts per second on one and on two worker threads (per wall second and
 * per CPU-second, i.e. per core), over the first 96 passages of ~800
 * characters; the OpenAI-compatible one's over the whole mailbox when it
 * was embedded in this run.
 *
 * Embedding the mailbox (~10,000 passages) with USE-lite takes minutes on
 * two threads (`MAILCAIRN_BENCH_EMBED_THREADS`, default 2); vectors are
 * cached under the system's temporary directory (bench/retrieval-vectors.ts)
 * and progress goes to stderr. `MAILCAIRN_BENCH_LOCAL_MAX_CHARS` embeds
 * with another character limit than the provider's default, to compare.
 * Of each message the local model embeds its first
 * `LOCAL_PASSAGES_PER_MESSAGE` passages, as the service does;
 * `MAILCAIRN_BENCH_PASSAGES_PER_MESSAGE` (a number or `all`) compares another.
 * A passage whose normalised text an earlier one has takes its vector, as
 * the embedding actor does (docs/semantic-search.md, "Repeated text");
 * `MAILCAIRN_BENCH_REPEATS=off` embeds every passage, to compare.
 *
 *   npm run bench -- retrieval
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashKey, textHash } from '../../actors/embedding/repeats.ts';
import { LOCAL_DIMENSIONS, LOCAL_DISTANCE, LOCAL_MAX_INPUT_CHARACTERS, LOCAL_MODEL, LocalUseLite } from '../../actors/embedding/local-use-lite.ts';
import { OpenAiCompatible } from '../../actors/embedding/openai-compatible.ts';
import type { EmbeddingProvider } from '../../actors/embedding/provider.ts';
import { parseMessage } from '../../actors/mime-parse/parse-message.ts';
import { SearchEmailsInput } from '../../actors/mail-query/protocol/mail-reads.ts';
import type { QueryScope } from '../../actors/mail-query/protocol/query-scope.ts';
import { decodeStoredEmailId } from '../../actors/mail-query/protocol/stored-email-id.ts';
import { searchEmails } from '../../actors/mail-query/search.ts';
import { reconcileAccounts } from '../../runtime/store/accounts.ts';
import { syncBindings } from '../../runtime/store/mailbox/bindings.ts';
import { storeBatch, type FetchedMessage } from '../../runtime/store/mailbox/store-batch.ts';
import { beginGeneration, type GenerationProfile, nearestMessages, promoteGeneration, writeVectors } from '../../runtime/store/mailbox/vectors.ts';
import { migrate } from '../../runtime/store/migrate.ts';
import { openStore, type Database } from '../../runtime/store/open.ts';
import { corpusAvailable, loadCorpus, withoutEnvelope } from '../../test/harness/corpus.ts';
import { generateMailbox } from '../../test/harness/generator.ts';
import { type EvalQuery, type EvalRef, loadEvalSet, QUERY_KINDS } from '../retrieval-eval.ts';
import {
  benchPassagesPerMessage,
  cachedVectors,
  type Embedder,
  inThread,
  localModel,
  localThroughput,
  passageTexts,
  type Throughput,
} from '../retrieval-vectors.ts';
import type { Row, Scenario } from '../scenario.ts';

const ACCOUNT = 'eval';
const FOLDER = 'inbox';
const RESULTS = 10;
const scope: QueryScope = { accounts: [{ id: ACCOUNT, folders: [FOLDER] }] };

export type Source = { key: string; raw: Buffer; receivedAt: number | null };

/** A reference's key: the same for the labels and for what is stored. */
export function keyOf(ref: EvalRef): string {
  return ref.corpus === 'real' ? `real:${ref.path}` : `generated:${ref.mailbox}:${ref.messageId}`;
}

export function sources(generated: Record<string, { seed: number; count: number; profile: 'small' | 'bench' }>): Source[] {
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

type Stored = { keys: Map<number, string>; bindingId: number; from: Map<number, string[]> };

/** Stores every source in one folder; returns stored id → key, the binding, and stored id → From addresses. */
export function store(db: Database, all: readonly Source[]): Stored {
  reconcileAccounts(db, [ACCOUNT], 1);
  const binding = syncBindings(db, ACCOUNT, [{ alias: FOLDER, path: 'INBOX' }], 1)[0]!;
  const keys: string[] = [];
  const senders: string[][] = [];
  const batch: FetchedMessage[] = [];
  for (const s of all) {
    const reply = parseMessage(s.raw, ACCOUNT);
    if (!reply.ok) continue;
    keys.push(s.key);
    senders.push(reply.message.from.map((a) => a.address.toLowerCase()));
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
  return {
    keys: new Map(rows.map((r) => [Number(r.id), keys[Number(r.uid) - 1]!])),
    bindingId: binding.id,
    from: new Map(rows.map((r) => [Number(r.id), senders[Number(r.uid) - 1]!])),
  };
}

type Scores = { queries: number; recall: number; reciprocal: number; answeredAny: number };
type Scored = { recall: number; reciprocal: number; answered: number };

function lexical(db: Database, keys: Map<number, string>, q: EvalQuery): Scored {
  const input = SearchEmailsInput.parse({ queryText: q.query, ...(q.filters ?? {}), resultLimit: RESULTS });
  const ranked = searchEmails(db, scope, input).matches.map((m) => keys.get(decodeStoredEmailId(m.storedEmailId) ?? -1));
  return score(q, ranked);
}

/** Recall of the relevant set in `ranked` (keys, best first), and the reciprocal rank of the first relevant. */
function score(q: EvalQuery, ranked: ReadonlyArray<string | undefined>): Scored {
  const relevant = new Set(q.relevant.map(keyOf));
  const found = ranked.filter((k) => k !== undefined && relevant.has(k)).length;
  const first = ranked.findIndex((k) => k !== undefined && relevant.has(k));
  return { recall: relevant.size === 0 ? 0 : found / relevant.size, reciprocal: first === -1 ? 0 : 1 / (first + 1), answered: ranked.length };
}

/** Read this many nearest messages when the sender must be filtered afterwards. */
const SENDER_DEPTH = 500;

function senderMatches(from: readonly string[] | undefined, wanted: string): boolean {
  const w = wanted.toLowerCase();
  return (from ?? []).some((a) => (w.startsWith('@') ? a.endsWith(w) : a === w));
}

type VectorRun = {
  label: string;
  scores: Map<string, Scores>;
  hybrid: Map<string, Scores>;
  embedded: { texts: number; chars: number; computed: number; ms: number };
};

/**
 * Embeds every passage with `provider` (or its worker lanes), writes a
 * generation, and scores each query by vector search alone.
 */
async function vectorRun(
  db: Database,
  stored: Stored,
  queries: readonly EvalQuery[],
  label: string,
  provider: EmbeddingProvider,
  profile: GenerationProfile,
  lanes: { embedder: () => Embedder; parallel: number },
): Promise<VectorRun> {
  // Of each message the passages the provider's generation embeds (the local model: its first few, config/schema/embeddings.ts).
  const perMessage = profile.provider === 'local' ? benchPassagesPerMessage() : null;
  const passages = passageTexts(db, stored.bindingId, provider.maxInputCharacters, perMessage);
  // As the embedding actor does (actors/embedding/repeats.ts): a passage whose normalised text an earlier one has takes its vector.
  const reuse = process.env.MAILCAIRN_BENCH_REPEATS !== 'off';
  const firstOf = new Map<string, number>();
  const sent: number[] = [];
  const vectorAt = passages.map((p, i) => {
    const key = hashKey(textHash(p.text));
    const first = firstOf.get(key);
    if (reuse && first !== undefined) return first;
    firstOf.set(key, sent.length);
    sent.push(i);
    return sent.length - 1;
  });
  const texts = sent.map((i) => passages[i]!.text);
  const { vectors, computed, ms } = await cachedVectors(provider.id, profile.dimensions, texts, lanes.embedder, lanes.parallel, label);
  const gen = beginGeneration(db, profile, Date.now());
  for (let i = 0; i < passages.length; i += 500) {
    writeVectors(
      db,
      gen.id,
      passages.slice(i, i + 500).map((p, j) => ({ passageId: p.passageId, vector: vectors[vectorAt[i + j]!]! })),
    );
  }
  promoteGeneration(db, gen.id, Date.now());
  const queryVectors = await provider.embed(
    queries.map((q) => (provider.maxInputCharacters === undefined ? q.query : q.query.slice(0, provider.maxInputCharacters))),
  );
  const scores = new Map<string, Scores>();
  const hybrid = new Map<string, Scores>();
  queries.forEach((q, i) => {
    // Hybrid: search_emails itself, given the placed query as the embedding actor gives it.
    const input = SearchEmailsInput.parse({ queryText: q.query, ...(q.filters ?? {}), resultLimit: RESULTS });
    const fused = searchEmails(db, scope, input, { generation: gen.id, vector: queryVectors[i]! });
    add(
      hybrid,
      q.kind,
      score(
        q,
        fused.matches.map((m) => stored.keys.get(decodeStoredEmailId(m.storedEmailId) ?? -1)),
      ),
    );
    const f = q.filters ?? {};
    const found = nearestMessages(db, {
      generation: gen.id,
      queryVector: queryVectors[i]!,
      bindingIds: [stored.bindingId],
      ...(f.receivedOnOrAfter === undefined ? {} : { receivedFrom: Date.parse(f.receivedOnOrAfter) }),
      ...(f.receivedBefore === undefined ? {} : { receivedBelow: Date.parse(f.receivedBefore) }),
      limit: f.senderAddress === undefined ? RESULTS : SENDER_DEPTH,
    });
    const sender = f.senderAddress;
    const kept = sender === undefined ? found : found.filter((m) => senderMatches(stored.from.get(m.messageId), sender));
    const r = score(
      q,
      kept.slice(0, RESULTS).map((m) => stored.keys.get(m.messageId)),
    );
    add(scores, q.kind, r);
  });
  return { label, scores, hybrid, embedded: { texts: texts.length, chars: texts.reduce((n, t) => n + t.length, 0), computed, ms } };
}

function add(scores: Map<string, Scores>, kind: string, r: Scored): void {
  const s = scores.get(kind) ?? { queries: 0, recall: 0, reciprocal: 0, answeredAny: 0 };
  s.queries += 1;
  s.recall += r.recall;
  s.reciprocal += r.reciprocal;
  if (r.answered > 0) s.answeredAny += 1;
  scores.set(kind, s);
}

function openAiFromEnv(): { provider: OpenAiCompatible; profile: GenerationProfile } | undefined {
  const baseAddress = process.env.EMBEDDINGS_BASE_ADDRESS;
  if (!baseAddress) return undefined;
  const model = process.env.EMBEDDINGS_MODEL ?? 'nomic-embed-text';
  const dimensions = Number(process.env.EMBEDDINGS_DIMENSIONS ?? 768);
  const provider = new OpenAiCompatible({
    baseAddress,
    model,
    dimensions,
    requestTimeoutMs: 120_000,
    ...(process.env.EMBEDDINGS_API_KEY ? { apiKeyRef: 'env:EMBEDDINGS_API_KEY' } : {}),
  });
  return { provider, profile: { provider: 'openai-compatible', model, dimensions, distance: 'cosine' } };
}

export const retrieval: Scenario = {
  name: 'retrieval',
  description:
    'recall@10 and MRR over the labelled evaluation set, per kind of query: lexical search_emails, vector search alone and hybrid search_emails (local USE-lite; OpenAI-compatible with EMBEDDINGS_BASE_ADDRESS); embedding throughput',
  async run() {
    if (!corpusAvailable()) throw new Error('the shared corpus is not present (set MAILCAIRN_CORPUS)');
    const set = loadEvalSet();
    const dir = mkdtempSync(join(tmpdir(), 'mailcairn-retrieval-'));
    const db = openStore({ database: join(dir, 'eval.db'), busyTimeoutMs: 1_000, synchronous: 'Normal' });
    try {
      migrate(db);
      const stored = store(db, sources(set.generated));
      const { keys } = stored;
      const scores = new Map<string, Scores>();
      for (const q of set.queries) add(scores, q.kind, lexical(db, keys, q));

      const threads = Math.max(1, Number(process.env.MAILCAIRN_BENCH_EMBED_THREADS ?? 2));
      const maxChars = Number(process.env.MAILCAIRN_BENCH_LOCAL_MAX_CHARS ?? LOCAL_MAX_INPUT_CHARACTERS);
      const local = new LocalUseLite({ maxInputCharacters: maxChars });
      const runs: VectorRun[] = [];
      try {
        runs.push(
          await vectorRun(
            db,
            stored,
            set.queries,
            'vector (local)',
            local,
            { provider: 'local', model: LOCAL_MODEL, dimensions: LOCAL_DIMENSIONS, distance: LOCAL_DISTANCE },
            { embedder: () => localModel(maxChars), parallel: threads },
          ),
        );
      } finally {
        await local.close();
      }
      const remote = openAiFromEnv();
      if (remote) {
        try {
          runs.push(
            await vectorRun(db, stored, set.queries, 'vector (openai-compatible)', remote.provider, remote.profile, {
              embedder: () => inThread(remote.provider, 32),
              parallel: 2,
            }),
          );
        } finally {
          await remote.provider.close();
        }
      }

      const rows = QUERY_KINDS.map((kind): Row => {
        const s = scores.get(kind) ?? { queries: 0, recall: 0, reciprocal: 0, answeredAny: 0 };
        const none = kind === 'none';
        const row: Row = {
          kind,
          queries: s.queries,
          mailbox: `${keys.size} messages`,
          'lexical recall@10': none ? null : round(s.recall / s.queries),
          'lexical MRR': none ? null : round(s.reciprocal / s.queries),
          'lexical answered anything': `${s.answeredAny} of ${s.queries}`,
        };
        for (const r of runs) {
          const v = r.scores.get(kind) ?? { queries: 0, recall: 0, reciprocal: 0, answeredAny: 0 };
          row[`${r.label} recall@10`] = none ? null : round(v.recall / v.queries);
          row[`${r.label} MRR`] = none ? null : round(v.reciprocal / v.queries);
          row[`${r.label} answered anything`] = `${v.answeredAny} of ${v.queries}`;
          const h = r.hybrid.get(kind) ?? { queries: 0, recall: 0, reciprocal: 0, answeredAny: 0 };
          const named = r.label.replace('vector', 'hybrid');
          row[`${named} recall@10`] = none ? null : round(h.recall / h.queries);
          row[`${named} MRR`] = none ? null : round(h.reciprocal / h.queries);
          row[`${named} answered anything`] = `${h.answeredAny} of ${h.queries}`;
        }
        if (!remote) row['vector (openai-compatible)'] = 'not run: EMBEDDINGS_BASE_ADDRESS unset';
        return row;
      });

      // Throughput of the local provider: the first 96 passages of the mailbox cut as sent (~800 characters).
      const sample = passageTexts(db, stored.bindingId, LOCAL_MAX_INPUT_CHARACTERS)
        .map((p) => p.text)
        .filter((t) => t.length >= LOCAL_MAX_INPUT_CHARACTERS * 0.8)
        .slice(0, 96);
      const measured: Throughput[] = [];
      for (const n of [1, 2]) {
        process.stderr.write(`throughput: local provider, ${n} model thread(s)\n`);
        measured.push(await localThroughput(sample, n));
      }
      for (const m of measured) {
        rows.push({
          kind: `throughput: local, ${m.threads} thread${m.threads === 1 ? '' : 's'}`,
          texts: m.texts,
          'mean characters': m.meanChars,
          'texts/s': m.textsPerS,
          'texts/s per core (CPU-s)': m.textsPerCpuS,
          'speed-up': round(m.textsPerS / measured[0]!.textsPerS),
        });
      }
      for (const r of runs) {
        if (r.embedded.computed === 0) continue;
        rows.push({
          kind: `embedding the mailbox: ${r.label}`,
          texts: r.embedded.computed,
          'mean characters': Math.round(r.embedded.chars / r.embedded.texts),
          'texts/s': Math.round((r.embedded.computed / (r.embedded.ms / 1000)) * 10) / 10,
        });
      }
      return rows;
    } finally {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  },
};

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}
