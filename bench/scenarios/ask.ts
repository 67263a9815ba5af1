/**
 * ask: what an `ask_mail` run costs outside the model (issue 16), and, with
 * a real chat endpoint, how long answers take and whether they cite the
 * right mail. Two modes; the first line printed says which one ran.
 *
 * Stand-in mode (default). The compiled daemon as search-hybrid starts it
 * (hybrid-daemon.ts: a private Dovecot holding BENCH_MESSAGES generated
 * messages, default 2,000; the embedding stand-in as provider, activated,
 * every email embedded, the pool threads warmed), with `Answering` declared
 * on the scripted chat stand-in (test/harness/chat-standin.ts, loopback, in
 * this process): MaxCallsPerQuestion 8, PassagesPerLookup 5, the character
 * bound out of the way, the allowance large enough, the audit on. The
 * stand-in answers instantly: a run of N calls (N = 1, 3, 8) is N - 1 rounds
 * of one `search_mail` call with the query, then a text answer citing [E1].
 * The query is the search scenario's common word. Each iteration times, in
 * an order rotated per iteration, `ask_mail` with N = 1, 3, 8 and a bare
 * `search_emails` of the same query with resultLimit = PassagesPerLookup,
 * through /mcp (SDK client). Per case: p50/p99 wall, the daemon's CPU per
 * call from the kernel (/proc, all threads, read around each call: 10 ms
 * ticks, so a mean over many calls), and the per-lookup overhead
 * (p50(ask N) - p50(ask 1)) / (N - 1) beside p50(search). A lookup does more
 * than a bare search: it places the query, searches for one more than it
 * passes on, then reads the bodies of what it passes on (the pool's
 * get-content) and wraps them for the model. Peak RSS over the timed phase.
 * The stand-in's own time is in the wall figures, never in the daemon's CPU.
 *
 * Real-endpoint mode: ANSWERING_BASE_ADDRESS set (ANSWERING_MODEL, default
 * `gpt-4o-mini`; ANSWERING_API_KEY read by the daemon as `env:` reference).
 * The mailbox is the labelled evaluation set's (bench/retrieval-eval.ts: all
 * of `corpus/real/` plus its generated mailboxes, each message received at
 * its Date header), embedded by EMBEDDINGS_BASE_ADDRESS (EMBEDDINGS_MODEL,
 * EMBEDDINGS_DIMENSIONS, EMBEDDINGS_API_KEY as the retrieval scenario reads
 * them) or else the local provider. Each query with relevant messages is
 * asked as a question (its filters said in words), once. Per kind of query
 * and overall: answer latency p50/p99, lookups per run, calls per run (from
 * the daemon's `answering.run` log lines, which carry counts only), and
 * faithfulness: the share of answered runs that cite at least one message,
 * every cited one labelled relevant for that query; beside it the share
 * that cite anything, and the share that read a relevant message at all.
 *
 *   BENCH_MESSAGES=2000 BENCH_ITERATIONS=30 npm run bench -- ask
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import Libsql from 'libsql';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { decodeStoredEmailId } from '../../actors/mail-query/protocol/stored-email-id.ts';
import { parseMessage } from '../../actors/mime-parse/parse-message.ts';
import { type ChatStandin, startChatStandin, toolResultsOf } from '../../test/harness/chat-standin.ts';
import { corpusAvailable } from '../../test/harness/corpus.ts';
import { startDovecot } from '../../test/harness/dovecot.ts';
import { type EmbeddingStandin, startEmbeddingStandin } from '../../test/harness/embedding-standin.ts';
import { generateMailbox } from '../../test/harness/generator.ts';
import { writeMaildir } from '../../test/harness/place-mail.ts';
import { trackDir } from '../../test/harness/processes.ts';
import { readStats, resetPeak } from '../peers/process-stats.ts';
import { type EvalQuery, loadEvalSet } from '../retrieval-eval.ts';
import type { Row, Scenario } from '../scenario.ts';
import { round } from '../stats.ts';
import { activateAndEmbed, STANDIN_DIMENSIONS, standinEmbeddings, startHybridDaemon, warmUpVectorIndex } from './hybrid-daemon.ts';
import { keyOf, sources } from './retrieval.ts';
import { callTool, chooseShapes, connectClient, type Daemon, ms, p, PASSWORD, READER_API_KEY, USER, waitForMirror } from './search.ts';
import { exitWhenInterrupted } from '../interrupted.ts';

const RUN_CALLS = [1, 3, 8] as const;
const MAX_CALLS = 8;
const PASSAGES_PER_LOOKUP = 5;
const WARMUP_RUNS = 3;
/** An ask of many calls to a real model may take minutes; the SDK's default request timeout is 60 s. */
const REAL_CALL_TIMEOUT_MS = 15 * 60_000;

