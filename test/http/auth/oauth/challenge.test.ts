/**
 * The Bearer challenges, to the character: realm `mailcairn`, every
 * parameter value quoted, `resource_metadata` absolute and only where a
 * document is published; the 403 insufficient_scope form; the plain 403
 * with no challenge; and every 401 cause written identically.
 */
import t from 'tap';
import { answerTokenRefusal, insufficientScopeChallenge, REALM, unauthorizedChallenge } from '../../../../http/auth/oauth/challenge.ts';

const META = 'https://mail.example.test/.well-known/oauth-protected-resource/mcp';

function recorder() {
  const headers: Record<string, string | number> = {};
  const res = {
    statusCode: 200,
    ended: false,
    setHeader(name: string, value: string | number) {
      headers[name.toLowerCase()] = value;
    },
    end() {
      res.ended = true;
    },
  };
  return { res, headers };
}

t.test('challenge values', async (t) => {
  t.equal(REALM, 'mailcairn');
  t.equal(unauthorizedChallenge(undefined), 'Bearer realm="mailcairn"', 'API keys only: no resource_metadata');
  t.equal(unauthorizedChallenge(META), `Bearer realm="mailcairn", resource_metadata="${META}"`);
  t.equal(
    insufficientScopeChallenge(['mail.read', 'mail.write'], META),
    `Bearer realm="mailcairn", error="insufficient_scope", scope="mail.read mail.write", resource_metadata="${META}"`,
  );
  t.equal(
    insufficientScopeChallenge(['a"b\\c'], undefined),
    'Bearer realm="mailcairn", error="insufficient_scope", scope="a\\"b\\\\c"',
    'quoted-string escapes',
  );
});

t.test('answers', async (t) => {
  const written = [];
  for (const cause of [
    'clear-text',
    'malformed',
    'issuer',
    'algorithm',
    'discovery-failed',
    'unknown-key',
    'signature',
    'audience',
    'expired',
    'not-yet-valid',
  ] as const) {
    const { res, headers } = recorder();
    answerTokenRefusal(res, { kind: 'refused', status: 401, cause, server: 'a', detail: 'x' }, META);
    written.push({ status: res.statusCode, headers, ended: res.ended });
  }
  for (const w of written) t.same(w, written[0], 'every 401 cause written alike');
  t.same(written[0], {
    status: 401,
    headers: { 'www-authenticate': `Bearer realm="mailcairn", resource_metadata="${META}"`, 'cache-control': 'no-store', 'content-length': 0 },
    ended: true,
  });

  const scope = recorder();
  answerTokenRefusal(scope.res, { kind: 'insufficient-scope', status: 403, cause: 'scope', scopes: ['mail.read'], entryIndex: 0, server: 'a' }, META);
  t.equal(scope.res.statusCode, 403);
  t.equal(scope.headers['www-authenticate'], `Bearer realm="mailcairn", error="insufficient_scope", scope="mail.read", resource_metadata="${META}"`);

  const plain = recorder();
  answerTokenRefusal(plain.res, { kind: 'other-subject', status: 403, cause: 'subject', server: 'a' }, META);
  t.same(
    { status: plain.res.statusCode, headers: plain.headers },
    { status: 403, headers: { 'cache-control': 'no-store', 'content-length': 0 } },
    'a plain 403 names nothing',
  );
});
