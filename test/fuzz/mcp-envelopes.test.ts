/**
 * Fuzz family "mcp-envelopes": JSON-RPC envelopes and batch shapes posted
 * to `/mcp` of a real service mirroring a tiny Dovecot mailbox — wrong
 * `jsonrpc` versions, ids of every JSON type, methods known and unknown,
 * params of every shape, missing, extra and duplicated members, prototype
 * keys (`__proto__`, `constructor`, `prototype`), requests, notifications
 * and responses posted, batches empty, mixed, nested and past the 100 limit,
 * nesting up to 8,000 levels anywhere (the fault of issue 30: an empty
 * 500), huge strings, and raw-byte damage (invalid UTF-8, a BOM,
 * truncation, garbage). The body is built as text, so keys repeat and
 * depth costs nothing to serialise.
 *
 * Every answer follows the transport's rules (docs/mcp-tools.md, "The
 * listener"): 200 with a well-formed JSON-RPC answer (or a batch of them),
 * 202 empty (only notifications or responses), 400 with a JSON-RPC error of
 * id null, 413 empty past 1 MiB; never 5xx, never -32603 (the caller's
 * envelope is never our internal error). Nothing restarts, no defect line,
 * no log line carries a generated string. Replay:
 * `MAILCAIRN_FUZZ_SEED=<seed> npx tap test/fuzz/mcp-envelopes.test.ts`.
 */
import fc from 'fast-check';
import t from 'tap';
import { defectLines, FuzzTally, fuzzRuns, fuzzSeed, linesCarrying } from '../helpers/fuzz-tally.ts';
import { inParallel, jsonRpcAnswer, startMcpFuzzService } from '../helpers/mcp-fuzz-service.ts';

t.setTimeout(115_000);

const SEED = fuzzSeed(30_101);
const RUNS = fuzzRuns(1_000);

/** A generated body: its text (or bytes, once damaged) and the distinctive strings it carries (for the log check). */
type Body = { text: string; markers: string[] };
type Damaged = { bytes: Buffer; markers: string[]; label: string };

const json = JSON.stringify;
const obj = (entries: ReadonlyArray<readonly [string, string]>): string => `{${entries.map(([k, v]) => `${json(k)}:${v}`).join(',')}}`;
const arr = (items: readonly string[]): string => `[${items.join(',')}]`;
/** One value nested `depth` levels deep, as arrays or objects, built as text (no recursion anywhere). */
const nested = (depth: number, shape: 'array' | 'object', inner = '1'): string =>
  shape === 'array' ? `${'['.repeat(depth)}${inner}${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}${inner}${'}'.repeat(depth)}`;

/** Distinctive text, found again if it ever reaches a log line. */
const marker = fc.stringMatching(/^[A-Za-z][A-Za-z0-9]{13,19}$/);
const markerText: fc.Arbitrary<Body> = marker.map((m) => ({ text: json(m), markers: [m] }));
const constant = (text: string): fc.Arbitrary<Body> => fc.constant({ text, markers: [] });

const TOOLS = ['list_accounts', 'list_emails', 'search_emails', 'get_email_content', 'set_mail_flags', 'list_contacts', 'send_email', 'ask_mail'];
const METHODS = [
  'initialize',
  'ping',
  'tools/list',
  'tools/call',
  'resources/list',
  'resources/read',
  'prompts/list',
  'prompts/get',
  'logging/setLevel',
  'completion/complete',
  'tasks/get',
  'tasks/list',
  'sampling/createMessage',
  'notifications/initialized',
  'notifications/cancelled',
  'notifications/progress',
  'notifications/roots/list_changed',
  '__proto__',
  'constructor',
  'toString',
  'hasOwnProperty',
  '',
  'tools/call\u0000',
  'TOOLS/LIST',
];
const PROTO_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'valueOf', 'hasOwnProperty'];

