/**
 * Client assertions (docs/security.md "Key pair (signed client
 * assertion)"):
 * jose-signed assertions for every permitted key kind are admitted; every
 * refusal has its own log cause; a served identifier is refused again, also
 * after the replay guard restarts on the same database file.
 */
import { generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SignJWT, type JWTHeaderParameters } from 'jose';
import t, { type Test } from 'tap';
import { readSecret } from '../../../runtime/secret-ref.ts';
import { type AssertionAudience, ASSERTION_AUDIENCES, type ClaimJti, judgeAssertion } from '../../../http/auth/client-assertion.ts';
import type { PublicKeyEntry } from '../../../http/auth/public-keys.ts';
import replayGuard from '../../../actors/replay-guard/actor.ts';
import type { ActorContext } from '../../../runtime/actor.ts';
import { createLogger } from '../../../runtime/log.ts';
import { migrate } from '../../../runtime/store/migrate.ts';
import { openStore } from '../../../runtime/store/open.ts';
import { tempDir } from '../../helpers/daemon.ts';

const MCP = ASSERTION_AUDIENCES.McpEndpoint;
const ADMIN = ASSERTION_AUDIENCES.AdminEndpoint;
const TYP = 'service-client-assertion+jwt';
const read = (ref: string): string => readSecret(ref, {});

type Pair = { publicKey: KeyObject; privateKey: KeyObject };
const rsa2048 = generateKeyPairSync('rsa', { modulusLength: 2048 });
const rsa3072 = generateKeyPairSync('rsa', { modulusLength: 3072 });
const p256 = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' });
const p521 = generateKeyPairSync('ec', { namedCurve: 'P-521' });
const stranger = generateKeyPairSync('rsa', { modulusLength: 2048 });

const pem = (pair: Pair): string => pair.publicKey.export({ type: 'spki', format: 'pem' }) as string;
const jti = (): string => randomBytes(16).toString('base64url');

type Options = {
  alg: string;
  aud?: unknown;
  expIn?: number | null;
  jti?: string | null;
  header?: Partial<JWTHeaderParameters>;
  claims?: Record<string, unknown>;
};

/** A signed assertion; `expIn` is seconds from `now` (null: no exp). */
async function assertion(key: KeyObject | Uint8Array, now: number, options: Options): Promise<string> {
  const claims: Record<string, unknown> = { ...options.claims };
  if (options.aud !== undefined) claims.aud = options.aud;
  else claims.aud = MCP;
  if (options.jti !== null) claims.jti = options.jti ?? jti();
  if (options.expIn !== null) claims.exp = Math.floor(now / 1000) + (options.expIn ?? 60);
  return new SignJWT(claims).setProtectedHeader({ alg: options.alg, typ: TYP, ...options.header }).sign(key);
}

function unsigned(header: object, payload: object): string {
  const part = (v: object): string => Buffer.from(JSON.stringify(v)).toString('base64url');
  return `${part(header)}.${part(payload)}.`;
}

function setup(t: Test, pairs: Array<[string, Pair, number?]>) {
  const dir = tempDir(t);
  const entries: PublicKeyEntry[] = pairs.map(([name, pair, lifetime]) => {
    const path = join(dir, `${name}.pem`);
    writeFileSync(path, pem(pair));
    return { Name: name, SecretReference: `file:${path}`, Lifetime: lifetime ?? Number.POSITIVE_INFINITY };
  });
  const served = new Set<string>();
  const claims: Array<[string, number]> = [];
  const claim: ClaimJti = async (id, expiresAt) => {
    claims.push([id, expiresAt]);
    if (served.has(id)) return false;
    served.add(id);
    return true;
  };
  const judge = (jwt: string, now: number, audience: AssertionAudience = MCP) => judgeAssertion(jwt, entries, audience, now, read, claim);
  return { dir, entries, claims, judge };
}

