/**
 * Fuzz family "http-headers": hostile header blocks on `/mcp` and the admin
 * API, written on raw `net` sockets (fetch and undici would normalise them):
 * `Authorization` (schemes, empty, huge, non-ASCII, runs of spaces,
 * repeated), `Content-Type` (missing, wrong, parameters, charset lies),
 * `Content-Length` lies (shorter or longer than the body, negative, not a
 * number, repeated with different values), chunked trickery (bad sizes,
 * Transfer-Encoding beside Content-Length, chunk extensions, trailers),
 * oversized and duplicated headers, and `Host` oddities. Every answer is a
 * status below 500 or a closed connection; no connection outlives the
 * listener's bounds; nothing restarts, nothing is logged as a defect, no
 * log line carries the input. Replay: `MAILCAIRN_FUZZ_SEED=<seed>`.
 */
import fc from 'fast-check';
import t from 'tap';
import { defectLines, FuzzTally, fuzzRuns, fuzzSeed, linesCarrying } from '../helpers/fuzz-tally.ts';
import { FUZZ_RECEIVE_TIMEOUT_MS, inParallel, startFuzzService } from '../helpers/fuzz-service.ts';
import { exchange, statusesOf } from '../helpers/raw-http.ts';

t.setTimeout(115_000);

const SEED = fuzzSeed(30_003);
const RUNS = fuzzRuns(1_000);

type Case = {
  surface: 'mcp' | 'admin';
  method: string;
  target: string;
  authorization: readonly string[];
  contentType: readonly string[];
  framing: Framing;
  host: readonly string[];
  extra: ReadonlyArray<readonly [string, string]>;
  body: string;
  close: boolean;
};

type Framing =
  | 'exact'
  | 'shorter'
  | 'longer'
  | 'negative'
  | 'not-a-number'
  | 'repeated-different'
  | 'repeated-same'
  | 'none'
  | 'chunked'
  | 'chunked-bad-size'
  | 'chunked-extension'
  | 'chunked-trailer'
  | 'chunked-and-length'
  | 'chunked-not-last'
  | 'chunked-unterminated';

/** Printable text that is distinctive enough to be found again in a log line. */
const marker = fc.stringMatching(/^[A-Za-z0-9]{12,24}$/);
const unicode = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 });
const huge = fc.integer({ min: 4_000, max: 20_000 }).map((n) => 'A'.repeat(n));

const authorization = (key: string): fc.Arbitrary<readonly string[]> =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constant([`Bearer ${key}`]) },
    {
      weight: 2,
      arbitrary: fc.array(
        fc.oneof(
          fc.constant(`Bearer ${key}`),
          fc.constant(`bearer ${key}`),
          fc.constant(''),
          fc.constant('Bearer'),
          fc.constant('Bearer '),
          fc.integer({ min: 2, max: 400 }).map((n) => `Bearer${' '.repeat(n)}${key}`),
          fc.constant(`Bearer ${key} trailing`),
          fc.constant(`Bearer\t${key}`),
          marker.map((m) => `Basic ${Buffer.from(`user:${m}`).toString('base64')}`),
          marker.map((m) => `Digest username="${m}"`),
          marker.map((m) => `Bearer mc_${m}`),
          unicode.map((u) => `Bearer ${u}`),
          huge.map((h) => `Bearer ${h}`),
          marker.map((m) => `${m} ${m}`),
        ),
        { maxLength: 3 },
      ),
    },
  );

const contentType = fc.oneof(
  { weight: 3, arbitrary: fc.constant(['application/json']) },
  {
    weight: 2,
    arbitrary: fc.array(
      fc.oneof(
        fc.constant('application/json'),
        fc.constant('application/json; charset=utf-8'),
        fc.constant('application/json; charset=utf-16'),
        fc.constant('application/json; charset=latin1'),
        fc.constant('application/json;;;charset='),
        fc.constant('APPLICATION/JSON'),
        fc.constant('text/plain'),
        fc.constant('multipart/form-data; boundary=x'),
        fc.constant('application/x-www-form-urlencoded'),
        fc.constant(''),
        marker.map((m) => `application/${m}`),
        unicode.map((u) => `application/json; x=${u}`),
      ),
      { maxLength: 2 },
    ),
  },
);

