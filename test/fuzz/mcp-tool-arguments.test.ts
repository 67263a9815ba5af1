/**
 * Fuzz family "mcp-tool-arguments": `tools/call` of every tool the service
 * lists (taken from its own `tools/list`), against a real service mirroring
 * a tiny Dovecot mailbox, so the read tools really read. Each tool's
 * arguments are built from its published input schema: plausible values
 * (real stored-email, thread, draft and contact ids; enum members; numbers
 * inside their bounds) mixed with hostile ones — wrong JSON types, numbers
 * out of bounds (negative, 2^53, 1e308, fractions), unicode edge cases
 * (lone surrogates, bidi overrides, zero-width, non-characters), NUL and
 * other control characters, FTS5 syntax (operators, column filters, quotes,
 * parentheses), huge strings, prototype keys (`__proto__`, `constructor`,
 * `prototype`) and extra members — and `arguments` that is no object at
 * all. The account's SMTP server is a closed loopback port: drafts and
 * sends are recorded, and nothing is delivered anywhere.
 *
 * Every answer is 200 with a well-formed JSON-RPC answer: a tool result, a
 * tool refusal with its five-digit code, or -32602 for params of the wrong
 * shape (docs/mcp-tools.md); never 54001 (an undiagnosed failure: the
 * NUL-in-an-address fault of issue 30 was one), never -32603, never 5xx.
 * Nothing restarts, no defect line, no log line carries a generated string.
 * Replay: `MAILCAIRN_FUZZ_SEED=<seed> npx tap test/fuzz/mcp-tool-arguments.test.ts`.
 */
import fc from 'fast-check';
import t from 'tap';
import { defectLines, FuzzTally, fuzzRuns, fuzzSeed, linesCarrying } from '../helpers/fuzz-tally.ts';
import { inParallel, jsonRpcAnswer, startMcpFuzzService, type McpFuzzService } from '../helpers/mcp-fuzz-service.ts';

t.setTimeout(115_000);

const SEED = fuzzSeed(30_102);
const RUNS = fuzzRuns(1_000);

type JsonSchema = {
  type?: string | string[];
  enum?: unknown[];
  format?: string;
  minimum?: number;
  exclusiveMinimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  items?: JsonSchema;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  anyOf?: JsonSchema[];
};
type ListedTool = { name: string; inputSchema: JsonSchema };
/** Absent: the member is left out (or, for `arguments` itself, the call has none). */
const ABSENT = Symbol('absent');
type Generated = unknown;

/** Text FTS5 would read as syntax, and text SQLite's C strings stop at. */
const FTS_HOSTILE = [
  'a@b\u0000',
  '\u0000',
  '\u0000leading',
  'x\u0000"',
  '"',
  '""',
  '"unbalanced',
  'budget AND report',
  'budget OR',
  'NOT budget',
  'NEAR(budget report, 2)',
  '*',
  'budg*',
  '^budget',
  '+budget',
  '-budget',
  'subject:budget',
  '{subject from_text}: x',
  '(',
  ')',
  '((budget) OR (report',
  "'; DROP TABLE messages; --",
];
const UNICODE_EDGE = [
  '\uD800',
  '\uDC00x',
  'x\uD83D',
  '\u202Eevil',
  '\u200B\u200D\uFEFF',
  '\uFFFF\uFFFE',
  'e\u0301\u0301\u0301',
  '🧾👩‍👩‍👧',
  '\u0085\u2028\u2029',
  'İıß',
];
const PROTO = ['__proto__', 'constructor', 'prototype', 'toString', 'valueOf', 'hasOwnProperty'];

const marker = fc.stringMatching(/^[A-Za-z][A-Za-z0-9]{13,19}$/);

const hostileString: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...FTS_HOSTILE, ...UNICODE_EDGE, ...PROTO, '', ' ', '\t\n', '@', '@.', 'a@', '../../etc/passwd', '%00', '\u0000') },
  { weight: 2, arbitrary: marker },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 30 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 30 }) },
  { weight: 1, arbitrary: fc.integer({ min: 1_000, max: 250_000 }).map((n) => 'x'.repeat(n)) },
  { weight: 1, arbitrary: marker.map((m) => `${m}@corp.example\u0000`) },
);