/** Any JSON value, as text: small ones of every type, deep ones, huge strings. */
const anyValue: fc.Arbitrary<Body> = fc.oneof(
  { weight: 12, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => ({ text: json(v) ?? 'null', markers: [] })) },
  { weight: 2, arbitrary: markerText },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }).map((s) => ({ text: json(s), markers: [] })) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }).map((s) => ({ text: json(s), markers: [] })) },
  {
    weight: 2,
    arbitrary: fc
      .record({ depth: fc.integer({ min: 30, max: 8_000 }), shape: fc.constantFrom('array' as const, 'object' as const) })
      .map(({ depth, shape }) => ({
        text: nested(depth, shape),
        markers: [],
      })),
  },
  { weight: 1, arbitrary: fc.integer({ min: 1_000, max: 100_000 }).map((n) => ({ text: json('x'.repeat(n)), markers: [] })) },
  { weight: 1, arbitrary: fc.constantFrom('1e308', '-0', '1e-400', '123456789012345678901234567890', '0.1e1', '-1').map((text) => ({ text, markers: [] })) },
  {
    weight: 1,
    arbitrary: fc.tuple(fc.constantFrom(...PROTO_KEYS), marker).map(([k, m]) => ({ text: obj([[k, json(m)]]), markers: [m] })),
  },
);

const version: fc.Arbitrary<Body | null> = fc.oneof(
  { weight: 40, arbitrary: constant('"2.0"') },
  { weight: 1, arbitrary: fc.constant(null) },
  {
    weight: 3,
    arbitrary: fc.constantFrom('"1.0"', '"2"', '2', '2.0', 'null', '""', '" 2.0"', '"2.0\\u0000"', 'true', '[]', '{}').map((text) => ({ text, markers: [] })),
  },
);

const id: fc.Arbitrary<Body | null> = fc.oneof(
  { weight: 20, arbitrary: fc.integer({ min: -1_000, max: 1_000_000 }).map((n) => ({ text: String(n), markers: [] })) },
  { weight: 3, arbitrary: markerText },
  { weight: 1, arbitrary: fc.constant(null) },
  {
    weight: 2,
    arbitrary: fc
      .constantFrom('null', '""', '1.5', '-0', '1e308', '9007199254740993', 'true', 'false', '{}', '[]', '[1]', '{"a":1}', '"__proto__"', '"constructor"')
      .map((text) => ({ text, markers: [] })),
  },
  { weight: 1, arbitrary: fc.integer({ min: 1_000, max: 100_000 }).map((n) => ({ text: json('i'.repeat(n)), markers: [] })) },
);

const method: fc.Arbitrary<Body | null> = fc.oneof(
  { weight: 16, arbitrary: fc.constantFrom('tools/call', 'tools/list', 'ping', 'initialize').map((m) => ({ text: json(m), markers: [] })) },
  { weight: 8, arbitrary: fc.constantFrom(...METHODS).map((m) => ({ text: json(m), markers: [] })) },
  { weight: 2, arbitrary: markerText },
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 1, arbitrary: fc.constantFrom('42', 'null', '[]', '{}', 'true').map((text) => ({ text, markers: [] })) },
);

/** Params of `tools/call` in shapes right and wrong. */
const callParams: fc.Arbitrary<Body> = fc
  .record({
    name: fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom(...TOOLS).map((n) => ({ text: json(n), markers: [] as string[] })) },
      { weight: 2, arbitrary: markerText },
      { weight: 1, arbitrary: fc.constantFrom('1', 'null', '[]', '{}', '""', '"__proto__"').map((text) => ({ text, markers: [] as string[] })) },
    ),
    args: fc.option(anyValue, { nil: null }),
    meta: fc.option(anyValue, { nil: null }),
    task: fc.option(anyValue, { nil: null, freq: 8 }),
  })
  .map(({ name, args, meta, task }) => {
    const entries: Array<[string, string]> = [['name', name.text]];
    if (args) entries.push(['arguments', args.text]);
    if (meta) entries.push(['_meta', meta.text]);
    if (task) entries.push(['task', task.text]);
    return { text: obj(entries), markers: [...name.markers, ...(args?.markers ?? []), ...(meta?.markers ?? []), ...(task?.markers ?? [])] };
  });

const initializeParams: fc.Arbitrary<Body> = fc
  .record({ protocolVersion: fc.constantFrom('"2025-06-18"', '"2024-11-05"', '"1999-01-01"', '1', 'null'), capabilities: anyValue, clientInfo: anyValue })
  .map(({ protocolVersion, capabilities, clientInfo }) => ({
    text: obj([
      ['protocolVersion', protocolVersion],
      ['capabilities', capabilities.text],
      ['clientInfo', clientInfo.text],
    ]),
    markers: [...capabilities.markers, ...clientInfo.markers],
  }));