const framing: fc.Arbitrary<Framing> = fc.constantFrom<Framing>(
  'exact',
  'exact',
  'exact',
  'exact',
  'exact',
  'shorter',
  'longer',
  'negative',
  'not-a-number',
  'repeated-different',
  'repeated-same',
  'none',
  'chunked',
  'chunked-bad-size',
  'chunked-extension',
  'chunked-trailer',
  'chunked-and-length',
  'chunked-not-last',
  'chunked-unterminated',
);

const host: fc.Arbitrary<readonly string[]> = fc.oneof(
  { weight: 12, arbitrary: fc.constant(['127.0.0.1']) },
  fc.constant<string[]>([]),
  fc.constant(['127.0.0.1', '127.0.0.1']),
  fc.constant(['127.0.0.1', 'evil.example']),
  fc.constant(['']),
  fc.constant(['127.0.0.1:99999']),
  fc.constant(['localhost:abc']),
  fc.constant(['[::1']),
  marker.map((m) => [`${m}.example`]),
  unicode.map((u) => [u]),
  huge.map((h) => [h]),
);

const extra = fc.oneof(
  { weight: 10, arbitrary: fc.constant<Array<[string, string]>>([]) },
  huge.map((h): Array<[string, string]> => [['X-Big', h]]),
  fc.integer({ min: 20, max: 300 }).map((n): Array<[string, string]> => Array.from({ length: n }, () => ['X-Dup', 'same'])),
  fc
    .integer({ min: 2, max: 40 })
    .map((n): Array<[string, string]> => Array.from({ length: n }, (_, i) => ['Accept', i % 2 ? 'application/json' : 'text/event-stream'])),
  fc.constant<Array<[string, string]>>([['Expect', '100-continue']]),
  fc.constant<Array<[string, string]>>([
    ['Connection', 'upgrade'],
    ['Upgrade', 'h2c'],
  ]),
  fc.constant<Array<[string, string]>>([['Content-Encoding', 'gzip']]),
  fc.constant<Array<[string, string]>>([['Mcp-Protocol-Version', 'not-a-version']]),
  marker.map((m): Array<[string, string]> => [[`X-${m}`, m]]),
);

