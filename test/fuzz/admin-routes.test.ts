/**
 * Fuzz family "admin-routes": every route of the admin API's route table
 * (http/admin/routes/index.ts), asked with the operator's key so each
 * request reaches its handler, with hostile queries and bodies: values of
 * the wrong type, numbers out of range, unicode, huge strings, prototype
 * keys, bogus cursors, ids of the wrong shape, duplicated query keys, and
 * methods the route does not take. Every answer is below 500; a 4xx's
 * problem document names no input; nothing restarts, nothing is logged as
 * a defect, no log line carries the input. Replay: `MAILCAIRN_FUZZ_SEED=<seed>`.
 */
import fc from 'fast-check';
import t from 'tap';
import { request } from 'undici';
import type { Route } from '../../http/admin/route.ts';
import { ROUTES } from '../../http/admin/routes/index.ts';
import { defectLines, FuzzTally, fuzzRuns, fuzzSeed, linesCarrying } from '../helpers/fuzz-tally.ts';
import { inParallel, startFuzzService } from '../helpers/fuzz-service.ts';

t.setTimeout(115_000);

const SEED = fuzzSeed(30_001);
const RUNS = fuzzRuns(1_000);

/** The keys of an object schema, through the wrappers zod puts around one (optional, default, pipe, refinements). */
function keysOf(schema: unknown): string[] {
  let def = (schema as { _zod?: { def?: Record<string, unknown> } } | undefined)?._zod?.def;
  for (let depth = 0; def !== undefined && depth < 8; depth += 1) {
    if (def.type === 'object') return Object.keys(def.shape as object);
    const inner = def.innerType ?? def.in ?? def.schema;
    def = (inner as { _zod?: { def?: Record<string, unknown> } } | undefined)?._zod?.def;
  }
  return [];
}

const PROTOTYPE_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', '__defineGetter__'];

/** Text distinctive enough to be found again in a log line or an answer. */
const marker = fc.stringMatching(/^[A-Za-z0-9]{12,24}$/);
/** Text that is no identifier: the admin API may name an identifier-shaped key or account back (docs/admin-api.md "Refusals"), never this. */
const prose = marker.map((m) => `${m}! ~${m.slice(0, 6)}`);
const hugeText = fc.integer({ min: 5_000, max: 60_000 }).map((n) => 'x'.repeat(n));

const scalar: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom('rita', 'sam', 'inbox', 'nobody', '', ' ', '0', '-1', 'true', 'null', '1e309', 'NaN', '../..', '%00', '\u0000', '*', '%'),
  fc.integer(),
  fc.constantFrom(0, -1, 1, 2 ** 31, 2 ** 53, -(2 ** 53), 1.5, 1e308, -0),
  fc.boolean(),
  fc.constant(null),
  marker,
  prose,
  fc.string({ unit: 'grapheme', maxLength: 60 }),
  fc.string({ unit: 'binary', maxLength: 30 }),
  hugeText,
  // Cursors: base64url junk, a truncated-looking one, and the shape a signed one has.
  fc.stringMatching(/^[A-Za-z0-9_-]{1,300}$/),
  marker.map((m) => Buffer.from(JSON.stringify({ v: 1, after: m })).toString('base64url')),
);

const value: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: scalar },
  fc.array(scalar, { maxLength: 4 }),
  fc.dictionary(fc.oneof(marker, fc.constantFrom(...PROTOTYPE_KEYS)), scalar, { maxKeys: 3 }),
);

const wrongId = fc.oneof(
  fc.constantFrom('0', '-1', '1', '999999999999', '9007199254740993', 'abc', '%2e%2e', '%2F', '%00', 'null', '1.5', '1e3', '__proto__', 'constructor'),
  marker,
  fc.stringMatching(/^[A-Za-z0-9_~.-]{1,200}$/),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 }).map(encodeURIComponent),
  hugeText.map((h) => h.slice(0, 6_000)),
);

type Case = {
  route: number;
  method: string;
  id: string;
  query: Array<[string, string]>;
  body: { kind: 'json'; value: unknown } | { kind: 'raw'; text: string } | { kind: 'none' };
};

function stringify(v: unknown): string {
  if (typeof v === 'string') return v;
  try {
    return JSON.stringify(v) ?? 'undefined';
  } catch {
    return String(v);
  }
}

