/**
 * API keys (docs/security.md "API key"): judging
 * against every configured entry, expiry, rotation through a file without
 * restart, unreadable material beside a working key, extracting the
 * presented key, and the startup refusal of token-shaped material.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { readSecret } from '../../../runtime/secret-ref.ts';
import { type ApiKeyEntry, apiKeyHeaderOf, apiKeyStartupProblems, bearerOf, judgeApiKey } from '../../../http/auth/api-key.ts';
import { tempDir } from '../../helpers/daemon.ts';

const now = Date.parse('2026-06-01T12:00:00Z');
const read = (ref: string): string => readSecret(ref, {});

function keyFile(dir: string, name: string, material: string): string {
  const path = join(dir, name);
  writeFileSync(path, `${material}\n`);
  return `file:${path}`;
}

function entry(Name: string, SecretReference: string, Lifetime = Number.POSITIVE_INFINITY): ApiKeyEntry {
  return { Name, SecretReference, Lifetime };
}

t.test('the matching entry admits, by position and name', async (t) => {
  const dir = tempDir(t);
  const entries = [entry('ci', keyFile(dir, 'ci', 'key-ci-0123456789')), undefined, entry('agent', keyFile(dir, 'agent', 'key-agent-0123456789'))];
  t.same(judgeApiKey('key-agent-0123456789', entries, now, read), { kind: 'admitted', entryIndex: 2, name: 'agent', causes: [] });
  t.same(judgeApiKey('key-ci-0123456789', entries, now, read), { kind: 'admitted', entryIndex: 0, name: 'ci', causes: [] });
});

t.test('a key no entry holds is refused as unknown; so are near misses', async (t) => {
  const dir = tempDir(t);
  const entries = [entry('ci', keyFile(dir, 'ci', 'key-ci-0123456789'))];
  for (const presented of ['key-ci-012345678', 'key-ci-01234567890', 'KEY-CI-0123456789', '', 'key-ci-0123456789\n']) {
    t.same(judgeApiKey(presented, entries, now, read), { kind: 'refused', causes: [{ cause: 'unknown' }] }, JSON.stringify(presented));
  }
  t.same(judgeApiKey('anything', [], now, read), { kind: 'refused', causes: [{ cause: 'unknown' }] }, 'no entries');
});

t.test('every configured key is read on every request, even after a match', async (t) => {
  const reads: string[] = [];
  const material: Record<string, string> = { 'env:A': 'alpha-key-000000', 'env:B': 'bravo-key-000000', 'env:C': 'charlie-key-0000' };
  const spy = (ref: string): string => {
    reads.push(ref);
    return material[ref]!;
  };
  const entries = [entry('a', 'env:A'), entry('b', 'env:B', now - 1), entry('c', 'env:C')];
  t.equal(judgeApiKey('alpha-key-000000', entries, now, spy).kind, 'admitted');
  t.same(reads, ['env:A', 'env:B', 'env:C'], 'the first entry matched and the others were still read');
  reads.length = 0;
  judgeApiKey('nothing', entries, now, spy);
  t.same(reads, ['env:A', 'env:B', 'env:C']);
});

t.test('an expired entry authenticates nothing and is named; a live twin still admits', async (t) => {
  const dir = tempDir(t);
  const old = keyFile(dir, 'old', 'key-old-0123456789');
  const entries = [entry('old', old, Date.parse('2026-01-01T00:00:00Z')), entry('new', keyFile(dir, 'new', 'key-new-0123456789'))];
  t.same(judgeApiKey('key-old-0123456789', entries, now, read), { kind: 'refused', causes: [{ cause: 'expired', entryIndex: 0, name: 'old' }] });
  t.same(judgeApiKey('key-new-0123456789', entries, now, read), { kind: 'admitted', entryIndex: 1, name: 'new', causes: [] });
  const atTheInstant = [entry('edge', old, now)];
  t.equal(judgeApiKey('key-old-0123456789', atTheInstant, now, read).kind, 'refused', 'from the instant itself');
  t.equal(judgeApiKey('key-old-0123456789', atTheInstant, now - 1, read).kind, 'admitted', 'a millisecond before');
  const twins = [entry('retired', old, now - 1), entry('extended', old)];
  t.same(judgeApiKey('key-old-0123456789', twins, now, read), { kind: 'admitted', entryIndex: 1, name: 'extended', causes: [] });
  rmSync(join(dir, 'old'));
  t.same(
    judgeApiKey('key-new-0123456789', entries, now, read),
    { kind: 'admitted', entryIndex: 1, name: 'new', causes: [] },
    "an expired entry's vanished material is no fault",
  );
});

t.test('rotation: rewriting the file changes the key on the next request, without restart', async (t) => {
  const dir = tempDir(t);
  const ref = keyFile(dir, 'agent', 'first-key-0123456789');
  const entries = [entry('agent', ref)];
  t.equal(judgeApiKey('first-key-0123456789', entries, now, read).kind, 'admitted');
  keyFile(dir, 'agent', 'second-key-0123456789');
  t.same(judgeApiKey('first-key-0123456789', entries, now, read), { kind: 'refused', causes: [{ cause: 'unknown' }] }, 'the replaced key is refused');
  t.same(judgeApiKey('second-key-0123456789', entries, now, read), { kind: 'admitted', entryIndex: 0, name: 'agent', causes: [] });
});

t.test("one entry's unreadable material is a cause, and never stops another entry matching", async (t) => {
  const dir = tempDir(t);
  const entries = [entry('gone', `file:${join(dir, 'missing')}`), entry('live', keyFile(dir, 'live', 'key-live-0123456789')), entry('env', 'env:UNSET_KEY')];
  t.same(judgeApiKey('key-live-0123456789', entries, now, read), {
    kind: 'admitted',
    entryIndex: 1,
    name: 'live',
    causes: [
      { cause: 'material-unreadable', entryIndex: 0, name: 'gone' },
      { cause: 'material-unreadable', entryIndex: 2, name: 'env' },
    ],
  });
  t.same(judgeApiKey('other', entries, now, read), {
    kind: 'refused',
    causes: [{ cause: 'material-unreadable', entryIndex: 0, name: 'gone' }, { cause: 'material-unreadable', entryIndex: 2, name: 'env' }, { cause: 'unknown' }],
  });
  const thrower = (): string => {
    throw new Error('anything a reader throws');
  };
  t.same(judgeApiKey('x', [entry('a', 'env:A')], now, thrower).kind, 'refused', 'any throw is a cause, not a crash');
});

t.test('nothing the judgement returns carries material or the reference target', async (t) => {
  const dir = tempDir(t);
  const entries = [entry('gone', `file:${join(dir, 'secret-place')}`), entry('live', keyFile(dir, 'live', 'very-secret-material'))];
  const shown = JSON.stringify([judgeApiKey('very-secret-material', entries, now, read), judgeApiKey('wrong-guess-here', entries, now, read)]);
  t.notMatch(shown, /secret-place|very-secret-material|wrong-guess-here|file:/);
});

function request(...raw: string[]): Parameters<typeof bearerOf>[0] {
  const headers: Record<string, string> = {};
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    // Node keeps the first Authorization and joins repeated unknown headers with ', '.
    if (name === 'authorization') headers[name] ??= raw[i + 1]!;
    else headers[name] = headers[name] === undefined ? raw[i + 1]! : `${headers[name]}, ${raw[i + 1]!}`;
  }
  return { headers, rawHeaders: raw };
}

t.test('bearerOf: exactly "Bearer" (any case), one space, one credential', async (t) => {
  t.equal(bearerOf(request('Authorization', 'Bearer abc.DEF-123_~+/=')), 'abc.DEF-123_~+/=');
  t.equal(bearerOf(request('authorization', 'bearer k')), 'k');
  t.equal(bearerOf(request('AUTHORIZATION', 'BEARER k')), 'k');
  t.equal(bearerOf(request('Authorization', 'BeArEr k')), 'k');
  for (const value of ['Bearer', 'Bearer ', 'Bearer  k', 'Bearer k l', 'Basic dXNlcjpwdw==', 'Bearerk', 'Token k', 'Bearer\tk', 'Bearer kë', 'k']) {
    t.equal(bearerOf(request('Authorization', value)), null, JSON.stringify(value));
  }
  t.equal(bearerOf(request()), null, 'no header');
  t.equal(bearerOf(request('Authorization', 'Bearer a', 'Authorization', 'Bearer b')), null, 'two Authorization headers');
  t.equal(bearerOf(request('X-API-Key', 'k')), null, 'X-API-Key is not a bearer credential');
});

t.test('apiKeyHeaderOf: one X-API-Key header of visible ASCII', async (t) => {
  t.equal(apiKeyHeaderOf(request('X-API-Key', 'adm_0123')), 'adm_0123');
  t.equal(apiKeyHeaderOf(request('x-api-key', 'adm_0123')), 'adm_0123');
  t.equal(apiKeyHeaderOf(request()), null);
  t.equal(apiKeyHeaderOf(request('X-API-Key', 'a', 'X-API-Key', 'b')), null, 'repeated');
  t.equal(apiKeyHeaderOf(request('X-API-Key', 'Bearer a')), null, 'a space');
  t.equal(apiKeyHeaderOf(request('X-API-Key', 'clé')), null, 'non-ASCII');
  t.equal(apiKeyHeaderOf(request('Authorization', 'Bearer a')), null);
});

function token(header: object, payload: object): string {
  const part = (v: object): string => Buffer.from(JSON.stringify(v)).toString('base64url');
  return `${part(header)}.${part(payload)}.c2lnbmF0dXJl`;
}

t.test('startup: a key that is a token of a configured authorization server is refused by position', async (t) => {
  const dir = tempDir(t);
  const issuer = 'https://as.example/';
  const entries = [
    entry('opaque', keyFile(dir, 'opaque', 'key-opaque-0123456789')),
    undefined,
    entry('token', keyFile(dir, 'token', token({ alg: 'RS256' }, { iss: issuer, sub: 'x' }))),
    entry('foreign', keyFile(dir, 'foreign', token({ alg: 'RS256' }, { iss: 'https://elsewhere.example/' }))),
    entry('assertion', keyFile(dir, 'assertion', token({ alg: 'ES256', typ: 'service-client-assertion+jwt' }, { jti: 'x' }))),
    entry('spaced', keyFile(dir, 'spaced', 'two words')),
    entry('gone', `file:${join(dir, 'missing')}`),
    entry('expired-gone', `file:${join(dir, 'missing')}`, now - 1),
    entry('expired-token', keyFile(dir, 'expired-token', token({ alg: 'RS256' }, { iss: issuer })), now - 1),
  ];
  const problems = apiKeyStartupProblems('McpEndpoint', entries, [issuer], read, now);
  t.same(
    problems.map((p) => p.setting),
    [2, 4, 5, 6].map((n) => `McpEndpoint:Authentication:${n}:ApiKey:SecretReference`),
    'the token of a configured issuer, an assertion, an unpresentable key and unreadable material; the foreign-issuer token and expired entries pass',
  );
  t.match(problems[0]!.message, /token of the configured authorization server https:\/\/as\.example\/.*access token/);
  t.match(problems[3]!.message, /could not be read at startup.*file:.*nothing exists there/);
  t.notMatch(JSON.stringify(problems), new RegExp(`${dir}|key-opaque|two words`), 'no material or path');
  t.same(
    apiKeyStartupProblems('AdminEndpoint', [entry('t', entries[2]!.SecretReference)], [], read, now),
    [],
    'with no issuer configured the token is an opaque key',
  );
  t.equal(
    apiKeyStartupProblems('AdminEndpoint', [entry('t', entries[2]!.SecretReference)], [issuer], read, now)[0]?.setting,
    'AdminEndpoint:Authentication:0:ApiKey:SecretReference',
  );
});