const hostileNumber = fc.constantFrom(-1, 0, 1, 101, 201, 2 ** 31, 2 ** 53, -(2 ** 53), 1e308, -1e308, 1.5, -0, 5e-324);

/** An object whose own keys are prototype names (defined, not assigned: `__proto__` stays a member). */
function withKeys(entries: ReadonlyArray<readonly [string, unknown]>): Record<string, unknown> {
  const value: Record<string, unknown> = {};
  for (const [key, v] of entries) Object.defineProperty(value, key, { value: v, enumerable: true, writable: true, configurable: true });
  return value;
}

const hostileValue: fc.Arbitrary<Generated> = fc.oneof(
  { weight: 4, arbitrary: hostileString },
  { weight: 2, arbitrary: hostileNumber },
  { weight: 1, arbitrary: fc.boolean() },
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 1, arbitrary: fc.array(fc.oneof(hostileString, hostileNumber), { maxLength: 4 }) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...PROTO), marker).map(([k, m]) => withKeys([[k, m]])) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
);

/** Pieces without white space or `@`: what an address the schema admits may still carry. */
const CONTROL_PIECES = ['x\u0000', '\u0000', 'b\u0000', '\u0001', '\u007f', '\u0085', '\uD800'];
const SYNTAX_PIECES = ['"', 'a""b', 'a*', '^a', '+a', '-a', 'NEAR(a', 'subject:a', '(', ')', 'a)', "o'b", 'AND', 'OR', 'NOT'];

/** Hostile text the member's schema may well admit: addresses with FTS5 syntax or control characters inside, short hostile text elsewhere. */
function shapedHostile(name: string, schema: JsonSchema): fc.Arbitrary<Generated> | null {
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  const lower = name.toLowerCase();
  const text = type === 'string' ? schema : type === 'array' && schema.items?.type === 'string' ? schema.items : null;
  if (text === null) return null;
  const piece = fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...CONTROL_PIECES) },
    { weight: 3, arbitrary: fc.constantFrom(...SYNTAX_PIECES) },
    { weight: 1, arbitrary: marker },
  );
  const value: fc.Arbitrary<string> =
    lower.includes('address') || ['to', 'cc', 'bcc'].includes(lower)
      ? fc.tuple(piece, fc.constantFrom('', 'b', 'corp.example'), piece).map(([a, b, c]) => `${a}@${b}${c}`)
      : fc.oneof(
          fc.constantFrom(...FTS_HOSTILE, ...UNICODE_EDGE),
          fc.tuple(piece, piece).map(([a, b]) => `${a} ${b}`),
        );
  const bounded = value.map((v) => v.slice(0, text.maxLength ?? v.length));
  return type === 'array' ? fc.array(bounded, { minLength: 1, maxLength: 2 }) : bounded;
}

/** What the service itself holds: ids the tools find (so reads really read). */
type Pool = { storedEmailIds: string[]; threadIds: string[]; draftIds: string[]; contactIds: string[]; outgoingIds: string[] };

