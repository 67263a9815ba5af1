/**
 * The OpenAI-compatible embedding provider over real HTTP against the
 * stand-in server: vectors in input order and of the declared length; the
 * Authorization header only with a key, read at each call; the address rule;
 * each fault to its outcome (429 with Retry-After waited as asked, 5xx and
 * resets retried, a hung call ended by its deadline, malformed answers and
 * 401 not retried); the circuit opening, refusing, half-opening and closing
 * as health reports; and no input text, API key or provider body in any
 * error or log line. Waits between attempts go through an injected sleep, so
 * nothing here waits on backoff.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { DEFAULT_RETRY, embeddingsUrl, OpenAiCompatible, type OpenAiCompatibleOptions, type Sleep } from '../../../actors/embedding/openai-compatible.ts';
import { fakeClock, seededRandom } from '../../../runtime/clock.ts';
import { AppError, toPayload } from '../../../runtime/errors.ts';
import { type EmbeddingStandin, startEmbeddingStandin } from '../../harness/embedding-standin.ts';
import { captureLog } from '../../helpers/log-capture.ts';

t.setTimeout(60_000);

const DIMS = 16;

type Setup = { standin: EmbeddingStandin; provider: OpenAiCompatible; waits: number[]; clock: ReturnType<typeof fakeClock> };

async function setup(t: Test, options: Partial<OpenAiCompatibleOptions> = {}): Promise<Setup> {
  const standin = await startEmbeddingStandin({ dimensions: DIMS });
  const waits: number[] = [];
  const sleep: Sleep = async (ms, signal) => {
    signal?.throwIfAborted();
    waits.push(ms);
  };
  const clock = fakeClock(1_700_000_000_000);
  const provider = new OpenAiCompatible({
    baseAddress: standin.baseAddress,
    model: 'stand-in-embed',
    dimensions: DIMS,
    requestTimeoutMs: 2_000,
    clock,
    random: seededRandom(7),
    sleep,
    ...options,
  });
  t.teardown(async () => {
    await provider.close();
    await standin.close();
  });
  return { standin, provider, waits, clock };
}

/** The rejection of `p`, which must be an AppError. */
async function failure(t: Test, p: Promise<unknown>): Promise<AppError> {
  try {
    await p;
  } catch (err) {
    t.ok(err instanceof AppError, 'fails with an AppError');
    return err as AppError;
  }
  t.fail('expected a failure');
  throw new Error('resolved');
}

t.test('vectors come back in input order, of the declared length, even when the server orders them otherwise', async (t) => {
  const { standin, provider } = await setup(t);
  const texts = ['the invoice for March', 'lunch on friday?', 'invoice for march, corrected'];
  standin.script({ kind: 'reversed' });
  const vectors = await provider.embed(texts);
  t.equal(vectors.length, 3);
  for (const [i, v] of vectors.entries()) {
    t.ok(v instanceof Float32Array);
    t.equal(v.length, DIMS);
    t.same([...v], standin.vectorOf(texts[i]!), `vector ${i} is the one for its own text`);
  }
  const [req] = standin.requests;
  t.match(req, { method: 'POST', path: '/v1/embeddings', model: 'stand-in-embed', inputs: texts, authorization: undefined, answered: 'reversed' });
  const dot = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i]!, 0);
  t.ok(dot(vectors[0]!, vectors[2]!) > dot(vectors[0]!, vectors[1]!), 'texts sharing words are closer');
  t.same(await provider.embed([]), [], 'an empty list needs no request');
  t.equal(standin.requests.length, 1);
  t.same(provider.health(), { state: 'healthy', since: 1_700_000_000_000, lastFailure: null, consecutiveFailures: 0 });
});

t.test('the API key goes only in Authorization: Bearer, read again at each call', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'emb-key-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const keyFile = join(dir, 'key');
  writeFileSync(keyFile, 'sk-first\n');
  const { standin, provider } = await setup(t, { apiKeyRef: `file:${keyFile}` });
  await provider.embed(['one']);
  writeFileSync(keyFile, 'sk-rotated\n');
  await provider.embed(['two']);
  t.same(
    standin.requests.map((r) => r.authorization),
    ['Bearer sk-first', 'Bearer sk-rotated'],
  );

  const env = await setup(t, { apiKeyRef: 'env:EMB_TEST_KEY', env: { EMB_TEST_KEY: 'sk-from-env' } });
  await env.provider.embed(['three']);
  t.equal(env.standin.requests[0]!.authorization, 'Bearer sk-from-env');

  const unset = await setup(t, { apiKeyRef: 'env:EMB_TEST_UNSET', env: {} });
  const err = await failure(t, unset.provider.embed(['four']));
  t.equal(err.code, 'E_CONFIG_SECRET_UNREADABLE');
  t.match(err.message, /Embeddings:ApiKey/);
  t.equal(unset.standin.requests.length, 0, 'nothing is sent without the key');
});

