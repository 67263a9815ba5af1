/**
 * The shape of the tree (docs/architecture.md), read from the import graph
 * of the sources and bench/ (rules.ts states each rule; rules.test.ts shows
 * each one reporting a graph that breaks it):
 *
 * - the reader found the tree: floors under the modules and imports read,
 *   so no rule passes on an empty or half-read graph;
 * - layers: bin → service → http | cli → actors → runtime, with config
 *   beside runtime; http and cli never import each other; source never
 *   imports test/ or bench/;
 * - actors: outside an actor's folder only its `protocol.ts` is imported or
 *   named by URL;
 * - protocols are leaves: loading one loads no package but zod and Node's
 *   own, and of actors/ only contract modules (never handler code);
 * - no cycle between contract modules (protocols and the schema-only
 *   modules they are made of);
 * - bench/ imports itself, test/helpers/, test/harness/, runtime/, config/
 *   and actors' protocol.ts; an actor's internals only where a benchmark
 *   measures them, each such import listed below; and it starts the
 *   compiled daemon in one module, bench/peers/daemon.ts.
 *
 * A failure names the import (file:line → target) and the rule it breaks.
 * Every list of exceptions fails when an entry no longer happens, so it
 * only shrinks.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { edgesOf, sourceFiles } from './import-graph.ts';
import {
  against,
  BENCH_DAEMON_STARTER,
  benchBreaks,
  CONTRACTS_BY_NAME,
  contractCycles,
  daemonStarters,
  type Finding,
  LAYERS,
  layerBreaks,
  leafBreaks,
  reachIns,
  sourceImportsTestOrBench,
  thinGraph,
} from './rules.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const files = sourceFiles(root, [...LAYERS, 'bench']);
const edges = files.flatMap((file) => edgesOf(root, file));

/** Applies a rule with its list of exceptions: nothing unlisted, nothing listed that is gone. */
function holds(t: Test, findings: Finding[], known: Record<string, string>, what: string): void {
  const { broken, gone } = against(findings, known);
  t.same(broken, [], what);
  t.same(gone, [], 'every listed exception still happens (remove it from the list once fixed)');
}

t.test('the reader found the whole tree', async (t) => {
  t.same(thinGraph(files, edges), [], `${files.length} modules, ${edges.length} imports read`);
  const missing = Object.keys(CONTRACTS_BY_NAME).filter((file) => !existsSync(join(root, file)));
  t.same(missing, [], 'every module named a contract exists');
});

t.test('no module imports a layer above its own', async (t) => {
  holds(t, layerBreaks(edges), {}, 'every import stays in its layer or goes down');
});

t.test('source never imports tests or benchmarks', async (t) => {
  holds(t, sourceImportsTestOrBench(edges), {}, 'nothing that ships imports test/ or bench/');
});

/** Reach-ins still to be removed, each with its reason. */
const KNOWN_REACH_INS: Record<string, string> = {};

t.test("no module reaches into another actor's internals", async (t) => {
  holds(t, reachIns(edges), KNOWN_REACH_INS, "other folders use an actor's protocol.ts only");
});

t.test('every protocol.ts is a leaf', async (t) => {
  holds(t, leafBreaks(files, edges), {}, 'protocols load only zod, node: modules and contract modules');
});

/** Cycles between contract modules still to be removed, keyed by their contract modules, each with its reason. */
const KNOWN_CONTRACT_CYCLES: Record<string, string> = {};

t.test('no cycle between contract modules', async (t) => {
  holds(t, contractCycles(edges), KNOWN_CONTRACT_CYCLES, 'contracts depend on each other one way');
});

/**
 * Actor internals a benchmark exists to measure (or measures with), each
 * import by name: a benchmark of the parser imports the parser. Listed one
 * by one so that a new reach from bench/ is a decision, not a drift.
 */