t.test('RSA 2048 and 3072 with RS* and PS*, and each curve with its ES* algorithm, are admitted by the entry whose key verifies', async (t) => {
  const now = Date.now();
  const { judge, claims } = setup(t, [
    ['rsa-2048', rsa2048],
    ['rsa-3072', rsa3072],
    ['p-256', p256],
    ['p-384', p384],
    ['p-521', p521],
  ]);
  const cases: Array<[Pair, string, number, string]> = [
    [rsa2048, 'RS256', 0, 'rsa-2048'],
    [rsa2048, 'PS256', 0, 'rsa-2048'],
    [rsa2048, 'RS512', 0, 'rsa-2048'],
    [rsa3072, 'RS256', 1, 'rsa-3072'],
    [rsa3072, 'PS256', 1, 'rsa-3072'],
    [rsa3072, 'PS384', 1, 'rsa-3072'],
    [p256, 'ES256', 2, 'p-256'],
    [p384, 'ES384', 3, 'p-384'],
    [p521, 'ES512', 4, 'p-521'],
  ];
  for (const [pair, alg, entryIndex, name] of cases) {
    t.same(await judge(await assertion(pair.privateKey, now, { alg }), now), { kind: 'admitted', entryIndex, name, unreadable: [] }, `${name} ${alg}`);
  }
  t.equal(claims.length, cases.length, 'each admitted assertion claimed its jti');
  t.ok(
    claims.every(([, expiresAt]) => expiresAt === (Math.floor(now / 1000) + 60) * 1000),
    'stored until exp, in epoch ms',
  );
});

t.test('the admin audience on the admin surface; entry positions keep gaps', async (t) => {
  const now = Date.now();
  const { entries, claims } = setup(t, [['admin-client', p256]]);
  const claim: ClaimJti = async () => true;
  const gapped = [undefined, undefined, entries[0]];
  t.same(await judgeAssertion(await assertion(p256.privateKey, now, { alg: 'ES256', aud: ADMIN }), gapped, ADMIN, now, read, claim), {
    kind: 'admitted',
    entryIndex: 2,
    name: 'admin-client',
    unreadable: [],
  });
  t.equal(claims.length, 0);
});

t.test('algorithm refusals: HS256 keyed with the public key bytes, none, and an alg the key does not admit', async (t) => {
  const now = Date.now();
  const { judge, claims } = setup(t, [
    ['rsa', rsa2048],
    ['p-256', p256],
  ]);
  const confusion = await assertion(new TextEncoder().encode(pem(rsa2048)), now, { alg: 'HS256' });
  t.match(await judge(confusion, now), { kind: 'refused', cause: 'algorithm' }, 'HMAC over the public PEM (key confusion)');
  const confusionEc = await assertion(new TextEncoder().encode(pem(p256)), now, { alg: 'HS512' });
  t.match(await judge(confusionEc, now), { kind: 'refused', cause: 'algorithm' });
  const none = unsigned({ alg: 'none', typ: TYP }, { aud: MCP, exp: Math.floor(now / 1000) + 60, jti: jti() });
  t.match(await judge(none, now), { kind: 'refused', cause: 'algorithm' }, 'alg none');
  const noneCased = unsigned({ alg: 'None', typ: TYP }, { aud: MCP, exp: Math.floor(now / 1000) + 60, jti: jti() });
  t.match(await judge(noneCased, now), { kind: 'refused', cause: 'algorithm' });
  t.match(
    await judge(await assertion(p384.privateKey, now, { alg: 'ES384' }), now),
    { kind: 'refused', cause: 'algorithm' },
    'ES384 when only RSA and P-256 keys are configured',
  );
  // An RSA signature relabelled as ES256 never reaches the RSA key (ES256 is only the P-256 key's).
  const rs = await assertion(rsa2048.privateKey, now, { alg: 'RS256' });
  const [, payload, signature] = rs.split('.');
  const relabelled = `${Buffer.from(JSON.stringify({ alg: 'ES256', typ: TYP })).toString('base64url')}.${payload}.${signature}`;
  t.match(await judge(relabelled, now), { kind: 'refused', cause: 'bad-signature' });
  const asPs = `${Buffer.from(JSON.stringify({ alg: 'PS256', typ: TYP })).toString('base64url')}.${payload}.${signature}`;
  t.match(await judge(asPs, now), { kind: 'refused', cause: 'bad-signature' }, 'RS256 signature presented as PS256');
  t.equal(claims.length, 0, 'no refused assertion reached the replay store');
});