t.test('the address rule: /v1/embeddings under the base, once', async (t) => {
  t.equal(embeddingsUrl('http://127.0.0.1:11434').href, 'http://127.0.0.1:11434/v1/embeddings');
  t.equal(embeddingsUrl('http://127.0.0.1:11434/').href, 'http://127.0.0.1:11434/v1/embeddings');
  t.equal(embeddingsUrl('http://127.0.0.1:8080/v1').href, 'http://127.0.0.1:8080/v1/embeddings');
  t.equal(embeddingsUrl('https://gw.example/openai/v1//').href, 'https://gw.example/openai/v1/embeddings');
  t.equal(embeddingsUrl('https://gw.example/openai').href, 'https://gw.example/openai/v1/embeddings');
  t.equal(embeddingsUrl('https://gw.example/v10').href, 'https://gw.example/v10/v1/embeddings');
  t.equal(embeddingsUrl('https://gw.example/x?api-version=2').href, 'https://gw.example/x/v1/embeddings?api-version=2');

  const standin = await startEmbeddingStandin({ dimensions: DIMS });
  const provider = new OpenAiCompatible({ baseAddress: `${standin.baseAddress}/v1/`, model: 'm', dimensions: DIMS, requestTimeoutMs: 2_000 });
  t.teardown(async () => {
    await provider.close();
    await standin.close();
  });
  await provider.embed(['over the wire']);
  t.equal(standin.requests[0]!.path, '/v1/embeddings');
});

t.test('429 with Retry-After in seconds: waits what was asked, then succeeds', async (t) => {
  const { standin, provider, waits } = await setup(t);
  standin.script({ kind: 'status', status: 429, retryAfter: '2' });
  const vectors = await provider.embed(['hello']);
  t.equal(vectors.length, 1);
  t.same(waits, [2_000], 'waited exactly the Retry-After');
  t.same(
    standin.requests.map((r) => r.answered),
    ['status', 'ok'],
  );
  t.equal(provider.health().state, 'healthy');
});

t.test('429 with Retry-After as an HTTP date: waits until then', async (t) => {
  const { standin, provider, waits, clock } = await setup(t);
  standin.script({ kind: 'status', status: 429, retryAfter: new Date(clock.now() + 5_000).toUTCString() });
  await provider.embed(['hello']);
  t.equal(waits.length, 1);
  t.ok(waits[0]! > 4_000 && waits[0]! <= 5_000, `waited ${waits[0]} ms, until the date (second resolution)`);
});

t.test('429 every time: rate-limited after the attempts, with the last Retry-After', async (t) => {
  const { standin, provider, waits } = await setup(t);
  standin.setDefault({ kind: 'status', status: 429, retryAfter: '1' });
  const err = await failure(t, provider.embed(['hello']));
  t.equal(err.code, 'E_EMBED_RATE_LIMITED');
  t.match(err.details, { failure: 'http-429', attempts: 3, status: 429, retryAfterMs: 1_000 });
  t.equal(standin.requests.length, DEFAULT_RETRY.maxAttempts);
  t.same(waits, [1_000, 1_000]);
  t.equal(provider.health().state, 'failing');
  t.equal(provider.health().lastFailure, 'http-429');
});

t.test('a Retry-After beyond what we honour ends the call without waiting', async (t) => {
  const { standin, provider, waits } = await setup(t, { retry: { maxRetryAfterMs: 10_000 } });
  standin.script({ kind: 'status', status: 429, retryAfter: '3600' });
  const err = await failure(t, provider.embed(['hello']));
  t.equal(err.code, 'E_EMBED_RATE_LIMITED');
  t.match(err.details, { attempts: 1, retryAfterMs: 3_600_000 });
  t.same(waits, []);
  t.equal(standin.requests.length, 1);
});

t.test('500 twice, then success: retried with growing backoff', async (t) => {
  const { standin, provider, waits } = await setup(t);
  standin.script({ kind: 'status', status: 500 }, { kind: 'status', status: 502 });
  const vectors = await provider.embed(['a', 'b']);
  t.equal(vectors.length, 2);
  t.equal(standin.requests.length, 3);
  t.equal(waits.length, 2);
  t.ok(waits[0]! >= 400 && waits[0]! <= 600, `first backoff ${waits[0]} ms is 500 ms ± 20 %`);
  t.ok(waits[1]! >= 800 && waits[1]! <= 1_200, `second backoff ${waits[1]} ms is 1 s ± 20 %`);
});