function plausibleString(name: string, schema: JsonSchema, pool: Pool): fc.Arbitrary<string> {
  if (schema.format === 'date-time') return fc.constantFrom('2025-06-01T00:00:00Z', '2025-06-03T00:00:00+02:00', '1970-01-01T00:00:00Z');
  const lower = name.toLowerCase();
  if (lower.includes('address')) return fc.constantFrom('finance@corp.example', '@corp.example', 'rita@example.org');
  if (lower === 'query') return fc.constantFrom('finance', 'Fuzz', 'fuzz@example.org');
  if (lower === 'storedemailid' || lower === 'answeredemailid' || lower === 'storedemailids') return fc.constantFrom(...pool.storedEmailIds, 'e99');
  if (lower === 'threadid') return fc.constantFrom(...pool.threadIds);
  if (lower === 'draftid') return fc.constantFrom(...pool.draftIds, 'd99');
  if (lower === 'outgoingemailid') return fc.constantFrom(...pool.outgoingIds);
  if (lower === 'contactid') return fc.constantFrom(...pool.contactIds, 'c99');
  if (lower === 'account' || lower === 'accounts') return fc.constant('rita');
  if (lower === 'folders') return fc.constant('inbox');
  if (['to', 'cc', 'bcc', 'address'].includes(lower)) return fc.constantFrom('team@example.org', 'finance@corp.example');
  if (lower === 'keyword' || lower === 'keywords') return fc.constantFrom('$Label1', 'fuzz');
  if (lower === 'idempotencykey' || lower === 'requestid') return marker;
  if (lower === 'cursor') return fc.constantFrom('x', 'AAAA');
  return fc.constantFrom('budget', 'quarterly budget', 'Réunion', 'lunch OR report', 'a note', 'Fuzz text');
}

/** A value that fits the schema, mostly (the service's answer tells us if not). */
function plausible(name: string, schema: JsonSchema, pool: Pool, depth = 0): fc.Arbitrary<Generated> {
  if (schema.enum !== undefined) return fc.constantFrom(...schema.enum);
  if (schema.anyOf !== undefined) return fc.oneof(...schema.anyOf.map((s) => plausible(name, s, pool, depth)));
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'string':
      return plausibleString(name, schema, pool);
    case 'integer':
      // Inside the published bounds, and at most 50 (search's ranked results; larger pages are no different).
      return fc.integer({ min: schema.minimum ?? (schema.exclusiveMinimum ?? 0) + 1, max: Math.min(schema.maximum ?? 50, 50) });
    case 'number':
      return fc.double({ min: schema.minimum ?? 0, max: schema.maximum ?? 100, noNaN: true });
    case 'boolean':
      return fc.boolean();
    case 'array':
      return fc.array(plausible(name, schema.items ?? {}, pool, depth + 1), { minLength: 1, maxLength: 3 });
    case 'object':
      return depth > 3 ? fc.constant({}) : argumentsOf(schema, pool, depth + 1, false);
    default:
      return fc.oneof(fc.string({ maxLength: 20 }), fc.constant(null));
  }
}

/**
 * The arguments of one call, in four kinds: plausible throughout (the
 * tools' own work runs); plausible but for one member (hostile, shaped to
 * pass the schema where it can, or a required one left out) or one extra
 * member — so the one hostile value is what reaches the tool, not refused
 * beside another; hostile member by member; and no object at all.
 */
function argumentsFor(schema: JsonSchema, pool: Pool): fc.Arbitrary<Generated | typeof ABSENT> {
  const clean = argumentsOf(schema, pool, 0, false);
  const properties = Object.entries(schema.properties ?? {});
  const mutations: Array<fc.Arbitrary<{ key: string; value: Generated | typeof ABSENT }>> = [
    fc.tuple(fc.oneof(fc.constantFrom(...PROTO, ''), marker), hostileValue).map(([key, value]) => ({ key, value })),
  ];
  for (const [name, member] of properties) {
    const shaped = shapedHostile(name, member);
    // Text members thrice as often: text is what reaches filters and FTS5.
    mutations.push(
      ...Array<null>(shaped === null ? 1 : 3)
        .fill(null)
        .map(() =>
          fc
            .oneof({ weight: 2, arbitrary: hostileValue }, ...(shaped === null ? [] : [{ weight: 4, arbitrary: shaped }]), {
              weight: 1,
              arbitrary: fc.constant<typeof ABSENT>(ABSENT),
            })
            .map((value) => ({ key: name, value })),
        ),
    );
  }
  const oneHostile = fc.tuple(clean, fc.oneof(...mutations)).map(([args, { key, value }]) => {
    const entries = Object.entries(args as Record<string, unknown>).filter(([k]) => k !== key);
    return withKeys(value === ABSENT ? entries : [...entries, [key, value]]);
  });
  return fc.oneof(
    { weight: 3, arbitrary: clean },
    { weight: 5, arbitrary: oneHostile },
    { weight: 1, arbitrary: argumentsOf(schema, pool, 0, true) },
    {
      weight: 1,
      arbitrary: fc.oneof(
        fc.constant<Generated | typeof ABSENT>(ABSENT),
        fc.constant(null),
        fc.array(hostileValue, { maxLength: 3 }),
        hostileString,
        hostileNumber,
        fc.boolean(),
      ),
    },
  );
}

