/**
 * Key sets read from real `oidc-provider` instances
 * (test/harness/oauth-provider.ts): one set per server, each holding only
 * that server's keys; `warm` reads them ahead of the first token; a refresh
 * asked by an unknown key id is read at most once per interval (and
 * concurrent asks share one read); a set past its age is read again in the
 * background, and when that read fails the last good set keeps serving.
 */
import t from 'tap';
import { createKeySets } from '../../../../http/auth/oauth/key-sets.ts';
import { fakeClock, seededRandom } from '../../../../runtime/clock.ts';
import { startOAuthProvider } from '../../../harness/oauth-provider.ts';
import { captureLog } from '../../../helpers/log-capture.ts';

const RESOURCE = 'https://mail.example.test/mcp';

t.test('key sets', async (t) => {
  let jwksFailing = false;
  const a = await startOAuthProvider({
    users: ['alice'],
    resource: { indicator: RESOURCE, scopes: ['mail.read'] },
    intercept: (req, res) => {
      if (!jwksFailing || req.url !== '/jwks') return false;
      res.statusCode = 500;
      res.end();
      return true;
    },
  });
  t.teardown(() => a.stop());
  const b = await startOAuthProvider({ users: ['bob'], issuerPath: '/b', resource: { indicator: RESOURCE, scopes: ['mail.read'], alg: 'ES384' } });
  t.teardown(() => b.stop());
  const serverA = { Name: 'a', Issuer: a.issuer };
  const serverB = { Name: 'b', Issuer: b.issuer };
  const jwksReads = (p: typeof a, path: string): number => p.requests().filter((r) => r === path).length;

  const clock = fakeClock(5_000_000);
  const log = captureLog();
  const sets = createKeySets({ clock, random: seededRandom(7), log: log.log, maxAgeMs: 600_000 });

  await t.test('warm reads every server ahead of the first token; each set holds its own keys', async (t) => {
    sets.warm([serverA, serverB]);
    sets.warm([serverA, serverB]);
    const [setA, setB] = await Promise.all([sets.keys(serverA), sets.keys(serverB)]);
    t.equal(jwksReads(a, '/jwks'), 1, 'one read for a, warm twice and asked once');
    t.equal(jwksReads(b, '/b/jwks'), 1, 'one read for b');
    const kids = (set: typeof setA): string[] => (set.kind === 'found' ? set.keys.jwks().keys.map((k) => `${k.kid}:${k.alg}`) : []);
    t.same(kids(setA), ['test-rs256:RS256']);
    t.same(kids(setB), ['test-es384:ES384', 'test-rs256:RS256'], "b's own keys (its own RSA key of the same name)");
    const aN = setA.kind === 'found' ? setA.keys.jwks().keys[0]!.n : '';
    const bN = setB.kind === 'found' ? setB.keys.jwks().keys[1]!.n : '';
    t.not(aN, bN, 'same key id, different keys: the sets are not shared');
    t.same(
      log.lines
        .filter((l) => l.event === 'oauth.keys-loaded')
        .map((l) => l.server)
        .sort(),
      ['a', 'b'],
      'each load logged once, with the key ids',
    );
  });

  await t.test('an unknown key id reads the set again at most once per interval', async (t) => {
    const kid = await a.rotateSigningKey();
    t.equal(await sets.refresh(serverA), null, 'read moments ago: not read again');
    t.equal(jwksReads(a, '/jwks'), 1);
    clock.advance(30_000);
    const [one, two] = await Promise.all([sets.refresh(serverA), sets.refresh(serverA)]);
    t.equal(jwksReads(a, '/jwks'), 2, 'two asks at once share one read');
    for (const got of [one, two])
      t.same(got?.kind === 'found' ? got.keys.jwks().keys.map((k) => k.kid) : [], [kid, 'test-rs256'], 'the rotated key is in the set');
    t.equal(await sets.refresh(serverA), null, 'and not again before the interval');
  });

  await t.test('past its age a set is read again; a failed read keeps the last good set', async (t) => {
    jwksFailing = true;
    clock.advance(600_000);
    const stale = await sets.keys(serverA);
    t.equal(stale.kind, 'found', 'the aged set serves while it is read again');
    await new Promise((r) => setTimeout(r, 200));
    t.equal(jwksReads(a, '/jwks'), 3, 'read again in the background');
    t.match(log.lines.at(-1), { event: 'oauth.keys-failed', server: 'a', reason: 'status', status: 500, stale: true });
    t.equal((await sets.keys(serverA)).kind, 'found', 'the last good set still serves');
    t.equal(jwksReads(a, '/jwks'), 3, 'and the failed read is not repeated inside its backoff');
    jwksFailing = false;
    clock.advance(2_000);
    await sets.keys(serverA);
    await new Promise((r) => setTimeout(r, 200));
    t.equal(jwksReads(a, '/jwks'), 4, 'after the backoff it is read again');
  });

  await t.test('a server never reached has no set, and asking again inside the backoff costs nothing', async (t) => {
    const dead = { Name: 'dead', Issuer: 'http://127.0.0.1:9' };
    t.same(await sets.keys(dead), { kind: 'failed' });
    t.same(await sets.keys(dead), { kind: 'failed' });
    t.equal(await sets.refresh(dead), null);
    t.equal(log.lines.filter((l) => l.event === 'oauth.keys-failed' && l.server === 'dead').length, 1, 'one attempt logged');
  });
});