t.test('typ must be exactly the assertion media type', async (t) => {
  const now = Date.now();
  const { judge } = setup(t, [['p-256', p256]]);
  for (const typ of ['JWT', 'at+jwt', 'application/service-client-assertion+jwt', 'Service-Client-Assertion+JWT']) {
    t.match(await judge(await assertion(p256.privateKey, now, { alg: 'ES256', header: { typ } }), now), { kind: 'refused', cause: 'typ' }, typ);
  }
  const noTyp = await new SignJWT({ aud: MCP, exp: Math.floor(now / 1000) + 60, jti: jti() }).setProtectedHeader({ alg: 'ES256' }).sign(p256.privateKey);
  t.match(await judge(noTyp, now), { kind: 'refused', cause: 'typ' }, 'absent');
});

t.test('audience: mcp and admin do not cross', async (t) => {
  const now = Date.now();
  const { judge } = setup(t, [['p-256', p256]]);
  t.match(await judge(await assertion(p256.privateKey, now, { alg: 'ES256', aud: ADMIN }), now, MCP), {
    kind: 'refused',
    cause: 'audience',
    entryIndex: 0,
    name: 'p-256',
  });
  t.match(await judge(await assertion(p256.privateKey, now, { alg: 'ES256', aud: MCP }), now, ADMIN), { kind: 'refused', cause: 'audience' });
  t.match(
    await judge(await assertion(p256.privateKey, now, { alg: 'ES256', aud: [MCP, ADMIN] }), now),
    { kind: 'refused', cause: 'audience' },
    'both surfaces at once',
  );
  t.match(await judge(await assertion(p256.privateKey, now, { alg: 'ES256', aud: 'https://mail.example/mcp' }), now), { kind: 'refused', cause: 'audience' });
  t.match(await judge(await assertion(p256.privateKey, now, { alg: 'ES256', aud: [MCP] }), now), { kind: 'admitted' }, 'a one-element list');
});

t.test('exp: required, not past, at most five minutes ahead', async (t) => {
  const now = Date.parse('2026-06-01T12:00:00Z'); // whole second, so exp lands exactly
  const { judge } = setup(t, [['p-256', p256]]);
  const at = (expIn: number | null) => assertion(p256.privateKey, now, { alg: 'ES256', expIn });
  t.match(await judge(await at(null), now), { kind: 'refused', cause: 'missing-exp', name: 'p-256' });
  t.match(await judge(await at(-1), now), { kind: 'refused', cause: 'expired' });
  t.match(await judge(await at(0), now), { kind: 'refused', cause: 'expired' }, 'at the instant itself');
  t.match(await judge(await at(1), now), { kind: 'admitted' });
  t.match(await judge(await at(300), now), { kind: 'admitted' }, 'exactly five minutes');
  t.match(await judge(await at(301), now), { kind: 'refused', cause: 'expiry-too-far' });
  t.match(await judge(await at(3600), now), { kind: 'refused', cause: 'expiry-too-far' });
  t.match(await judge(await assertion(p256.privateKey, now, { alg: 'ES256', expIn: null, claims: { exp: 'soon' } }), now), {
    kind: 'refused',
    cause: 'malformed',
  });
  const early = await at(60);
  t.match(await judge(early, now + 61_000), { kind: 'refused', cause: 'expired' }, 'no leeway past exp');
});