/** An object member by member: plausible or absent (optional ones), and hostile too when `hostile`. */
function argumentsOf(schema: JsonSchema, pool: Pool, depth: number, hostile: boolean): fc.Arbitrary<Generated> {
  const properties = Object.entries(schema.properties ?? {});
  const required = new Set(schema.required ?? []);
  const members = properties.map(([name, member]) =>
    fc.oneof(
      ...(required.has(name) && !hostile ? [] : [{ weight: required.has(name) ? 1 : 6, arbitrary: fc.constant<typeof ABSENT | Generated>(ABSENT) }]),
      { weight: required.has(name) ? 12 : 7, arbitrary: plausible(name, member, pool, depth) },
      ...(hostile ? [{ weight: 3, arbitrary: hostileValue }] : []),
      ...(hostile && shapedHostile(name, member) !== null ? [{ weight: 3, arbitrary: shapedHostile(name, member)! }] : []),
    ),
  );
  const extras = hostile
    ? fc.oneof(
        { weight: 8, arbitrary: fc.constant<Array<[string, Generated]>>([]) },
        { weight: 2, arbitrary: fc.array(fc.tuple(fc.oneof(fc.constantFrom(...PROTO, ''), marker), hostileValue), { minLength: 1, maxLength: 2 }) },
      )
    : fc.constant<Array<[string, Generated]>>([]);
  return fc.tuple(fc.tuple(...members), extras).map(([values, extra]) => {
    const entries: Array<[string, Generated]> = [];
    properties.forEach(([name], i) => {
      if (values[i] !== ABSENT) entries.push([name, values[i]]);
    });
    return withKeys([...entries, ...extra]);
  });
}

/** Every string of a generated value (keys too), for the log check. */
function stringsOf(value: unknown, into: string[] = []): string[] {
  if (typeof value === 'string') into.push(value);
  else if (Array.isArray(value)) for (const v of value) stringsOf(v, into);
  else if (typeof value === 'object' && value !== null)
    for (const key of Object.keys(value)) {
      into.push(key);
      stringsOf((value as Record<string, unknown>)[key], into);
    }
  return into;
}

async function call(service: McpFuzzService, name: string, args: unknown): Promise<Record<string, unknown>> {
  const { text } = await service.post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }));
  const answer = JSON.parse(text) as { result?: { structuredContent?: Record<string, unknown> } };
  return answer.result?.structuredContent ?? {};
}

/** Ids the tools will find: stored emails and threads of the mirror, one draft and one contact made now. */
async function poolOf(service: McpFuzzService): Promise<Pool> {
  const listed = (await call(service, 'list_emails', {})) as { emails?: Array<{ storedEmailId: string; threadId?: string }> };
  const emails = listed.emails ?? [];
  const draft = (await call(service, 'save_draft', { account: 'rita', subject: 'fuzz draft', plainTextBody: 'draft body', to: ['team@example.org'] })) as {
    draftId?: unknown;
  };
  const contact = (await call(service, 'create_contact', { name: 'Fuzz Contact', addresses: [{ address: 'fuzz@example.org' }] })) as {
    contact?: { id?: unknown };
  };
  const sent = (await call(service, 'send_email', {
    account: 'rita',
    to: ['team@example.org'],
    subject: 'fuzz send',
    plainTextBody: 'never delivered: the SMTP port is closed',
    idempotencyKey: 'fuzz-pool',
  })) as { outgoingEmailId?: unknown };
  const strings = (v: unknown): string[] => (typeof v === 'string' ? [v] : []);
  return {
    storedEmailIds: emails.map((e) => e.storedEmailId),
    threadIds: emails.flatMap((e) => strings(e.threadId)),
    draftIds: strings(draft.draftId),
    contactIds: strings(contact.contact?.id),
    outgoingIds: strings(sent.outgoingEmailId),
  };
}