const BENCH_MEASURES: Record<string, string> = {
  'bench/excerpt-parity.ts → actors/mail-query/excerpt.ts': 'compares the excerpts with FTS5 snippet()',
  'bench/excerpt-parity.ts → actors/mail-query/query-syntax.ts': 'the terms the excerpts highlight, compiled as a search compiles them',
  'bench/hybrid-search.ts → actors/mail-query/search.ts': 'times searchEmails in process',
  'bench/hybrid-search.ts → actors/mail-query/vector-index.ts': 'times the vector index (cold load, nearest messages, recall)',
  'bench/ingest-stages.ts → actors/mime-parse/parse-message.ts': 'times the parse stage of ingest',
  'bench/retrieval-vectors.ts → actors/embedding/local-use-lite.ts': 'embeds the evaluation mailbox with the local model, one provider per lane',
  'bench/retrieval-vectors.ts → actors/embedding/provider.ts': 'the provider interface the embedding run drives (type only)',
  'bench/scenarios/ask.ts → actors/mime-parse/parse-message.ts': 'the received time of evaluation messages, read as ingest reads it',
  'bench/scenarios/contacts.ts → actors/derivation/collect-correspondents.ts': 'times collection in process (selection, then the store)',
  'bench/scenarios/contacts.ts → actors/mime-parse/parse-message.ts': 'the headers collection reads, parsed as the derivation writer parses them',
  'bench/scenarios/embed-backfill.ts → actors/embedding/repeats.ts': 'counts the model runs the embedding actor would skip as repeats, keyed as it keys them',
  'bench/scenarios/embed-backfill.ts → actors/embedding/local-use-lite.ts': 'times the local embedding model per passage',
  'bench/scenarios/mime-parse.ts → actors/mime-parse/html-text.ts': 'times the HTML-to-text conversion beside html-to-text',
  'bench/scenarios/mime-parse.ts → actors/mime-parse/parse-message.ts': 'times the parser in this thread',
  'bench/scenarios/retrieval.ts → actors/embedding/local-use-lite.ts': 'scores the local embedding model',
  'bench/scenarios/retrieval.ts → actors/embedding/openai-compatible.ts': 'scores an OpenAI-compatible embedding provider',
  'bench/scenarios/retrieval.ts → actors/embedding/provider.ts': 'the provider interface both are driven through (type only)',
  'bench/scenarios/retrieval.ts → actors/mime-parse/parse-message.ts': 'stores the evaluation set as ingest parses it',
  'bench/scenarios/retrieval.ts → actors/embedding/repeats.ts': 'reuses the vector of a repeated text as the embedding actor does',
  'bench/scenarios/retrieval.ts → actors/mail-query/search.ts': 'scores searchEmails (recall@10, MRR)',
  'bench/scenarios/search.ts → actors/mail-query/filters.ts': "counts what the index matches with the engine's filters, to choose shapes both sides agree on",
  'bench/scenarios/search.ts → actors/mail-query/query-syntax.ts': "counts what the index matches with the engine's query compiler, to choose shapes",
  'bench/scenarios/search.ts → actors/mail-query/search.ts': 'times searchEmails in process beside the daemon',
  'bench/search-engine.ts → actors/mail-query/search.ts': 'times searchEmails per query shape',
  'bench/store-gauges.ts → actors/mail-query/store-gauges.ts': 'times a collection of the store gauges at mailbox scale',
  'bench/search-engine.ts → actors/mime-parse/parse-message.ts': 'builds the index from mail parsed by the real parser',
};

/** Other bench imports still to be removed, each with its reason. */
const KNOWN_BENCH_REACH_INS: Record<string, string> = {
  'bench/store-batch-throughput.ts → test/runtime/store/mailbox/helpers.ts':
    "the store tests' fixtures (a fresh store, alice's folders); to go once they move to test/helpers/",
};

t.test('bench/ imports only test helpers, the kernel, configuration and protocols', async (t) => {
  holds(t, benchBreaks(edges), { ...BENCH_MEASURES, ...KNOWN_BENCH_REACH_INS }, 'bench/ stays out of internals it does not measure');
});

t.test('bench/ starts the daemon in one place', async (t) => {
  const sources = files.filter((file) => file.startsWith('bench/')).map((file) => ({ file, text: readFileSync(join(root, file), 'utf8') }));
  t.same(daemonStarters(sources), [BENCH_DAEMON_STARTER], `only ${BENCH_DAEMON_STARTER} names bin/mailcairnd; scenarios start daemons through it`);
});
