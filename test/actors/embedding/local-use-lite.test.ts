/**
 * The local USE-lite embedding provider, with the real model from
 * node_modules on its own threads: 512-long unit vectors; the same text
 * gives the same vector bit for bit; a paraphrase lands nearer than an
 * unrelated sentence; an empty list starts nothing; text past the limit does
 * not change the vector; each model thread loads the model once and runs
 * below normal priority, but the one a search query runs on keeps the
 * process priority; a call's runs go to both threads at once; an abort
 * between runs ends the call; a call after close fails; loading and running
 * the model attempts no socket, DNS lookup or fetch (the model must never be
 * downloaded); and no text is logged.
 */
import dns from 'node:dns';
import { readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import t from 'tap';
import { infer, loadLocalModel } from '../../../actors/embedding/local-model.ts';
import { BATCH_TEXTS, LOCAL_DIMENSIONS, LOCAL_MAX_INPUT_CHARACTERS, LOCAL_MODEL, LocalUseLite } from '../../../actors/embedding/local-use-lite.ts';
import { AppError } from '../../../runtime/errors.ts';
import { captureLog } from '../../helpers/log-capture.ts';

t.setTimeout(60_000);

// Record every way out to the network before any model code loads.
const attempts: string[] = [];
const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function (this: net.Socket, ...args: unknown[]) {
  attempts.push('socket');
  return (connect as (...a: unknown[]) => net.Socket).apply(this, args);
} as typeof connect;
const lookup = dns.lookup;
dns.lookup = ((...args: unknown[]) => {
  attempts.push('dns');
  return (lookup as (...a: unknown[]) => void)(...args);
}) as typeof dns.lookup;
const fetch0 = globalThis.fetch;
globalThis.fetch = ((...args: Parameters<typeof fetch>) => {
  attempts.push('fetch');
  return fetch0(...args);
}) as typeof fetch;
t.teardown(() => {
  net.Socket.prototype.connect = connect;
  dns.lookup = lookup;
  globalThis.fetch = fetch0;
});

const capture = captureLog();
const provider = new LocalUseLite({ log: capture.log, threads: 2 });
t.teardown(() => provider.close());

const cosine = (a: Float32Array, b: Float32Array): number => a.reduce((s, x, i) => s + x * b[i]!, 0);
const norm = (a: Float32Array): number => Math.sqrt(cosine(a, a));

t.test('an empty list answers at once and starts no model thread', async (t) => {
  t.same(await provider.embed([]), []);
  t.equal(provider.started, false);
  t.equal(provider.id, `local/${LOCAL_MODEL}`);
  t.equal(provider.maxInputCharacters, LOCAL_MAX_INPUT_CHARACTERS);
});

t.test('the model loads once on each of its threads, below normal priority; 512-long unit vectors; deterministic', async (t) => {
  const texts = ['the invoice was never paid', 'bill still outstanding', 'team picnic on Saturday', ''];
  const [a, b] = await Promise.all([provider.embed(texts), provider.embed(texts)]);
  // Two calls of one run each, at once: one run on each thread.
  const loads = capture.events('embedding.model-loaded');
  t.equal(loads.length, 2, 'one load on each of the two threads');
  for (const load of loads) {
    t.equal(load.simd, true, 'the SIMD build of the wasm backend');
    t.equal(load.backend, 'wasm');
    t.equal(load.oneByOne, true, "the attention's products go to the fast path one by one");
    t.equal(load.threads, 2);
    t.equal(load.use, 'passages');
    if (process.platform === 'linux') t.equal(load.nice, 10, 'the model thread runs below normal priority');
  }
  await provider.embed(texts);
  t.equal(capture.events('embedding.model-loaded').length, 2, 'the model is kept: no load on later calls');
  t.equal(a.length, 4);
  for (const v of a) {
    t.ok(v instanceof Float32Array);
    t.equal(v.length, LOCAL_DIMENSIONS);
    t.ok(Math.abs(norm(v) - 1) < 1e-5, 'unit length');
  }
  for (let i = 0; i < texts.length; i++) t.ok(Buffer.from(a[i]!.buffer).equals(Buffer.from(b[i]!.buffer)), `same vector for text ${i}`);
  // The same text inside another batch (other neighbours, other position) gives the same vector.
  const [alone] = await provider.embed(['bill still outstanding']);
  t.ok(Math.max(...alone!.map((x, i) => Math.abs(x - a[1]![i]!))) < 1e-6, 'batch neighbours do not change a vector');
  t.same(provider.health(), { state: 'healthy', since: provider.health().since, lastFailure: null, consecutiveFailures: 0 });
  t.type(provider.health().since, 'number');
});

t.test('a query runs on a thread of its own at the process priority, with the vector a passage of the same text gets', async (t) => {
  const text = 'the invoice was never paid';
  const before = capture.events('embedding.model-loaded').length;
  // Both passage threads busy with a long call while the query is asked.
  const busy = provider.embed(Array.from({ length: 16 }, (_, i) => `${'a long passage about shipments and invoices '.repeat(12)}${i}`));
  const [query] = await provider.embed([text], undefined, undefined, 'query');
  const loads = capture.events('embedding.model-loaded').slice(before);
  t.equal(loads.length, 1, 'the first query loads the model once, on the query thread');
  t.match(loads[0], { use: 'query', threads: 1 });
  if (process.platform === 'linux') t.equal(loads[0]!.nice, 0, 'the query thread keeps the process priority');
  await busy;
  const [passage] = await provider.embed([text]);
  t.ok(Buffer.from(query!.buffer).equals(Buffer.from(passage!.buffer)), 'the same vector, bit for bit, as the passages threads give');
  await provider.embed(['another query'], undefined, undefined, 'query');
  t.equal(capture.events('embedding.model-loaded').length, before + 1, 'the query thread keeps its model');
});

t.test('a paraphrase is nearer than an unrelated sentence', async (t) => {
  const [query, paraphrase, unrelated] = await provider.embed(['the invoice was never paid', 'bill still outstanding', 'team picnic on Saturday']);
  const near = cosine(query!, paraphrase!);
  const far = cosine(query!, unrelated!);
  t.ok(near > far + 0.1, `paraphrase ${near.toFixed(3)} vs unrelated ${far.toFixed(3)}`);
});

t.test('text past the limit is not read', async (t) => {
  // Few tokens per character, so that the model's own 128-token window would still reach the tail.
  const head = 'communication '.repeat(100).slice(0, LOCAL_MAX_INPUT_CHARACTERS);
  const tail = ' and a team picnic on Saturday with games and food';
  const [cut, long] = await provider.embed([head, head + tail]);
  t.ok(Buffer.from(cut!.buffer).equals(Buffer.from(long!.buffer)), 'the tail past the limit changes nothing');
  const wider = new LocalUseLite({ maxInputCharacters: LOCAL_MAX_INPUT_CHARACTERS * 2 });
  t.teardown(() => wider.close());
  const [a, b] = await wider.embed([head, head + tail]);
  t.notOk(Buffer.from(a!.buffer).equals(Buffer.from(b!.buffer)), 'with a wider limit the same tail is read');
});

t.test('an abort ends the call between batches; the provider still works after', async (t) => {
  const texts = Array.from({ length: BATCH_TEXTS * 8 }, (_, i) => `message number ${i} about the shipment schedule for next week`);
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 0);
  const started = performance.now();
  const err = await provider.embed(texts, controller.signal).then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(err instanceof AppError, 'rejected with an AppError');
  t.equal((err as AppError).code, 'E_EMBED_UNAVAILABLE');
  t.equal((err as AppError).details?.failure, 'aborted');
  const aborted = performance.now() - started;
  const full = performance.now();
  t.equal((await provider.embed(texts)).length, texts.length, 'the next call embeds everything');
  t.ok(aborted < performance.now() - full, 'the aborted call stopped before the work was done');
  t.equal(provider.health().state, 'healthy', 'an abort is not a failure of the provider');
});