t.test('jti required and well formed; nbf and iat sane; unknown crit refused', async (t) => {
  const now = Date.now();
  const { judge, claims } = setup(t, [['p-256', p256]]);
  const with_ = (options: Partial<Options>) => assertion(p256.privateKey, now, { alg: 'ES256', ...options });
  t.match(await judge(await with_({ jti: null }), now), { kind: 'refused', cause: 'malformed' }, 'no jti');
  t.match(await judge(await with_({ jti: 'short' }), now), { kind: 'refused', cause: 'malformed' }, 'fewer than 128 bits');
  t.match(await judge(await with_({ jti: `${jti()}+/=` }), now), { kind: 'refused', cause: 'malformed' }, 'not base64url');
  t.match(await judge(await with_({ jti: 'c0a8f2e4-9d1b-4c3e-8f7a-123456789abc' }), now), { kind: 'admitted' }, 'a UUID is long enough');
  t.match(await judge(await with_({ claims: { nbf: Math.floor(now / 1000) + 120 } }), now), { kind: 'refused', cause: 'malformed' }, 'nbf two minutes ahead');
  t.match(await judge(await with_({ claims: { nbf: Math.floor(now / 1000) + 30 } }), now), { kind: 'admitted' }, 'nbf within the 60 s skew');
  t.match(await judge(await with_({ claims: { iat: 'now' } }), now), { kind: 'refused', cause: 'malformed' });
  t.match(await judge(await with_({ claims: { iss: 'anyone', sub: 'whoever' } }), now), { kind: 'admitted', name: 'p-256' }, 'iss and sub are not consulted');
  const crit = await new SignJWT({ aud: MCP, exp: Math.floor(now / 1000) + 60, jti: jti() })
    .setProtectedHeader({ alg: 'ES256', typ: TYP, crit: ['urn:example:ext'], 'urn:example:ext': 1 })
    .sign(p256.privateKey, { crit: { 'urn:example:ext': true } });
  t.match(await judge(crit, now), { kind: 'refused', cause: 'malformed' }, 'a validly signed assertion with an extension we do not understand');
  for (const garbage of ['', 'not-a-jwt', 'a.b.c', `${unsigned({ alg: 'ES256', typ: TYP }, {}).slice(0, -1)}x.y`]) {
    t.match(await judge(garbage, now), { kind: 'refused', cause: 'malformed' }, JSON.stringify(garbage));
  }
  t.equal(claims.filter(([id]) => id === 'short').length, 0);
});

t.test('a tampered payload fails the signature; keys of other entries decide who is admitted', async (t) => {
  const now = Date.now();
  const { judge } = setup(t, [
    ['first', rsa2048],
    ['second', rsa3072],
  ]);
  const signed = await assertion(rsa2048.privateKey, now, { alg: 'RS256', aud: ADMIN });
  const [header, , signature] = signed.split('.');
  const payload = Buffer.from(JSON.stringify({ aud: MCP, exp: Math.floor(now / 1000) + 60, jti: jti() })).toString('base64url');
  t.match(await judge(`${header}.${payload}.${signature}`, now), { kind: 'refused', cause: 'bad-signature' }, 'audience rewritten after signing');
  t.match(
    await judge(await assertion(rsa3072.privateKey, now, { alg: 'RS256' }), now),
    { kind: 'admitted', entryIndex: 1, name: 'second' },
    "the second entry's key",
  );
  t.match(await judge(await assertion(stranger.privateKey, now, { alg: 'RS256' }), now), { kind: 'refused', cause: 'bad-signature' }, 'a key no entry holds');
  const other = setup(t, [['admin-only', stranger]]);
  t.match(
    await other.judge(await assertion(rsa2048.privateKey, now, { alg: 'RS256' }), now),
    { kind: 'refused', cause: 'bad-signature' },
    "another surface's key",
  );
});

t.test('retired keys are named and admit nothing; a live entry with the same key still admits', async (t) => {
  const now = Date.now();
  const { judge } = setup(t, [
    ['live', p384],
    ['retired', p256, now - 1],
  ]);
  t.same(await judge(await assertion(p256.privateKey, now, { alg: 'ES256' }), now), {
    kind: 'refused',
    cause: 'retired-key',
    entryIndex: 1,
    name: 'retired',
    unreadable: [],
  });
  const both = setup(t, [
    ['retired', p256, now],
    ['extended', p256],
  ]);
  t.match(await both.judge(await assertion(p256.privateKey, now, { alg: 'ES256' }), now), { kind: 'admitted', entryIndex: 1, name: 'extended' });
});

t.test("unreadable material: named, never in the way of another entry's key; rotation through the file", async (t) => {
  const now = Date.now();
  const { judge, dir, entries } = setup(t, [
    ['vanishing', p256],
    ['steady', rsa2048],
  ]);
  rmSync(join(dir, 'vanishing.pem'));
  t.same(await judge(await assertion(rsa2048.privateKey, now, { alg: 'PS512' }), now), {
    kind: 'admitted',
    entryIndex: 1,
    name: 'steady',
    unreadable: [{ entryIndex: 0, name: 'vanishing' }],
  });
  t.same(await judge(await assertion(p256.privateKey, now, { alg: 'ES256' }), now), {
    kind: 'refused',
    cause: 'material-unreadable',
    unreadable: [{ entryIndex: 0, name: 'vanishing' }],
  });
  writeFileSync(join(dir, 'vanishing.pem'), 'not a key any more');
  t.match(
    await judge(await assertion(p256.privateKey, now, { alg: 'ES256' }), now),
    { kind: 'refused', cause: 'material-unreadable' },
    'material that no longer parses',
  );
  writeFileSync(join(dir, 'vanishing.pem'), pem(p521));
  t.match(
    await judge(await assertion(p521.privateKey, now, { alg: 'ES512' }), now),
    { kind: 'admitted', name: 'vanishing' },
    'the rotated key verifies on the next request',
  );
  t.match(
    await judge(await assertion(p256.privateKey, now, { alg: 'ES256' }), now),
    { kind: 'refused', cause: 'algorithm' },
    'the replaced key no longer does',
  );
  t.notMatch(JSON.stringify(entries.map((e) => e.Name)), /pem/);
});

