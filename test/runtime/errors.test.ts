/** The error table and docs/errors.md stay in step; errors cross threads as data. */
import { readdirSync, readFileSync } from 'node:fs';
import t from 'tap';
import { AppError, Codes, fromPayload, isCode, toPayload } from '../../runtime/errors.ts';
import { withCurrentTable } from '../../runtime/errors-doc.ts';

t.test('docs/errors.md carries the current table (npm run docs:errors rewrites it)', async (t) => {
  const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');
  t.equal(doc, withCurrentTable(doc));
});

t.test('every code has its row in docs/errors.md, and every documented row is a code', async (t) => {
  const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');
  const rows = new Map<string, string[]>();
  for (const line of doc.split('\n')) {
    const m = /^\| `(E_[A-Z_]+)` \|(.*)\|$/.exec(line);
    if (m)
      rows.set(
        m[1]!,
        m[2]!.split('|').map((c) => c.trim()),
      );
  }
  for (const [code, row] of Object.entries(Codes)) {
    const cells = rows.get(code);
    if (!cells) {
      t.fail(`${code} is missing from docs/errors.md`);
      continue;
    }
    t.same(cells, [String(row.public ?? '—'), String(row.status), row.retryable ? 'yes' : 'no', row.msg], `${code} row matches the table`);
  }
  for (const code of rows.keys()) t.ok(Object.hasOwn(Codes, code), `${code} documented and defined`);
});

t.test('errors cross threads as plain data; unknown errors become E_INTERNAL without their message', async (t) => {
  const payload = toPayload(new AppError('E_ACTOR_MAILBOX_FULL', { details: { actor: 'x', capacity: 3 } }));
  t.same(payload, { code: 'E_ACTOR_MAILBOX_FULL', message: 'Actor mailbox is full', retryable: true, details: { actor: 'x', capacity: 3 } });
  t.same(structuredClone(payload), payload, 'survives structured clone unchanged');
  const rebuilt = fromPayload(structuredClone(payload));
  t.equal(rebuilt.code, 'E_ACTOR_MAILBOX_FULL');
  t.equal(rebuilt.retryable, true);
  const foreign = toPayload(new Error('Subject: quarterly numbers for alice@example.org'));
  t.equal(foreign.code, 'E_INTERNAL');
  t.notMatch(JSON.stringify(foreign), /alice|quarterly/, 'a foreign message never crosses');
  t.equal(fromPayload({ code: 'E_NOT_A_CODE', message: 'x', retryable: false }).code, 'E_INTERNAL');
});

t.test('every code the source names is a row of the table (nothing invents codes outside it)', async (t) => {
  const root = new URL('../../', import.meta.url);
  const unknown: string[] = [];
  let named = 0;
  for (const dir of ['actors', 'bin', 'cli', 'config', 'http', 'runtime', 'service']) {
    for (const file of readdirSync(new URL(dir, root), { recursive: true, encoding: 'utf8' })) {
      if (!file.endsWith('.ts')) continue;
      const text = readFileSync(new URL(`${dir}/${file}`, root), 'utf8');
      // A quoted whole code; a family test (`startsWith('E_OAUTH')`) names a prefix, not a code.
      for (const [, family, code] of text.matchAll(/(startsWith\()?['"`](E_[A-Z][A-Z0-9_]*[A-Z0-9])['"`]/g)) {
        named += 1;
        const known = family ? Object.keys(Codes).some((c) => c.startsWith(code!)) : isCode(code!);
        if (!known) unknown.push(`${dir}/${file}: ${code}`);
      }
    }
  }
  t.ok(named > 100, `the scan found the codes in use (${named})`);
  t.same(unknown, [], 'no code outside runtime/errors.ts');
});

t.test("the pipeline's own refusals are rows, with the statuses HTTP gives them", async (t) => {
  // Written out, not read back: the listeners answer with these rows, so a changed row would change what clients see.
  t.same(
    {
      unauthenticated: Codes.E_HTTP_UNAUTHENTICATED.status,
      origin: Codes.E_HTTP_ORIGIN_REFUSED.status,
      noRoute: Codes.E_HTTP_NO_ROUTE.status,
      method: Codes.E_HTTP_METHOD_NOT_ALLOWED.status,
      rateLimited: Codes.E_HTTP_RATE_LIMITED.status,
      requestTimeout: Codes.E_HTTP_REQUEST_TIMEOUT.status,
      badRequest: Codes.E_HTTP_BAD_REQUEST.status,
      bodyTooLarge: Codes.E_HTTP_BODY_TOO_LARGE.status,
    },
    { unauthenticated: 401, origin: 403, noRoute: 404, method: 405, rateLimited: 429, requestTimeout: 504, badRequest: 400, bodyTooLarge: 413 },
  );
});
