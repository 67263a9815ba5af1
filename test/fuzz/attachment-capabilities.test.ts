/**
 * Fuzz family "attachment-capabilities": the attachment download route
 * (`/attachments/{capability}`, docs/attachment-links.md) asked with
 * capabilities derived from real ones the service issued through
 * `get_email_content`: truncated, extended, bit-flipped, re-encoded
 * (padding, the standard alphabet, percent-encoding), expired, claiming
 * more than the longest lifetime, signed for another account's message or
 * a missing one, signed under a key the ring does not hold, huge, and
 * random; with other methods and paths below `/attachments/`. Every one is
 * refused with the one 404, byte for byte the same (status, headers, empty
 * body), so nothing says which part was wrong; the real capabilities still
 * download. Nothing restarts, nothing is logged as a defect, no log line
 * carries a capability. Replay: `MAILCAIRN_FUZZ_SEED=<seed>`.
 */
import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import fc from 'fast-check';
import t, { type Test } from 'tap';
import { request } from 'undici';
import { issueCapability } from '../../http/attachments/capability.ts';
import { newKeyRing, parseKeyRing } from '../../runtime/keyring/keyring.ts';
import { defectLines, FuzzTally, fuzzRuns, fuzzSeed, linesCarrying } from '../helpers/fuzz-tally.ts';
import { type FuzzService, inParallel, startFuzzService } from '../helpers/fuzz-service.ts';
import { exchange, parseResponses } from '../helpers/raw-http.ts';

t.setTimeout(115_000);

const SEED = fuzzSeed(30_002);
const RUNS = fuzzRuns(1_000);

type Json = Record<string, any>;
type Real = { token: string; messageId: number; index: number; accountId: string };