t.test('a query placed during a long backfill call is answered between its runs, not after it', async (t) => {
  const texts = Array.from({ length: BATCH_TEXTS * 8 }, (_, i) => `passage ${i} about the warehouse inventory count this quarter`);
  const order: string[] = [];
  const backfill = provider.embed(texts).then((v) => {
    order.push('backfill');
    return v;
  });
  const [query] = await provider.embed(['inventory count']).then((v) => {
    order.push('query');
    return v;
  });
  const vectors = await backfill;
  t.same(order, ['query', 'backfill'], 'the query did not wait for the whole call');
  t.equal(vectors.length, texts.length, 'the backfill call still answers every text, in order');
  const [alone] = await provider.embed([texts[5]!]);
  t.ok(Buffer.from(vectors[5]!.buffer).equals(Buffer.from(alone!.buffer)), 'taking turns changes no vector');
  const [queryAlone] = await provider.embed(['inventory count']);
  t.ok(Buffer.from(query!.buffer).equals(Buffer.from(queryAlone!.buffer)));
});

t.test("a call's runs go to both threads at once", async (t) => {
  // Each thread reports the CPU time of its own thread over the call; both must have run the model.
  const texts = Array.from({ length: BATCH_TEXTS * 10 }, (_, i) => `note ${i} on the quarterly budget review and the travel plans`);
  const before = modelThreadCpu();
  const vectors = await provider.embed(texts);
  const after = modelThreadCpu();
  t.equal(vectors.length, texts.length);
  const busy = [...after].filter(([tid, ms]) => ms - (before.get(tid) ?? 0) >= 10);
  t.equal(busy.length, 2, `both model threads computed (${[...after].map(([tid, ms]) => `${tid}: +${ms - (before.get(tid) ?? 0)} ms`).join(', ')})`);
});