t.test('replay: a second presentation is refused, and claimJti failing fails closed', async (t) => {
  const now = Date.now();
  const { judge } = setup(t, [['p-256', p256]]);
  const once = await assertion(p256.privateKey, now, { alg: 'ES256' });
  t.match(await judge(once, now), { kind: 'admitted' });
  t.match(await judge(once, now + 1_000), { kind: 'refused', cause: 'replay', entryIndex: 0, name: 'p-256' });
  const { entries } = setup(t, [['p-256', p256]]);
  const down: ClaimJti = () => Promise.reject(new Error('replay guard down'));
  await t.rejects(judgeAssertion(await assertion(p256.privateKey, now, { alg: 'ES256' }), entries, MCP, now, read, down), /replay guard down/);
});

t.test('replay through the replay guard: still refused by a fresh actor on the same database file', async (t) => {
  const now = Date.now();
  const dir = tempDir(t);
  const database = join(dir, 'mailcairn.db');
  const boot = openStore({ database, busyTimeoutMs: 5_000, synchronous: 'Normal' });
  migrate(boot);
  boot.close();
  const log = createLogger({ level: 'silent', format: 'Json', destination: { write: () => {} } });

  async function startGuard(): Promise<{ claim: ClaimJti; stop: () => Promise<void> }> {
    const cleanups: Array<() => void | Promise<void>> = [];
    const ctx = {
      actorId: 'replay-guard',
      log,
      deadline: null,
      meta: undefined,
      tell: () => {},
      ask: () => Promise.reject(new Error('unused')),
      schedule: () => ({ cancel: () => {} }),
      defer: (cleanup: () => void | Promise<void>) => void cleanups.push(cleanup),
      stopSelf: () => {},
    } satisfies ActorContext;
    const config = replayGuard.config.parse({ database, busyTimeoutMs: 5_000, synchronous: 'Normal', pruneIntervalMs: 60_000 });
    const state = await replayGuard.init(config, ctx);
    return {
      claim: async (id, expiresAt) => {
        const reply = (await replayGuard.handle(state, replayGuard.messages.parse({ type: 'replay-guard.claim', jti: id, expiresAt }), ctx)) as {
          fresh: boolean;
        };
        return reply.fresh;
      },
      stop: async () => {
        for (const cleanup of cleanups.reverse()) await cleanup();
      },
    };
  }

  const path = join(dir, 'client.pem');
  writeFileSync(path, pem(rsa2048));
  const entries: PublicKeyEntry[] = [{ Name: 'client', SecretReference: `file:${path}`, Lifetime: Number.POSITIVE_INFINITY }];
  const presented = await assertion(rsa2048.privateKey, now, { alg: 'PS256' });

  const first = await startGuard();
  t.match(await judgeAssertion(presented, entries, MCP, now, read, first.claim), { kind: 'admitted', name: 'client' });
  t.match(await judgeAssertion(presented, entries, MCP, now, read, first.claim), { kind: 'refused', cause: 'replay' });
  await first.stop();

  const second = await startGuard();
  t.teardown(() => second.stop());
  t.match(
    await judgeAssertion(presented, entries, MCP, now + 5_000, read, second.claim),
    { kind: 'refused', cause: 'replay' },
    'a restart does not reopen the window',
  );
  t.match(
    await judgeAssertion(await assertion(rsa2048.privateKey, now, { alg: 'PS256' }), entries, MCP, now, read, second.claim),
    { kind: 'admitted' },
    'a fresh jti is admitted',
  );
});