type Log = (line: string) => void;
type Json = Record<string, unknown>;
type Citation = { storedEmailId: string; cited: boolean };

function loadNow(): string {
  return loadavg()
    .map((l) => round(l, 1))
    .join(' ');
}

/** The Answering section: one endpoint, every bound this scenario does not measure out of the way. */
function answeringSection(endpoint: Json, maxQuestions: number): Json {
  return {
    Endpoints: [{ MaxCallsPerQuestion: MAX_CALLS, MaxInputCharactersPerQuestion: 10_000_000, ...endpoint }],
    MaxQuestionsPerPeriod: maxQuestions,
    PassagesPerLookup: PASSAGES_PER_LOOKUP,
  };
}

/** Fails unless the daemon lists `ask_mail` to the bench agent (it needs a serving generation and a declared endpoint). */
async function requireAskMail(client: Client): Promise<void> {
  const tools = (await client.listTools()).tools.map((t) => t.name);
  if (!tools.includes('ask_mail')) throw new Error('mailcairnd does not list ask_mail once embedded');
}

/** Runs `body` with a daemon, a Dovecot and SIGINT handling; the daemon's log tail on failure. */
async function withDaemon(
  name: string,
  body: (ctx: { dir: string; dovecot: Awaited<ReturnType<typeof startDovecot>>; setDaemon: (d: Daemon) => void; log: Log }) => Promise<Row[]>,
): Promise<Row[]> {
  const dir = mkdtempSync(join(tmpdir(), `mailcairn-bench-${name}-`));
  trackDir(dir);
  const letGo = exitWhenInterrupted(name);
  const log: Log = (line) => void process.stderr.write(`[${name}] ${line}\n`);
  let daemon: Daemon | null = null;
  const dovecot = await startDovecot({ users: [{ user: USER, password: PASSWORD }] });
  try {
    return await body({ dir, dovecot, setDaemon: (d) => (daemon = d), log });
  } catch (err) {
    const d = daemon as Daemon | null;
    if (d !== null) log(`failed with mailcairnd ${d.state()}; its log ends:\n${d.logTail(30)}`);
    throw err;
  } finally {
    await (daemon as Daemon | null)?.stop();
    await dovecot.stop();
    rmSync(dir, { recursive: true, force: true });
    letGo();
  }
}

// ------------------------------------------------------------ stand-in mode

/**
 * `search`: a bare search_emails; `list`: tools/list, which for a key granted ask_mail asks whether it is offered;
 * `list-reader`: tools/list for a key not granted it, which never asks; `ask`: a run of `calls` calls.
 */
type Case = { name: string; samples: number[]; cpuMs: number; unexpected: number } & (
  | { kind: 'search'; calls: null }
  | { kind: 'list'; calls: null }
  | { kind: 'list-reader'; calls: null }
  | { kind: 'ask'; calls: number }
);

/** Characters of a recorded request as the run counts them: every message's content and tool-call arguments. */
function requestCharacters(body: Json): number {
  let n = 0;
  for (const m of (body.messages as Array<Json>) ?? []) {
    n += String(m.content ?? '').length;
    for (const c of (m.tool_calls as Array<{ function: { name: string; arguments: string } }> | undefined) ?? [])
      n += c.function.name.length + c.function.arguments.length;
  }
  return n;
}