t.test('5xx every time: unavailable after the attempts', async (t) => {
  const { standin, provider } = await setup(t);
  standin.setDefault({ kind: 'status', status: 503 });
  const err = await failure(t, provider.embed(['hello']));
  t.equal(err.code, 'E_EMBED_UNAVAILABLE');
  t.match(err.details, { failure: 'http-503', attempts: 3, status: 503 });
  t.equal(standin.requests.length, 3);
});

t.test('a hung call is ended by its deadline, retried, and reported unavailable', async (t) => {
  const { standin, provider } = await setup(t, { requestTimeoutMs: 150 });
  standin.setDefault({ kind: 'hang' });
  const started = Date.now();
  const err = await failure(t, provider.embed(['hello']));
  const took = Date.now() - started;
  t.equal(err.code, 'E_EMBED_UNAVAILABLE');
  t.match(err.details, { failure: 'timeout', attempts: 3 });
  t.equal(standin.requests.length, 3);
  t.ok(took >= 3 * 150 - 30 && took < 5_000, `three deadlines took ${took} ms`);
  t.equal(provider.health().lastFailure, 'timeout');
});

t.test('a reset connection is retried', async (t) => {
  const { standin, provider } = await setup(t);
  standin.script({ kind: 'reset' });
  const vectors = await provider.embed(['hello']);
  t.equal(vectors.length, 1);
  t.same(
    standin.requests.map((r) => r.answered),
    ['reset', 'ok'],
  );

  standin.setDefault({ kind: 'reset' });
  const err = await failure(t, provider.embed(['again']));
  t.equal(err.code, 'E_EMBED_UNAVAILABLE');
  t.match(err.details, { failure: 'reset', attempts: 3 });
});

t.test('an answer we cannot use is malformed, and not retried', async (t) => {
  for (const [kind, reason] of [
    ['malformed-json', 'not-json'],
    ['wrong-count', 'count'],
    ['wrong-dimensions', 'dimensions'],
  ] as const) {
    const { standin, provider } = await setup(t);
    standin.script({ kind });
    const err = await failure(t, provider.embed(['one', 'two']));
    t.equal(err.code, 'E_EMBED_MALFORMED', kind);
    t.match(err.details, { failure: 'malformed', attempts: 1, reason }, kind);
    t.equal(standin.requests.length, 1, `${kind}: one request`);
    t.equal(provider.health().lastFailure, 'malformed');
  }
  const { standin, provider } = await setup(t);
  standin.script({ kind: 'status', status: 200, body: JSON.stringify({ data: [{ index: 0, embedding: 'AAAA' }] }) });
  t.match((await failure(t, provider.embed(['one']))).details, { reason: 'shape' }, 'a base64 embedding is not what we asked for');
});

t.test('401 and 403 are a refused credential after one request; another 4xx is a refused request that leaves health alone', async (t) => {
  for (const status of [401, 403]) {
    const { standin, provider, waits } = await setup(t, { apiKeyRef: 'env:K', env: { K: 'sk-wrong' } });
    standin.setDefault({ kind: 'status', status });
    const err = await failure(t, provider.embed(['hello']));
    t.equal(err.code, 'E_EMBED_CREDENTIAL_REFUSED');
    t.match(err.details, { failure: 'refused-credential', attempts: 1, status });
    t.equal(standin.requests.length, 1, 'never retried');
    t.same(waits, []);
    t.equal(provider.health().lastFailure, 'refused-credential');
  }
  const { standin, provider } = await setup(t);
  standin.script({ kind: 'status', status: 400 });
  const err = await failure(t, provider.embed(['far too long']));
  t.equal(err.code, 'E_EMBED_BAD_REQUEST');
  t.match(err.details, { failure: 'http-400', attempts: 1, status: 400 });
  t.equal(provider.health().state, 'healthy', 'a refused input says nothing about the provider');
});

t.test('a caller that gives up ends the call at once without counting against the provider', async (t) => {
  const { standin, provider } = await setup(t, { requestTimeoutMs: 5_000 });
  standin.setDefault({ kind: 'hang' });
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 100);
  const started = Date.now();
  const err = await failure(t, provider.embed(['hello'], controller.signal));
  t.equal(err.code, 'E_EMBED_UNAVAILABLE');
  t.match(err.details, { failure: 'aborted', attempts: 1 });
  t.ok(Date.now() - started < 2_000, 'did not wait for the deadline');
  t.equal(provider.health().state, 'healthy');
});