const params: fc.Arbitrary<Body | null> = fc.oneof(
  { weight: 3, arbitrary: fc.constant(null) },
  { weight: 5, arbitrary: callParams },
  { weight: 1, arbitrary: initializeParams },
  { weight: 1, arbitrary: anyValue },
  { weight: 2, arbitrary: anyValue.map((v) => ({ text: obj([['v', v.text]]), markers: v.markers })) },
  { weight: 1, arbitrary: fc.constantFrom('{"cursor":1}', '{"cursor":"x"}', '{"level":"debug"}', '{"requestId":1}').map((text) => ({ text, markers: [] })) },
);

const extras: fc.Arbitrary<Array<[string, Body]>> = fc.oneof(
  { weight: 12, arbitrary: fc.constant<Array<[string, Body]>>([]) },
  {
    weight: 2,
    arbitrary: fc.array(fc.tuple(fc.oneof(fc.constantFrom(...PROTO_KEYS, 'id', 'jsonrpc', 'method', 'params', 'result', 'error', 'extra'), marker), anyValue), {
      minLength: 1,
      maxLength: 3,
    }),
  },
);

const message: fc.Arbitrary<Body> = fc
  .record({
    kind: fc.constantFrom('request', 'request', 'request', 'request', 'request', 'notification', 'result', 'error', 'garbage'),
    version,
    id,
    method,
    params,
    payload: anyValue,
    wrapped: fc.boolean(),
    code: fc.oneof(fc.integer({ min: -33_000, max: 60_000 }).map(String), fc.constantFrom('"x"', 'null', '1.5')),
    extras,
  })
  .map(({ kind, version, id, method, params, payload, wrapped, extras, code }) => {
    if (kind === 'garbage') return payload;
    const entries: Array<[string, string]> = [];
    const markers: string[] = [];
    const add = (key: string, body: Body | null): void => {
      if (body === null) return;
      entries.push([key, body.text]);
      markers.push(...body.markers);
    };
    add('jsonrpc', version);
    if (kind !== 'notification') add('id', id);
    if (kind === 'request' || kind === 'notification') {
      add('method', method);
      add('params', params);
    } else if (kind === 'result') add('result', wrapped ? { text: obj([['v', payload.text]]), markers: payload.markers } : payload);
    else
      add('error', {
        text: obj([
          ['code', code],
          ['message', '"m"'],
          ['data', payload.text],
        ]),
        markers: payload.markers,
      });
    for (const [key, value] of extras) {
      entries.push([key, value.text]);
      markers.push(...value.markers, key);
    }
    return { text: obj(entries), markers };
  });

const body: fc.Arbitrary<Body> = fc.oneof(
  { weight: 30, arbitrary: message },
  {
    weight: 4,
    arbitrary: fc.array(message, { maxLength: 8 }).map((ms) => ({ text: arr(ms.map((m) => m.text)), markers: ms.flatMap((m) => m.markers) })),
  },
  { weight: 2, arbitrary: fc.tuple(message, fc.integer({ min: 99, max: 140 })).map(([m, n]) => ({ text: arr(Array(n).fill(m.text)), markers: m.markers })) },
  { weight: 1, arbitrary: message.map((m) => ({ text: arr([arr([m.text])]), markers: m.markers })) },
  { weight: 1, arbitrary: fc.constantFrom('[]', '[[]]', '{}', 'null', '1', '"x"', 'true', '').map((text) => ({ text, markers: [] })) },
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: 900_000, max: 1_100_000 })
      .map((n) => ({ text: json({ jsonrpc: '2.0', id: 1, method: 'ping', params: { pad: 'p'.repeat(n) } }), markers: [] })),
  },
);

/** Bytes no UTF-8 text holds: a lone continuation, a truncated sequence, an encoded surrogate, an overlong slash, 0xFF. */
const INVALID_UTF8 = [Buffer.from([0x80]), Buffer.from([0xc3]), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from([0xc0, 0xaf]), Buffer.from([0xff, 0xfe])];