async function standinMode(): Promise<Row[]> {
  const total = Number(process.env.BENCH_MESSAGES ?? '2000');
  const iterations = Math.max(10, Number(process.env.BENCH_ITERATIONS ?? '50'));
  const embedLimitMs = Number(process.env.BENCH_EMBED_WAIT_MINUTES ?? '30') * 60_000;
  process.stdout.write(`ask: stand-in mode (the scripted chat stand-in answers instantly; set ANSWERING_BASE_ADDRESS for a real endpoint)\n\n`);
  const embeddings = await startEmbeddingStandin({ dimensions: STANDIN_DIMENSIONS });
  const chat = await startChatStandin();
  try {
    return await withDaemon('ask', async ({ dir, dovecot, setDaemon, log }) => {
      log(`writing ${total} messages`);
      await writeMaildir(dovecot, USER, 'INBOX', generateMailbox({ seed: 42, count: total, profile: 'bench' }));
      log('mailcairnd mirroring');
      const { daemon: d, admin } = await startHybridDaemon(join(dir, 'mailcairn'), dovecot.port, {
        Embeddings: standinEmbeddings(embeddings),
        Answering: answeringSection({ Alias: 'standin', BaseAddress: chat.baseAddress, Model: 'scripted' }, 1_000_000),
      });
      setDaemon(d);
      const { mirrorMs, stored } = await waitForMirror(d, total);
      const common = (await chooseShapes(d.database, null, stored))[0]!;
      const client = await connectClient(d.port, 'bench-ask');
      const reader = await connectClient(d.port, 'bench-ask-reader', READER_API_KEY);
      try {
        const embedded = await activateAndEmbed(admin, d, embeddings, embedLimitMs, log);
        const searchArgs = { queryText: common.queryText, resultLimit: PASSAGES_PER_LOOKUP };
        await warmUpVectorIndex(client, [searchArgs], log);
        await requireAskMail(client);
        return await timeStandinRuns({ d, client, reader, chat, embeddings, searchArgs, iterations, log, setup: { stored, mirrorMs, embedded } });
      } finally {
        await client.close().catch(() => undefined);
        await reader.close().catch(() => undefined);
      }
    });
  } finally {
    await chat.close();
    await embeddings.close();
  }
}

/** What a case's row says it measured, and any answer not as scripted. */
function noteOf(c: Case): string {
  const off = (what: string): string => (c.unexpected === 0 ? '' : `; ${c.unexpected} ${what}`);
  switch (c.kind) {
    case 'search':
      return `bare search_emails, resultLimit ${PASSAGES_PER_LOOKUP}, hybrid`;
    case 'list':
      return `tools/list for a key granted service.mail.ask: asks the answering actor, which asks the embedding actor, whether ask_mail is offered${off('listings without ask_mail')}`;
    case 'list-reader':
      return `tools/list for a key granted service.mail.read only: asks no actor${off('listings with ask_mail')}`;
    case 'ask': {
      const scripted = c.unexpected === 0 ? 'every answer as scripted' : `${c.unexpected} of ${c.samples.length} answers not as scripted`;
      const lookup =
        c.calls > 1
          ? 'a lookup also places the query, reads the bodies of its passages and wraps them'
          : 'no lookup: availability, allowance, one chat call, audit';
      return `${scripted}; ${lookup}`;
    }
  }
}