t.test("every tool's arguments through /mcp", async (t) => {
  const service = await startMcpFuzzService(t);
  const listed = await service.post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }));
  const tools = (JSON.parse(listed.text) as { result: { tools: ListedTool[] } }).result.tools;
  t.ok(tools.length >= 15, `the service lists its tools (${tools.length})`);
  const pool = await poolOf(service);
  t.same(
    [pool.storedEmailIds.length, pool.draftIds.length, pool.contactIds.length, pool.outgoingIds.length],
    [3, 1, 1, 1],
    'the mirror, a draft, a contact and a send to aim at',
  );

  // Every tool, the ones with more text members more often: text is where hostile input has most to reach (filters, FTS5).
  const textMembers = (tool: ListedTool): number => Object.values(tool.inputSchema.properties ?? {}).filter((p) => shapedHostile('', p) !== null).length;
  const input = fc.oneof(
    ...tools.map((tool) => ({
      weight: Math.min(4, 1 + Math.floor(textMembers(tool) / 2)),
      arbitrary: argumentsFor(tool.inputSchema, pool).map((args) => ({ tool: tool.name, args })),
    })),
  );
  const inputs = fc.sample(input, { seed: SEED, numRuns: RUNS });
  const tally = new FuzzTally('mcp-tool-arguments', SEED);
  const misanswered: string[] = [];
  const undiagnosed: string[] = [];
  const perTool = new Map<string, number>();
  const logStart = service.sync.logs.lines.length;
  const rawStart = service.sync.logs.raw().length;

  await inParallel(inputs, 6, async ({ tool, args }, index) => {
    perTool.set(tool, (perTool.get(tool) ?? 0) + 1);
    const params = args === ABSENT ? { name: tool } : { name: tool, arguments: args };
    const body = JSON.stringify({ jsonrpc: '2.0', id: index, method: 'tools/call', params });
    const { status, text } = await service.post(body);
    const answer = status === 413 ? null : jsonRpcAnswer(text);
    const code = answer?.codes[0];
    tally.record(status, code, body);
    const preview = `#${index} ${tool} ${body.slice(0, 200)} → ${status} ${text.slice(0, 200)}`;
    if (code === 54_001 || code === -32_603) undiagnosed.push(preview);
    const allowed = status === 200 ? answer?.wellFormed === true : status === 413 ? text === '' : false;
    if (!allowed && misanswered.length < 5) misanswered.push(preview);
  });

  const lines = service.sync.logs.lines.slice(logStart);
  const { restarts, defects } = defectLines(lines);
  const leaks = linesCarrying(
    service.sync.logs.raw().slice(rawStart),
    inputs.flatMap(({ args }) => stringsOf(args)).filter((s) => !tools.some((tool) => tool.name === s)),
  );
  t.comment(tally.summary({ restarts, defects: defects.length, leaks: leaks.length }));
  t.comment(`calls per tool: ${[...perTool].map(([tool, n]) => `${tool} ${n}`).join(', ')}`);
  t.ok(tally.requests >= 1_000 || RUNS < 1_000, `at least 1,000 inputs (${tally.requests})`);
  t.equal(perTool.size, tools.length, 'every listed tool was called');
  t.equal(tally.fiveHundreds, 0, `no 5xx (seed ${SEED}): ${JSON.stringify(tally.serverErrors)}`);
  t.same(misanswered, [], `every answer is a well-formed JSON-RPC answer (seed ${SEED})`);
  t.same(undiagnosed.slice(0, 5), [], `no 54001 and no -32603: every refusal is diagnosed (seed ${SEED})`);
  t.equal(restarts, 0, 'no actor restarted');
  // The lines themselves on failure: they carry the error's class, code and frames (never input: operations.md).
  t.same(defects.slice(0, 3), [], 'no defect line');
  t.same(leaks.slice(0, 3), [], 'no log line carries a generated string');
});