/** One real capability per account, from `get_email_content` through the SDK's client. */
async function realCapabilities(t: Test, service: FuzzService): Promise<Real[]> {
  const client = new Client({ name: 'fuzz-attachments', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${service.mcpPort}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${service.mcpKey}` } },
    }),
  );
  t.teardown(() => client.close());
  const call = async (name: string, args: Json): Promise<Json> => {
    const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
    if (result.isError) throw new Error(`${name} refused`);
    return result.structuredContent as Json;
  };
  const reals: Real[] = [];
  for (const accountId of ['rita', 'sam']) {
    const page = await call('list_emails', { accounts: [accountId], hasAttachments: true, pageSize: 5 });
    const { emails } = await call('get_email_content', { storedEmailIds: page.emails.map((e: Json) => e.storedEmailId) });
    for (const email of emails as Json[]) {
      for (const attachment of email.attachments ?? []) {
        if (!attachment.downloadUrl) continue;
        const token = String(attachment.downloadUrl).split('/attachments/')[1] as string;
        reals.push({ token, messageId: Number.parseInt(String(email.storedEmailId).slice(1), 36), index: attachment.index, accountId });
      }
    }
  }
  return reals;
}

type Ask = { method: string; path: string; kind: string; valid: boolean };

function flipBit(token: string, at: number, bit: number): string {
  const bytes = Buffer.from(token, 'base64url');
  const i = at % bytes.length;
  bytes[i] = (bytes[i] as number) ^ (1 << bit);
  return bytes.toString('base64url');
}

function asksOf(reals: readonly Real[], keyRingFile: string): fc.Arbitrary<Ask> {
  const ring = parseKeyRing(readFileSync(keyRingFile, 'utf8'));
  const otherRing = parseKeyRing(newKeyRing());
  const real = fc.constantFrom(...reals);
  const now = Date.now();
  const signed = (kind: string, make: (r: Real) => string): fc.Arbitrary<[string, string]> => real.map((r) => [kind, make(r)]);
  const token: fc.Arbitrary<[string, string]> = fc.oneof(
    real.chain((r) => fc.integer({ min: 0, max: r.token.length - 1 }).map((n): [string, string] => ['truncated', r.token.slice(0, n)])),
    real.chain((r) => fc.stringMatching(/^[A-Za-z0-9_-]{1,40}$/).map((s): [string, string] => ['extended', r.token + s])),
    real.chain((r) => fc.tuple(fc.nat(), fc.integer({ min: 0, max: 7 })).map(([at, bit]): [string, string] => ['bit-flipped', flipBit(r.token, at, bit)])),
    real.chain((r) =>
      fc
        .constantFrom<[string, string]>(
          ['re-encoded', Buffer.from(r.token, 'base64url').toString('base64')],
          ['re-encoded', `${r.token}=`],
          ['re-encoded', `${r.token}==`],
          ['re-encoded', encodeURIComponent(Buffer.from(r.token, 'base64url').toString('base64'))],
          ['re-encoded', r.token.replace(/[A-Za-z]/, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)],
          ['re-encoded', r.token.toUpperCase()],
          ['re-encoded', `${r.token.slice(0, -1)}${r.token.endsWith('A') ? 'B' : 'A'}`],
        )
        // A token without `-` or `_` reads the same in the standard alphabet: that "re-encoding" is the real token, no forgery.
        .filter(([, encoded]) => encoded !== r.token),
    ),
    real.chain((r) =>
      fc
        .integer({ min: 11, max: 60 * 24 * 30 })
        .map((minutes): [string, string] => [
          'expired',
          issueCapability(ring, { messageId: r.messageId, index: r.index, accountId: r.accountId }, { now: now - minutes * 60_000 }),
        ]),
    ),
    signed('too far ahead', (r) => issueCapability(ring, r, { now: now + 60 * 60_000 })),
    signed('other account', (r) => issueCapability(ring, { ...r, accountId: r.accountId === 'rita' ? 'sam' : 'rita' }, { now })),
    signed('unconfigured account', (r) => issueCapability(ring, { ...r, accountId: 'nobody' }, { now })),
    real.chain((r) =>
      fc.integer({ min: 1, max: 9_999 }).map((d): [string, string] => ['missing attachment', issueCapability(ring, { ...r, index: r.index + d }, { now })]),
    ),
    real.chain((r) =>
      fc
        .integer({ min: 1, max: 2 ** 40 })
        .map((d): [string, string] => ['missing message', issueCapability(ring, { ...r, messageId: r.messageId + d }, { now })]),
    ),
    signed('other key ring', (r) => issueCapability(otherRing, r, { now })),
    fc.integer({ min: 513, max: 12_000 }).map((n): [string, string] => ['huge', 'A'.repeat(n)]),
    fc.stringMatching(/^[A-Za-z0-9_-]{1,200}$/).map((s): [string, string] => ['random', s]),
    fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }).map((s): [string, string] => ['unicode', encodeURIComponent(s)]),
    fc.constantFrom<[string, string]>(['empty', ''], ['dot', '.'], ['dots', '..'], ['encoded dots', '%2E%2E'], ['nul', '%00'], ['slash', '%2F']),
  );
  const shaped = fc.tuple(token, fc.constantFrom('', '', '', '', '/', '/x', '?download=1', '#x', '/..%2F..%2Fmcp'));
  return fc.oneof(
    { weight: 12, arbitrary: shaped.map(([[kind, value], tail]): Ask => ({ method: 'GET', path: `/attachments/${value}${tail}`, kind, valid: false })) },
    { weight: 2, arbitrary: real.map((r): Ask => ({ method: 'GET', path: `/attachments/${r.token}`, kind: 'real', valid: true })) },
    real.chain((r) =>
      fc
        .constantFrom('POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS')
        .map((m): Ask => ({ method: m, path: `/attachments/${r.token}`, kind: 'method', valid: false })),
    ),
    fc.constantFrom<Ask>(
      { method: 'GET', path: '/attachments/', kind: 'no token', valid: false },
      { method: 'GET', path: '/attachments', kind: 'no token', valid: false },
    ),
  );
}

/** Asks on a raw socket when the path has dot segments: undici resolves them before sending, so the server would never see them. */
async function ask_(port: number, ask: Ask): Promise<{ statusCode: number; headers: Record<string, unknown>; body: string }> {
  if (!/\/(\.|%2E)+(\/|$|\?|#)/i.test(ask.path)) {
    const answer = await request(`http://127.0.0.1:${port}${ask.path}`, { method: ask.method as 'GET' });
    return { statusCode: answer.statusCode, headers: answer.headers, body: await answer.body.text() };
  }
  const raw = await exchange(port, `${ask.method} ${ask.path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`, 10_000);
  const [first] = parseResponses(raw.bytes);
  if (first === undefined) return { statusCode: 0, headers: {}, body: '' };
  const headers = Object.fromEntries(Object.entries(first.headers).map(([k, v]) => [k, v.join(', ')]));
  return { statusCode: first.status, headers, body: first.body.toString('utf8') };
}

/** What a refusal says, to compare one with another: status, headers but the date, body. */
function shapeOf(status: number, headers: Record<string, unknown>, body: string): string {
  const { date: _date, connection: _connection, 'keep-alive': _keepAlive, ...rest } = headers;
  return JSON.stringify({ status, headers: Object.entries(rest).sort(), body });
}

t.test('fuzz attachment-capabilities', async (t) => {
  const service = await startFuzzService(t);
  const reals = await realCapabilities(t, service);
  t.ok(reals.length >= 2, 'a real capability for each account');
  const asks = fc.sample(asksOf(reals, service.keyRingFile), { seed: SEED, numRuns: RUNS });
  const tally = new FuzzTally('attachment-capabilities', SEED);
  const refusals = new Map<string, string[]>();
  const wrongly: string[] = [];
  await inParallel(asks, 8, async (ask) => {
    const answer = await ask_(service.mcpPort, ask);
    const body = answer.body;
    tally.record(answer.statusCode, ask.kind, ask);
    if (ask.valid) {
      if (answer.statusCode !== 200 || body.length === 0) wrongly.push(`real capability answered ${answer.statusCode}`);
      return;
    }
    if (answer.statusCode === 200) wrongly.push(`${ask.kind} downloaded`);
    // Paths outside the route (no token at all) are the listener's 404; the route's own refusals must all read the same.
    if (ask.kind === 'no token' && !ask.path.endsWith('/')) return;
    const shape = shapeOf(answer.statusCode, answer.headers, body);
    refusals.set(shape, [...(refusals.get(shape) ?? []), ask.kind]);
  });

  const { restarts, defects } = defectLines(service.sync.logs.lines);
  const leaks = linesCarrying(service.sync.logs.raw(), [...asks.map((a) => a.path.replace('/attachments/', '')), ...reals.map((r) => r.token)]);
  t.comment(tally.summary({ restarts, defects: defects.length, leaks: leaks.length }));
  t.equal(tally.requests, RUNS);
  t.equal(tally.fiveHundreds, 0, `no 5xx: ${JSON.stringify(tally.serverErrors)}`);
  t.same(wrongly.slice(0, 5), [], 'no forged capability downloads, every real one does');
  t.equal(
    refusals.size,
    1,
    `every refusal reads the same: ${[...refusals.entries()].map(([s, kinds]) => `${s} ← ${[...new Set(kinds)].join(', ')}`).join(' | ')}`,
  );
  t.match([...refusals.keys()][0] ?? '', /^\{"status":404,/, 'and it is the 404');
  t.equal(restarts, 0, 'no restart');
  t.same(
    defects.map((l) => l.event),
    [],
    'no defect line',
  );
  t.same(leaks.slice(0, 3), [], 'no log line carries a capability');
});