async function timeStandinRuns(o: {
  d: Daemon;
  client: Client;
  reader: Client;
  chat: ChatStandin;
  embeddings: EmbeddingStandin;
  searchArgs: { queryText: string; resultLimit: number };
  iterations: number;
  log: Log;
  setup: { stored: number; mirrorMs: number; embedded: { embedMs: number; embeddedEmailCount: number; emailCount: number } };
}): Promise<Row[]> {
  const { d, client, reader, chat, embeddings, searchArgs, iterations, log } = o;
  // The model of a run of `callsThisRun` calls: one lookup per round until the last call, which answers.
  let callsThisRun = 1;
  chat.setDefault({
    kind: 'respond',
    respond: (request) =>
      toolResultsOf(request).length < callsThisRun - 1
        ? { kind: 'tool-calls', calls: [{ name: 'search_mail', arguments: { queryText: searchArgs.queryText } }] }
        : { kind: 'text', text: 'The answer, from the first message found [E1].' },
  });
  const cases: Case[] = [
    { name: 'search_emails', kind: 'search', calls: null, samples: [], cpuMs: 0, unexpected: 0 },
    { name: 'tools/list', kind: 'list', calls: null, samples: [], cpuMs: 0, unexpected: 0 },
    { name: 'tools/list, not granted', kind: 'list-reader', calls: null, samples: [], cpuMs: 0, unexpected: 0 },
    ...RUN_CALLS.map((calls): Case => ({ name: `ask_mail, ${calls} call${calls > 1 ? 's' : ''}`, kind: 'ask', calls, samples: [], cpuMs: 0, unexpected: 0 })),
  ];
  /** One call of a case; false when its answer is not what the script makes it. */
  const once = async (c: Case): Promise<boolean> => {
    if (c.kind === 'search') return (await callTool(client, 'search_emails', searchArgs)).retrievalMode === 'hybrid';
    if (c.kind === 'list') return (await client.listTools()).tools.some((tool) => tool.name === 'ask_mail');
    if (c.kind === 'list-reader') return !(await reader.listTools()).tools.some((tool) => tool.name === 'ask_mail');
    callsThisRun = c.calls;
    const answer = await callTool(client, 'ask_mail', { question: `What do my emails say about ${searchArgs.queryText}?` });
    const citations = answer.citations as Citation[];
    return answer.lookupCount === c.calls - 1 && answer.retrievalMode === 'hybrid' && (c.calls === 1 || citations[0]?.cited === true);
  };
  const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

  log(`warm-up: ${WARMUP_RUNS} calls of each case`);
  for (let i = 0; i < WARMUP_RUNS; i++) for (const c of cases) await once(c);
  // What a run of the most calls sends the model, from the stand-in's record of its requests.
  chat.requests.length = 0;
  callsThisRun = MAX_CALLS;
  await once(cases.at(-1)!);
  const sentByLongest = chat.requests.reduce((n, r) => n + requestCharacters(r.body), 0);
  chat.requests.length = 0;
  embeddings.requests.length = 0;

  log(`timing: ${iterations} iterations of ${cases.length} cases, order rotated per iteration`);
  const loadAtStart = loadNow();
  const peakReset = resetPeak(d.pid);
  for (let i = 0; i < iterations; i++) {
    for (let k = 0; k < cases.length; k++) {
      const c = cases[(i + k) % cases.length]!;
      const cpuBefore = readStats(d.pid)?.cpuMs ?? NaN;
      const started = performance.now();
      const expected = await once(c);
      c.samples.push(performance.now() - started);
      c.cpuMs += (readStats(d.pid)?.cpuMs ?? NaN) - cpuBefore;
      if (!expected) c.unexpected++;
      await turn();
    }
    // Both stand-ins record every request whole: not kept over a run.
    chat.requests.length = 0;
    embeddings.requests.length = 0;
  }
  const usage = readStats(d.pid) ?? { cpuMs: NaN, peakRssMiB: NaN };

  const figures = cases.map((c) => ({ c, s: p(c.samples) }));
  const search = figures.find(({ c }) => c.kind === 'search')!;
  const ask1 = figures.find(({ c }) => c.calls === 1)!;
  const rows: Row[] = figures.map(({ c, s }) => {
    const p50 = ms(s.p50Us);
    const lookups = c.calls !== null && c.calls > 1 ? c.calls - 1 : null;
    const cpuPerCall = c.cpuMs / c.samples.length;
    const perLookup = lookups === null ? null : round((p50 - ms(ask1.s.p50Us)) / lookups, 2);
    const perLookupCpu = lookups === null ? null : round((cpuPerCall - ask1.c.cpuMs / ask1.c.samples.length) / lookups, 2);
    return {
      mode: 'stand-in',
      case: c.name,
      lookups: c.calls === null ? '' : c.calls - 1,
      'p50 ms': p50,
      'p99 ms': ms(s.p99Us),
      'per lookup p50 ms': perLookup ?? '',
      'search p50 ms': c.calls === null ? '' : ms(search.s.p50Us),
      'per lookup / search p50': perLookup === null ? '' : round(perLookup / ms(search.s.p50Us), 2),
      'daemon CPU ms/call': round(cpuPerCall, 2),
      'per lookup CPU ms': perLookupCpu ?? '',
      note: noteOf(c),
    };
  });
  rows.push({
    mode: 'stand-in',
    case: 'mailcairnd, timed phase',
    note:
      `query: the common word (${searchArgs.queryText.length} characters); ${o.iterations} iterations; peak RSS ${round(usage.peakRssMiB)} MiB${peakReset ? '' : ' (lifetime peak: reset refused)'}; ` +
      `a run of ${MAX_CALLS} calls sends the model ${sentByLongest} characters in all; messages ${o.setup.stored}; mirror ${round(o.setup.mirrorMs / 1000, 1)} s; ` +
      `embedding ${o.setup.embedded.embeddedEmailCount}/${o.setup.embedded.emailCount} in ${round(o.setup.embedded.embedMs / 1000, 1)} s; load average at start ${loadAtStart}, at end ${loadNow()}`,
  });
  return rows;
}

// ------------------------------------------------------------- real endpoint

/** The question asked for a query of the set: its words, its filters said in words (the model chooses its own filters). */
function questionOf(q: EvalQuery): string {
  const f = q.filters ?? {};
  const parts = [q.query];
  if (f.senderAddress) parts.push(`from ${f.senderAddress}`);
  if (f.receivedOnOrAfter) parts.push(`received on or after ${f.receivedOnOrAfter.slice(0, 10)}`);
  if (f.receivedBefore) parts.push(`received before ${f.receivedBefore.slice(0, 10)}`);
  return `Find and summarise the email about: ${parts.join(', ')}.`;
}