t.test('the circuit opens after repeated failed calls, refuses at once, then half-opens and closes after the cool-down', async (t) => {
  const log = captureLog();
  const { standin, provider, clock } = await setup(t, {
    retry: { maxAttempts: 1 },
    circuit: { failuresToOpen: 3, coolDownMs: 10_000 },
    log: log.log,
  });
  standin.setDefault({ kind: 'status', status: 500 });
  for (let i = 1; i <= 2; i++) {
    t.equal((await failure(t, provider.embed(['x']))).code, 'E_EMBED_UNAVAILABLE');
    t.match(provider.health(), { state: 'failing', consecutiveFailures: i, lastFailure: 'http-500' });
  }
  clock.advance(1_000);
  await failure(t, provider.embed(['x']));
  t.same(provider.health(), { state: 'open', since: clock.now(), lastFailure: 'http-500', consecutiveFailures: 3 });
  t.equal(log.events('embedding.circuit-opened').length, 1, 'opening is logged once');

  const refused = await failure(t, provider.embed(['x']));
  t.equal(refused.code, 'E_EMBED_CIRCUIT_OPEN');
  t.match(refused.details, { failure: 'http-500', attempts: 0 });
  t.equal(standin.requests.length, 3, 'an open circuit sends nothing');

  // After the cool-down one trial goes out; it fails, so the circuit opens again for another cool-down.
  clock.advance(10_000);
  await failure(t, provider.embed(['x']));
  t.equal(standin.requests.length, 4, 'the trial went out');
  t.equal(provider.health().state, 'open');
  t.equal((await failure(t, provider.embed(['x']))).code, 'E_EMBED_CIRCUIT_OPEN');
  clock.advance(9_999);
  t.equal((await failure(t, provider.embed(['x']))).code, 'E_EMBED_CIRCUIT_OPEN', 'the new cool-down runs from the failed trial');

  // The provider recovers: the next trial succeeds and closes the circuit.
  standin.setDefault({ kind: 'ok' });
  clock.advance(1);
  t.equal((await provider.embed(['x'])).length, 1);
  t.same(provider.health(), { state: 'healthy', since: clock.now(), lastFailure: null, consecutiveFailures: 0 });
  t.equal(log.events('embedding.circuit-closed').length, 1);
  t.equal(standin.requests.length, 5);
});

t.test('no input text, API key or provider body in any error, payload or log line', async (t) => {
  const SECRET_TEXT = 'Zephyrine Okonkwo wire transfer 4471-ALPHA';
  const API_KEY = 'sk-test-Qv7LwZ3mTk9pRhYx';
  const ECHO = JSON.stringify({ error: { message: `bad input: ${SECRET_TEXT} with key ${API_KEY}` } });
  const log = captureLog();
  const { standin, provider, clock } = await setup(t, {
    apiKeyRef: 'env:EMB_KEY',
    env: { EMB_KEY: API_KEY },
    requestTimeoutMs: 150,
    circuit: { failuresToOpen: 3, coolDownMs: 1_000 },
    log: log.log,
  });
  const answers = [
    { kind: 'status', status: 500, body: ECHO },
    { kind: 'status', status: 429, retryAfter: '1', body: ECHO },
    { kind: 'status', status: 400, body: ECHO },
    { kind: 'status', status: 401, body: ECHO },
    { kind: 'status', status: 200, body: `{"data": "${SECRET_TEXT}"}` },
    { kind: 'malformed-json' },
    { kind: 'hang' },
    { kind: 'reset' },
  ] as const;
  const errors: AppError[] = [];
  for (const answer of answers) {
    standin.setDefault(answer);
    clock.advance(2_000); // past any cool-down, so every fault reaches the wire
    errors.push(await failure(t, provider.embed([SECRET_TEXT, 'second passage'])));
  }
  errors.push(await failure(t, provider.embed([SECRET_TEXT]))); // circuit open by now
  t.ok(
    standin.requests.every((r) => r.authorization === `Bearer ${API_KEY}`),
    'the key was sent',
  );
  t.ok(log.lines.length > 0, 'there were log lines to scan');
  const seen = [
    ...errors.flatMap((e) => [e.message, e.stack ?? '', JSON.stringify(e.details), JSON.stringify(toPayload(e)), String(e.cause ?? '')]),
    log.raw(),
    JSON.stringify(provider.health()),
  ].join('\n');
  for (const needle of [SECRET_TEXT, 'Zephyrine', '4471-ALPHA', API_KEY, 'Qv7LwZ3m', 'bad input']) {
    t.notOk(seen.includes(needle), `"${needle}" appears nowhere`);
  }
});