const body = fc.oneof(
  { weight: 5, arbitrary: fc.constant(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' })) },
  fc.constant(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' })),
  fc.constant('{}'),
  fc.constant(''),
  marker.map((m) => JSON.stringify({ jsonrpc: '2.0', id: m, method: m })),
  unicode,
  fc.constant('{"jsonrpc":"2.0","id":1,"method":"tools/list"'),
);

function caseOf(keys: { mcp: string; admin: string }): fc.Arbitrary<Case> {
  return fc.oneof(fc.constant<'mcp'>('mcp'), fc.constant<'admin'>('admin')).chain((surface) =>
    fc.record({
      surface: fc.constant(surface),
      method: fc.oneof(
        { weight: 6, arbitrary: fc.constant(surface === 'mcp' ? 'POST' : 'GET') },
        fc.constantFrom('POST', 'GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'BREW'),
      ),
      target:
        surface === 'mcp'
          ? fc.constantFrom('/mcp', '/mcp', '/mcp', '/mcp', '/mcp?x=1', '/mcp/', 'http://127.0.0.1/mcp', '/MCP', '/mcp#frag', '*')
          : fc.constantFrom(
              '/api/admin/session',
              '/api/admin/session',
              '/api/admin/outbox/summary',
              '/api/admin/contacts',
              '/api/admin/folders/erasure',
              'http://127.0.0.1/api/admin/session',
              '/api/admin/../mcp',
            ),
      authorization: authorization(surface === 'mcp' ? keys.mcp : keys.admin),
      contentType,
      framing,
      host,
      extra,
      body,
      close: fc.boolean(),
    }),
  );
}

/** The request's bytes as written on the wire. */
function wire(c: Case): Buffer {
  const lines = [`${c.method} ${c.target} HTTP/1.1`];
  for (const h of c.host) lines.push(`Host: ${h}`);
  for (const a of c.authorization) lines.push(`Authorization: ${a}`);
  for (const ct of c.contentType) lines.push(`Content-Type: ${ct}`);
  if (c.surface === 'mcp') lines.push('Accept: application/json, text/event-stream');
  for (const [name, value] of c.extra) lines.push(`${name}: ${value}`);
  if (c.close) lines.push('Connection: close');
  const bytes = Buffer.from(c.body, 'utf8');
  const length = bytes.length;
  let payload: Buffer = bytes;
  const chunked = (ext = '', trailer = ''): Buffer =>
    Buffer.concat([Buffer.from(`${length.toString(16)}${ext}\r\n`), bytes, Buffer.from(`\r\n0\r\n${trailer}\r\n`)]);
  switch (c.framing) {
    case 'exact':
      lines.push(`Content-Length: ${length}`);
      break;
    case 'shorter':
      lines.push(`Content-Length: ${Math.max(0, length - 5)}`);
      break;
    case 'longer':
      lines.push(`Content-Length: ${length + 50}`);
      break;
    case 'negative':
      lines.push(`Content-Length: -${length}`);
      break;
    case 'not-a-number':
      lines.push('Content-Length: 12abc');
      break;
    case 'repeated-different':
      lines.push(`Content-Length: ${length}`, `Content-Length: ${length + 1}`);
      break;
    case 'repeated-same':
      lines.push(`Content-Length: ${length}`, `Content-Length: ${length}`);
      break;
    case 'none':
      break;
    case 'chunked':
      lines.push('Transfer-Encoding: chunked');
      payload = chunked();
      break;
    case 'chunked-bad-size':
      lines.push('Transfer-Encoding: chunked');
      payload = Buffer.concat([Buffer.from('zz\r\n'), bytes, Buffer.from('\r\n0\r\n\r\n')]);
      break;
    case 'chunked-extension':
      lines.push('Transfer-Encoding: chunked');
      payload = chunked(';name=value;x="quoted"');
      break;
    case 'chunked-trailer':
      lines.push('Transfer-Encoding: chunked', 'Trailer: X-After');
      payload = chunked('', 'X-After: 1\r\nContent-Length: 5\r\n');
      break;
    case 'chunked-and-length':
      lines.push('Transfer-Encoding: chunked', `Content-Length: ${length}`);
      payload = chunked();
      break;
    case 'chunked-not-last':
      lines.push('Transfer-Encoding: chunked, identity');
      payload = chunked();
      break;
    case 'chunked-unterminated':
      lines.push('Transfer-Encoding: chunked');
      payload = Buffer.concat([Buffer.from(`${(length + 10).toString(16)}\r\n`), bytes]);
      break;
  }
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'utf8'), payload]);
}

/** Strings of a case distinctive enough to be looked for in the log. */
function needles(c: Case): string[] {
  const found = [...c.authorization, ...c.contentType, ...c.host, ...c.extra.map(([, v]) => v), c.body];
  return found.filter((s) => s.length >= 12 && !/^(A+|Bearer A+)$/.test(s));
}

t.test('fuzz http-headers', async (t) => {
  const service = await startFuzzService(t);
  const cases = fc.sample(caseOf({ mcp: service.mcpKey, admin: service.adminKey }), { seed: SEED, numRuns: RUNS });
  const tally = new FuzzTally('http-headers', SEED);
  const hung: string[] = [];
  await inParallel(cases, 16, async (c) => {
    const port = c.surface === 'mcp' ? service.mcpPort : service.adminPort;
    // No connection may outlive ReceiveTimeout (or IdleTimeout after an answer) by more than the check interval and a loaded machine.
    const result = await exchange(port, wire(c), FUZZ_RECEIVE_TIMEOUT_MS + 8_000);
    const statuses = statusesOf(result.bytes);
    if (!result.closedByServer) hung.push(`${c.surface} ${c.framing}`);
    if (statuses.length === 0) tally.record(0, result.closedByServer ? 'closed' : 'held open', c);
    for (const status of statuses) tally.record(status, undefined, c);
  });

  const { restarts, defects } = defectLines(service.sync.logs.lines);
  const leaks = linesCarrying(service.sync.logs.raw(), [...cases.flatMap(needles), service.mcpKey, service.adminKey]);
  t.comment(tally.summary({ restarts, defects: defects.length, leaks: leaks.length }));
  t.ok(tally.requests >= RUNS, `${tally.requests} answers to ${RUNS} requests`);
  t.equal(tally.fiveHundreds, 0, `no 5xx: ${JSON.stringify(tally.serverErrors)}`);
  t.same(hung, [], 'every connection closed by the server within its bounds');
  t.equal(restarts, 0, 'no restart');
  t.same(
    defects.map((l) => l.event),
    [],
    'no defect line',
  );
  t.same(leaks.slice(0, 3), [], 'no log line carries the input');
});