/** The Embeddings section of the real mode: an OpenAI-compatible service from the environment, else the local model. */
function realEmbeddings(): { section: Json; label: string } {
  const baseAddress = process.env.EMBEDDINGS_BASE_ADDRESS;
  if (!baseAddress) return { section: { Provider: 'Local', MaxInputCharactersPerPeriod: 100_000_000_000 }, label: 'local model' };
  return {
    section: {
      BaseAddress: baseAddress,
      Model: process.env.EMBEDDINGS_MODEL ?? 'nomic-embed-text',
      Dimensions: Number(process.env.EMBEDDINGS_DIMENSIONS ?? 768),
      ...(process.env.EMBEDDINGS_API_KEY ? { ApiKey: 'env:EMBEDDINGS_API_KEY' } : {}),
      MaxInputCharactersPerPeriod: 100_000_000_000,
    },
    label: 'EMBEDDINGS_BASE_ADDRESS',
  };
}

type Run = { q: EvalQuery; wallMs: number; answered: boolean; code: number | null; lookups: number; cited: string[]; read: string[] };

/** `calls` of each `answering.run` log line, in order (counts only: the line carries no content). */
function callsPerRun(logFile: string): number[] {
  const out: number[] = [];
  for (const line of readFileSync(logFile, 'utf8').split('\n')) {
    if (!line.includes('"answering.run"')) continue;
    try {
      const entry = JSON.parse(line) as { event?: string; calls?: number };
      if (entry.event === 'answering.run' && typeof entry.calls === 'number') out.push(entry.calls);
    } catch {
      // a line cut by the stop: not counted
    }
  }
  return out;
}

async function realMode(baseAddress: string): Promise<Row[]> {
  const model = process.env.ANSWERING_MODEL ?? 'gpt-4o-mini';
  if (!corpusAvailable()) throw new Error('ask (real endpoint): the shared corpus is not present (set MAILCAIRN_CORPUS)');
  const set = loadEvalSet();
  const questions = set.queries.filter((q) => q.relevant.length > 0);
  const embeddings = realEmbeddings();
  const embedLimitMs = Number(process.env.BENCH_EMBED_WAIT_MINUTES ?? '60') * 60_000;
  process.stdout.write(
    `ask: real-endpoint mode (ANSWERING_BASE_ADDRESS, model ${model}${process.env.ANSWERING_API_KEY ? ', ANSWERING_API_KEY' : ''}; embeddings: ${embeddings.label}); ${questions.length} questions of the evaluation set\n\n`,
  );
  return withDaemon('ask', async ({ dir, dovecot, setDaemon, log }) => {
    const all = sources(set.generated);
    log(`writing ${all.length} messages of the evaluation set`);
    await writeMaildir(
      dovecot,
      USER,
      'INBOX',
      all.map((s) => {
        // Received at its Date header (generated mail: its internal date), as the labels assume.
        const parsed = s.receivedAt === null ? parseMessage(s.raw, 'eval') : null;
        const sentAt = parsed?.ok ? parsed.message.sentAt : null;
        return { raw: s.raw, internalDate: new Date(s.receivedAt ?? sentAt ?? Date.now()) };
      }),
    );
    log('mailcairnd mirroring');
    const daemonDir = join(dir, 'mailcairn');
    const { daemon: d, admin } = await startHybridDaemon(daemonDir, dovecot.port, {
      // Info: the `answering.run` lines (counts, never content) give the calls per run.
      Logging: { Level: 'info', Format: 'Json' },
      Embeddings: embeddings.section,
      Answering: answeringSection(
        { Alias: 'real', BaseAddress: baseAddress, Model: model, ...(process.env.ANSWERING_API_KEY ? { ApiKey: 'env:ANSWERING_API_KEY' } : {}) },
        questions.length + 10,
      ),
    });
    setDaemon(d);
    const { stored } = await waitForMirror(d, all.length);
    const client = await connectClient(d.port, 'bench-ask-real');
    try {
      await activateAndEmbed(admin, d, null, embedLimitMs, log);
      await warmUpVectorIndex(client, [{ queryText: 'invoice', resultLimit: PASSAGES_PER_LOOKUP }], log);
      await requireAskMail(client);
      // A citation's stored id → message id → UID, which Dovecot gave in the order written: the key.
      const db = new Libsql(d.database, { readonly: true, timeout: 5_000 });
      const keyOfId = (storedEmailId: string): string => {
        const id = decodeStoredEmailId(storedEmailId);
        const row = id === null ? undefined : (db.prepare('SELECT uid FROM messages WHERE id = ?').get([id]) as { uid: number } | undefined);
        return row === undefined ? `unknown:${storedEmailId}` : (all[Number(row.uid) - 1]?.key ?? `unknown:${storedEmailId}`);
      };
      const runs: Run[] = [];
      try {
        for (const [i, q] of questions.entries()) {
          const started = performance.now();
          const result = (await client.callTool({ name: 'ask_mail', arguments: { question: questionOf(q) } }, undefined, {
            timeout: REAL_CALL_TIMEOUT_MS,
          })) as {
            isError?: boolean;
            structuredContent?: Json;
          };
          const wallMs = performance.now() - started;
          const content = result.structuredContent ?? {};
          if (result.isError) {
            runs.push({ q, wallMs, answered: false, code: typeof content.code === 'number' ? content.code : null, lookups: 0, cited: [], read: [] });
          } else {
            const citations = content.citations as Citation[];
            runs.push({
              q,
              wallMs,
              answered: true,
              code: null,
              lookups: Number(content.lookupCount),
              cited: citations.filter((c) => c.cited).map((c) => keyOfId(c.storedEmailId)),
              read: citations.map((c) => keyOfId(c.storedEmailId)),
            });
          }
          if ((i + 1) % 10 === 0) log(`${i + 1}/${questions.length} questions`);
        }
      } finally {
        db.close();
      }
      const calls = callsPerRun(join(daemonDir, 'mailcairnd.log'));
      return realRows(runs, calls, stored);
    } finally {
      await client.close().catch(() => undefined);
    }
  });
}