const damage = fc.oneof(
  { weight: 30, arbitrary: fc.constant({ kind: 'none' as const, at: 0, which: 0 }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('invalid-utf8' as const), at: fc.nat(), which: fc.nat({ max: INVALID_UTF8.length - 1 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('truncated' as const), at: fc.nat(), which: fc.constant(0) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constantFrom('bom' as const, 'trailing-garbage' as const), at: fc.constant(0), which: fc.constant(0) }) },
);

const input: fc.Arbitrary<Damaged> = fc.tuple(body, damage).map(([b, d]) => {
  const bytes = Buffer.from(b.text, 'utf8');
  const at = bytes.length === 0 ? 0 : d.at % bytes.length;
  switch (d.kind) {
    case 'none':
      return { bytes, markers: b.markers, label: 'text' };
    case 'invalid-utf8':
      return { bytes: Buffer.concat([bytes.subarray(0, at), INVALID_UTF8[d.which]!, bytes.subarray(at)]), markers: b.markers, label: 'invalid-utf8' };
    case 'truncated':
      return { bytes: bytes.subarray(0, at), markers: b.markers, label: 'truncated' };
    case 'bom':
      return { bytes: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), bytes]), markers: b.markers, label: 'bom' };
    default: // trailing garbage
      return { bytes: Buffer.concat([bytes, Buffer.from('}]{x')]), markers: b.markers, label: 'garbage' };
  }
});

/** What the answer's status must come with; null when it is right. */
function misanswer(status: number, text: string): string | null {
  if (status === 202) return text === '' ? null : '202 with a body';
  if (status === 413) return text === '' ? null : '413 with a body';
  const answer = jsonRpcAnswer(text);
  if (!answer.wellFormed) return `${status} without a well-formed JSON-RPC answer`;
  if (status === 200) return null;
  if (status === 400) {
    const parsed = JSON.parse(text) as { id?: unknown };
    return !Array.isArray(parsed) && parsed.id === null ? null : '400 whose error is not of id null';
  }
  return `status ${status}`;
}

t.test('JSON-RPC envelopes and batches on /mcp', async (t) => {
  const service = await startMcpFuzzService(t);
  const inputs = fc.sample(input, { seed: SEED, numRuns: RUNS });
  const tally = new FuzzTally('mcp-envelopes', SEED);
  const misanswered: string[] = [];
  const internal: string[] = [];
  const logStart = service.sync.logs.lines.length;
  const rawStart = service.sync.logs.raw().length;

  await inParallel(inputs, 6, async (one, index) => {
    const { status, text } = await service.post(one.bytes);
    const answer = status === 202 || status === 413 ? null : jsonRpcAnswer(text);
    const codes = answer?.codes ?? [];
    if (codes.includes(-32603)) internal.push(`#${index}: ${one.bytes.subarray(0, 300).toString('utf8')} → ${text.slice(0, 300)}`);
    tally.record(status, codes.length === 0 ? undefined : codes.length === 1 ? codes[0] : 'batch', one.bytes.subarray(0, 300).toString('utf8'));
    const wrong = misanswer(status, text);
    if (wrong !== null && misanswered.length < 5) misanswered.push(`#${index} (${one.label}, ${one.bytes.length} bytes): ${wrong}`);
  });

  // Still serving: an ordinary call after the storm.
  const after = await service.post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_accounts', arguments: {} } }));
  t.equal(after.status, 200, 'the service answers an ordinary call afterwards');

  const lines = service.sync.logs.lines.slice(logStart);
  const { restarts, defects } = defectLines(lines);
  const leaks = linesCarrying(
    service.sync.logs.raw().slice(rawStart),
    inputs.flatMap((i) => i.markers),
  );
  t.comment(tally.summary({ restarts, defects: defects.length, leaks: leaks.length }));
  t.ok(tally.requests >= 1_000 || RUNS < 1_000, `at least 1,000 inputs (${tally.requests})`);
  t.equal(tally.fiveHundreds, 0, `no 5xx (seed ${SEED}): ${JSON.stringify(tally.serverErrors)}`);
  t.same(misanswered, [], `every answer follows the transport's rules (seed ${SEED})`);
  t.same(internal, [], `no -32603: a caller's envelope is never our internal error (seed ${SEED})`);
  t.equal(restarts, 0, 'no actor restarted');
  t.same(
    defects.map((d) => d.event),
    [],
    'no defect line',
  );
  t.same(leaks, [], 'no log line carries a generated string');
});