function caseOf(routes: readonly Route[]): fc.Arbitrary<Case> {
  return fc.integer({ min: 0, max: routes.length - 1 }).chain((index) => {
    const route = routes[index] as Route;
    const queryKeys = [...keysOf(route.query), 'cursor', 'limit'];
    const bodyKeys = keysOf(route.body);
    const key = fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...queryKeys) }, fc.constantFrom(...PROTOTYPE_KEYS), marker, prose);
    const bodyObject = fc
      .array(
        fc.tuple(
          fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...(bodyKeys.length > 0 ? bodyKeys : ['x'])) }, fc.constantFrom(...PROTOTYPE_KEYS), marker, prose),
          value,
        ),
        {
          maxLength: 6,
        },
      )
      .map((entries) => {
        // Built as JSON text so `__proto__` is an own key, as a client would send it.
        return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v) ?? 'null'}`).join(',')}}`;
      });
    return fc.record({
      route: fc.constant(index),
      method: fc.oneof({ weight: 8, arbitrary: fc.constant(route.method) }, fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH')),
      id: wrongId,
      query: fc.array(fc.tuple(key, scalar.map(stringify)), { maxLength: 6 }),
      body: fc.oneof(
        { weight: 6, arbitrary: bodyObject.map((text) => ({ kind: 'raw' as const, text })) },
        fc.oneof(value, fc.constant([]), fc.constant('text')).map((v) => ({ kind: 'json' as const, value: v })),
        fc.constantFrom('{', '{"a":', '[1,', '\u0000', '{}{}', 'nul').map((text) => ({ kind: 'raw' as const, text })),
        fc.constant({ kind: 'none' as const }),
      ),
    });
  });
}

/** The request target of a case: the template's `{name}` segments filled with the case's id, and its query (keys may repeat). */
function targetOf(route: Route, c: Case): string {
  const path = route.path.replace(/\{[^}]+\}/g, c.id);
  // Values past a few thousand characters would only meet the header limit (431), never the route.
  const query = c.query.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v.slice(0, 2_000))}`).join('&');
  return query === '' ? path : `${path}?${query}`;
}

function needlesOf(c: Case): string[] {
  const found = [c.id, ...c.query.flat()];
  if (c.body.kind === 'raw') found.push(...(c.body.text.match(/[A-Za-z0-9]{12,}(?:! ~[A-Za-z0-9]{6})?/g) ?? []));
  if (c.body.kind === 'json') found.push(stringify(c.body.value));
  return found.filter((s) => s.length >= 12 && !/^(x+|%[0-9A-F]{2}.*)$/.test(s));
}

/** What an answer may never quote: text that is not identifier-shaped. */
function isProse(needle: string): boolean {
  return !/^[A-Za-z0-9._@-]{1,64}$/.test(needle);
}

t.test('fuzz admin-routes', async (t) => {
  const service = await startFuzzService(t);
  const base = `http://127.0.0.1:${service.adminPort}`;
  const cases = fc.sample(caseOf(ROUTES), { seed: SEED, numRuns: RUNS });
  const tally = new FuzzTally('admin-routes', SEED);
  const echoed: string[] = [];
  await inParallel(cases, 8, async (c) => {
    const route = ROUTES[c.route] as Route;
    const body = c.body.kind === 'none' ? undefined : c.body.kind === 'raw' ? c.body.text : JSON.stringify(c.body.value);
    const sendsBody = body !== undefined && c.method !== 'GET';
    const answer = await request(`${base}${targetOf(route, c)}`, {
      method: c.method as 'GET',
      headers: { authorization: `Bearer ${service.adminKey}`, ...(sendsBody ? { 'content-type': 'application/json' } : {}) },
      ...(sendsBody ? { body } : {}),
    });
    const text = await answer.body.text();
    let code: string | undefined;
    if (answer.statusCode >= 400 && text !== '') {
      try {
        code = (JSON.parse(text) as { title?: string }).title;
      } catch {
        code = 'not json';
      }
      for (const needle of needlesOf(c).filter(isProse)) if (text.includes(needle)) echoed.push(`${route.method} ${route.path} ${answer.statusCode}`);
    }
    tally.record(answer.statusCode, code, { ...c, route: `${c.method} ${route.path}` });
  });

  const { restarts, defects } = defectLines(service.sync.logs.lines);
  const leaks = linesCarrying(service.sync.logs.raw(), [...cases.flatMap(needlesOf), service.adminKey]);
  t.comment(tally.summary({ restarts, defects: defects.length, leaks: leaks.length }));
  t.equal(tally.requests, RUNS);
  t.equal(tally.fiveHundreds, 0, `no 5xx: ${JSON.stringify(tally.serverErrors)}`);
  t.equal(restarts, 0, 'no restart');
  t.same(
    defects.map((l) => l.event),
    [],
    'no defect line',
  );
  t.same(leaks.slice(0, 3), [], 'no log line carries the input');
  t.same(echoed.slice(0, 5), [], 'no refusal quotes the input');
});