function realRows(runs: readonly Run[], calls: readonly number[], stored: number): Row[] {
  const mean = (xs: readonly number[]): number | string => (xs.length === 0 ? '' : round(xs.reduce((a, b) => a + b, 0) / xs.length, 2));
  const share = (n: number, of: number): string => (of === 0 ? 'n/a' : `${n}/${of} (${Math.round((n / of) * 100)} %)`);
  const row = (label: string, rs: readonly Run[]): Row => {
    const answered = rs.filter((r) => r.answered);
    const relevantOf = (r: Run): Set<string> => new Set(r.q.relevant.map(keyOf));
    const citing = answered.filter((r) => r.cited.length > 0);
    const faithful = citing.filter((r) => r.cited.every((k) => relevantOf(r).has(k)));
    const readRelevant = answered.filter((r) => r.read.some((k) => relevantOf(r).has(k)));
    const s = rs.length > 0 ? p(rs.map((r) => r.wallMs)) : null;
    const codes = [...new Set(rs.filter((r) => !r.answered).map((r) => String(r.code ?? '?')))].join(', ');
    return {
      mode: 'real endpoint',
      case: label,
      questions: rs.length,
      answered: answered.length,
      'p50 ms': s ? ms(s.p50Us) : '',
      'p99 ms': s ? ms(s.p99Us) : '',
      'lookups/run': mean(answered.map((r) => r.lookups)),
      faithful: share(faithful.length, answered.length),
      'cite any': share(citing.length, answered.length),
      'read a relevant': share(readRelevant.length, answered.length),
      note: codes === '' ? '' : `refused or failed: codes ${codes}`,
    };
  };
  const kinds = [...new Set(runs.map((r) => r.q.kind))];
  return [
    ...kinds.map((k) =>
      row(
        k,
        runs.filter((r) => r.q.kind === k),
      ),
    ),
    row('all', runs),
    {
      mode: 'real endpoint',
      case: 'calls per run',
      note:
        calls.length === 0
          ? 'no answering.run log lines'
          : `mean ${mean(calls)}, max ${Math.max(...calls)} over ${calls.length} runs (answering.run log lines); latency p50/p99 over every run, answered or not; faithful: cites ≥ 1 message and every cited one is labelled relevant; ${stored} messages; load average at end ${loadNow()}`,
    },
  ];
}

export const ask: Scenario = {
  name: 'ask',
  description:
    'ask_mail through /mcp: the cost of a run of 1, 3 and 8 calls outside the model beside a bare search_emails (chat stand-in); with ANSWERING_BASE_ADDRESS, answer latency and faithfulness over the labelled evaluation set',
  run() {
    const baseAddress = process.env.ANSWERING_BASE_ADDRESS;
    return baseAddress ? realMode(baseAddress) : standinMode();
  },
};
