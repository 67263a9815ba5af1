/**
 * A stand-in OpenAI-compatible embeddings server for tests of the wire path
 * (the only stand-in issue 15 allows): node:http on 127.0.0.1, an ephemeral
 * port, answering `POST /v1/embeddings` (and `/<prefix>/v1/embeddings`) in
 * the real wire format.
 *
 * Vectors are deterministic: each lower-cased word is hashed into one of
 * `dimensions` buckets with a hashed sign, and the sum is L2-normalised, so
 * texts sharing words get close vectors (`vectorOf` gives the same vector to
 * assert against).
 *
 * Each request is recorded (path, model, inputs, the Authorization header
 * seen, how it was answered). Calls can be scripted in order with `script`:
 * each scripted answer is used by one request, then answers are normal
 * again. Faults: a status (429 with `Retry-After`, 500, 401, 400…, with a
 * chosen body), a hang (no answer until the stand-in closes), JSON that does
 * not parse, the wrong number of vectors or the wrong length, a connection
 * reset, and the data given in reverse order (legal: clients order by index).
 * `setLatency` holds the vector answers, so a backfill takes long enough to
 * be watched.
 *
 * `close()` destroys every socket, hung ones included, so no test waits on it.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { answerFault, send, sendError, type StandinFault, startJsonServer } from './openai-standin.ts';

export type StandinAnswer = { kind: 'ok' } | { kind: 'reversed' } | { kind: 'wrong-count' } | { kind: 'wrong-dimensions' } | StandinFault;

export type RecordedRequest = {
  method: string;
  path: string;
  model: unknown;
  inputs: string[];
  authorization: string | undefined;
  answered: StandinAnswer['kind'];
};

export type EmbeddingStandin = {
  /** `http://127.0.0.1:<port>`, without `/v1`. */
  readonly baseAddress: string;
  readonly requests: RecordedRequest[];
  /** Queue answers for the next requests, in order. */
  script(...answers: StandinAnswer[]): void;
  /** Answer every request with this once the script is used up (default `ok`). */
  setDefault(answer: StandinAnswer): void;
  /** Hold each vector answer this long before sending it (0, the default: at once), for tests that watch a backfill go by. */
  setLatency(ms: number): void;
  vectorOf(text: string): number[];
  close(): Promise<void>;
};

export async function startEmbeddingStandin(options: { dimensions: number }): Promise<EmbeddingStandin> {
  const { dimensions } = options;
  const requests: RecordedRequest[] = [];
  const queue: StandinAnswer[] = [];
  let fallback: StandinAnswer = { kind: 'ok' };
  let latencyMs = 0;

  const vectorOf = (text: string): number[] => embed(text, dimensions);

  function handle(req: IncomingMessage, res: ServerResponse, raw: string): void {
    const path = new URL(req.url ?? '/', 'http://standin').pathname;
    if (req.method !== 'POST' || !/(^|\/)v1\/embeddings$/.test(path)) {
      sendError(res, 404, 'not found');
      return;
    }
    let body: { model?: unknown; input?: unknown };
    try {
      body = JSON.parse(raw) as typeof body;
    } catch {
      sendError(res, 400, 'body is not JSON');
      return;
    }
    const inputs = Array.isArray(body.input) ? body.input.map(String) : typeof body.input === 'string' ? [body.input] : [];
    const answer = queue.shift() ?? fallback;
    const auth = req.headers.authorization;
    requests.push({ method: req.method, path, model: body.model, inputs, authorization: auth, answered: answer.kind });

    switch (answer.kind) {
      case 'hang':
      case 'reset':
      case 'malformed-json':
      case 'status':
        answerFault(req, res, answer, '{"object":"list","data":[{"index":0,"embedding":[0.1,');
        return;
      default: {
        let data = inputs.map((text, index) => ({ object: 'embedding', index, embedding: vectorOf(text) }));
        if (answer.kind === 'reversed') data = data.reverse();
        if (answer.kind === 'wrong-count') data = data.slice(0, Math.max(0, data.length - 1));
        if (answer.kind === 'wrong-dimensions') data = data.map((d) => ({ ...d, embedding: d.embedding.slice(0, dimensions - 1) }));
        const tokens = inputs.reduce((n, text) => n + words(text).length, 0);
        const reply = (): void => send(res, 200, { object: 'list', data, model: body.model, usage: { prompt_tokens: tokens, total_tokens: tokens } });
        if (latencyMs > 0) setTimeout(reply, latencyMs);
        else reply();
      }
    }
  }

  const server = await startJsonServer(handle);

  return {
    baseAddress: server.baseAddress,
    requests,
    script: (...answers) => {
      queue.push(...answers);
    },
    setDefault: (answer) => {
      fallback = answer;
    },
    setLatency: (ms) => {
      latencyMs = ms;
    },
    vectorOf,
    close: () => server.close(),
  };
}

function words(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

/** Hashed bag of words, L2-normalised; an empty text gets the first unit vector. */
function embed(text: string, dimensions: number): number[] {
  const v = new Array<number>(dimensions).fill(0);
  for (const word of words(text)) {
    const h = createHash('sha256').update(word).digest();
    const bucket = h.readUInt32BE(0) % dimensions;
    v[bucket]! += (h[4]! & 1) === 0 ? 1 : -1;
  }
  const norm = Math.hypot(...v);
  if (norm === 0) {
    v[0] = 1;
    return v;
  }
  // Rounded to what a float32 carries, so a client's Float32Array equals these numbers exactly.
  return v.map((x) => Math.fround(x / norm));
}