t.test('a call after close fails as closed', async (t) => {
  const closing = new LocalUseLite();
  await closing.embed(['warm']);
  await closing.close();
  const err = await closing.embed(['x']).catch((e: unknown) => e);
  t.equal((err as AppError).code, 'E_EMBED_UNAVAILABLE');
  t.equal((err as AppError).details?.failure, 'closed');
  const threadsBefore = readdirSync('/proc/self/task').length;
  const query = await closing.embed(['x'], undefined, undefined, 'query').catch((e: unknown) => e);
  t.equal((query as AppError).details?.failure, 'closed', 'a query after close fails as closed too');
  if (process.platform === 'linux') t.equal(readdirSync('/proc/self/task').length, threadsBefore, '… and starts no thread');
});

t.test('the model loaded and run on this thread (as each model thread does) attempts no network', async (t) => {
  const model = await loadLocalModel();
  const [v] = await infer(model, ['the invoice was never paid'], LOCAL_MAX_INPUT_CHARACTERS);
  t.equal(v?.length, LOCAL_DIMENSIONS);
  model.model.model.dispose();
});

t.test('no network was attempted, and no text reached the log', async (t) => {
  t.same(attempts, []);
  t.notMatch(capture.raw(), /invoice|outstanding|picnic|shipment/);
});

/** CPU milliseconds of each of this process's threads named as the model's pool threads are (Linux only; empty elsewhere). */
function modelThreadCpu(): Map<number, number> {
  const out = new Map<number, number>();
  if (process.platform !== 'linux') return out;
  const tick = 10; // USER_HZ 100: /proc's times are in 10 ms ticks
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // Field 19 of stat (index 16 after the name) is the nice value: the model's threads are the ones at 10.
      if (Number(fields[16]) !== 10) continue;
      out.set(Number(tid), (Number(fields[11]) + Number(fields[12])) * tick);
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return out;
}
