/**
 * The token endpoint's answers, classified (actors/imap-sync/token-answer.ts):
 * refused credential, misconfiguration or outage, each with its code, and
 * nothing of the body kept but the RFC's own error codes.
 */
import t from 'tap';
import { classifyTokenAnswer, classifyTokenTransportFailure, MAX_RETRY_AFTER_MS, retryAfterMs } from '../../../actors/imap-sync/token-answer.ts';
import { Codes } from '../../../runtime/errors.ts';

const NOW = Date.parse('2026-03-01T12:00:00Z');
const coded = (code: string): Error => Object.assign(new Error(`connect ${code} 127.0.0.1:1 secret-looking-text`), { code });

t.test('every answer has its kind and code', async (t) => {
  const table: Array<[string, Parameters<typeof classifyTokenAnswer>[0], string, string, string]> = [
    // [what, answer, kind, code, cause]
    [
      'invalid_grant (400)',
      { status: 400, body: { error: 'invalid_grant', error_description: 'grant request is invalid' } },
      'refused',
      'E_OAUTH_REFRESH_REFUSED',
      'invalid_grant',
    ],
    ['invalid_grant (401)', { status: 401, body: { error: 'invalid_grant' } }, 'refused', 'E_OAUTH_REFRESH_REFUSED', 'invalid_grant'],
    ['invalid_client (401)', { status: 401, body: { error: 'invalid_client' } }, 'refused', 'E_OAUTH_CLIENT_REFUSED', 'invalid_client'],
    ['invalid_client (400)', { status: 400, body: { error: 'invalid_client' } }, 'refused', 'E_OAUTH_CLIENT_REFUSED', 'invalid_client'],
    ['unauthorized_client', { status: 400, body: { error: 'unauthorized_client' } }, 'refused', 'E_OAUTH_CLIENT_REFUSED', 'unauthorized_client'],
    ['401 without a code', { status: 401, body: undefined }, 'refused', 'E_OAUTH_CLIENT_REFUSED', 'http-401'],
    ['unsupported_grant_type', { status: 400, body: { error: 'unsupported_grant_type' } }, 'misconfigured', 'E_OAUTH_MISCONFIGURED', 'unsupported_grant_type'],
    ['invalid_scope', { status: 400, body: { error: 'invalid_scope' } }, 'misconfigured', 'E_OAUTH_MISCONFIGURED', 'invalid_scope'],
    ['invalid_request', { status: 400, body: { error: 'invalid_request' } }, 'misconfigured', 'E_OAUTH_MISCONFIGURED', 'invalid_request'],
    ['invalid_target', { status: 400, body: { error: 'invalid_target' } }, 'misconfigured', 'E_OAUTH_MISCONFIGURED', 'invalid_target'],
    ['400 with an unknown code', { status: 400, body: { error: 'my-secret-value' } }, 'misconfigured', 'E_OAUTH_MISCONFIGURED', 'http-400'],
    ['403 (a gateway)', { status: 403, body: undefined }, 'misconfigured', 'E_OAUTH_MISCONFIGURED', 'http-403'],
    ['404', { status: 404, body: { error: 'not_found' } }, 'misconfigured', 'E_OAUTH_MISCONFIGURED', 'http-404'],
    ['405', { status: 405, body: undefined }, 'misconfigured', 'E_OAUTH_MISCONFIGURED', 'http-405'],
    ['302 (not followed)', { status: 302, body: undefined }, 'misconfigured', 'E_OAUTH_MISCONFIGURED', 'http-302'],
    ['200 without access_token', { status: 200, body: { token_type: 'Bearer' } }, 'misconfigured', 'E_OAUTH_MISCONFIGURED', 'no-access-token'],
    ['200 with an empty access_token', { status: 200, body: { access_token: '' } }, 'misconfigured', 'E_OAUTH_MISCONFIGURED', 'no-access-token'],
    ['200 with a number for access_token', { status: 200, body: { access_token: 42 } }, 'misconfigured', 'E_OAUTH_MISCONFIGURED', 'no-access-token'],
    ['200, not JSON (an HTML page)', { status: 200, body: undefined }, 'misconfigured', 'E_OAUTH_MISCONFIGURED', 'not-json'],
    ['200, a JSON array', { status: 200, body: [1, 2] }, 'misconfigured', 'E_OAUTH_MISCONFIGURED', 'not-an-object'],
    ['200, token_type mac', { status: 200, body: { access_token: 'a', token_type: 'mac' } }, 'misconfigured', 'E_OAUTH_MISCONFIGURED', 'token-type'],
    ['200, token_type DPoP', { status: 200, body: { access_token: 'a', token_type: 'DPoP' } }, 'misconfigured', 'E_OAUTH_MISCONFIGURED', 'token-type'],
    ['500', { status: 500, body: { error: 'server_error' } }, 'outage', 'E_OAUTH_UNAVAILABLE', 'http-500'],
    ['502', { status: 502, body: undefined }, 'outage', 'E_OAUTH_UNAVAILABLE', 'http-502'],
    ['503', { status: 503, body: undefined }, 'outage', 'E_OAUTH_UNAVAILABLE', 'http-503'],
    ['504', { status: 504, body: undefined }, 'outage', 'E_OAUTH_UNAVAILABLE', 'http-504'],
    ['408', { status: 408, body: undefined }, 'outage', 'E_OAUTH_UNAVAILABLE', 'http-408'],
    ['429', { status: 429, body: undefined }, 'outage', 'E_OAUTH_UNAVAILABLE', 'http-429'],
  ];
  for (const [what, answer, kind, code, cause] of table) {
    const verdict = classifyTokenAnswer(answer, NOW);
    t.match(verdict, { kind, code, cause }, what);
    t.notMatch(JSON.stringify(verdict), /secret|grant request/, `${what}: nothing of the body's own words kept`);
  }
});

t.test('a granted token', async (t) => {
  t.same(classifyTokenAnswer({ status: 200, body: { access_token: 'at', token_type: 'Bearer', expires_in: 3599, refresh_token: 'rt' } }), {
    kind: 'granted',
    accessToken: 'at',
    refreshToken: 'rt',
    expiresIn: 3599,
  });
  t.match(
    classifyTokenAnswer({ status: 200, body: { access_token: 'at', token_type: 'bearer' } }),
    { kind: 'granted', refreshToken: null },
    'bearer in any case',
  );
  t.match(classifyTokenAnswer({ status: 200, body: { access_token: 'at' } }), { kind: 'granted' }, 'no token_type: taken as Bearer');
});

t.test('Retry-After is honoured for an outage, capped', async (t) => {
  t.match(classifyTokenAnswer({ status: 429, body: undefined, retryAfter: '120' }, NOW), { kind: 'outage', retryAfterMs: 120_000 }, 'delta-seconds');
  t.match(
    classifyTokenAnswer({ status: 503, body: undefined, retryAfter: new Date(NOW + 30_000).toUTCString() }, NOW),
    { retryAfterMs: 30_000 },
    'an HTTP date',
  );
  t.equal(retryAfterMs('999999', NOW), MAX_RETRY_AFTER_MS, 'capped at an hour');
  t.equal(retryAfterMs('soon', NOW), null, 'unreadable: none');
  t.equal(retryAfterMs(new Date(NOW - 5_000).toUTCString(), NOW), 0, 'a date past: no wait');
  t.equal(retryAfterMs(undefined, NOW), null);
  t.match(classifyTokenAnswer({ status: 400, body: { error: 'invalid_grant' }, retryAfter: '60' }, NOW), { retryAfterMs: null }, 'only an outage waits');
});

t.test('no answer at all', async (t) => {
  for (const code of [
    'ECONNREFUSED',
    'ECONNRESET',
    'ETIMEDOUT',
    'ENOTFOUND',
    'UND_ERR_CONNECT_TIMEOUT',
    'UND_ERR_HEADERS_TIMEOUT',
    'UND_ERR_BODY_TIMEOUT',
    'UND_ERR_SOCKET',
  ]) {
    t.match(classifyTokenTransportFailure(coded(code)), { kind: 'outage', code: 'E_OAUTH_UNAVAILABLE', cause: code }, code);
  }
  t.match(classifyTokenTransportFailure(new Error('no code')), { kind: 'outage', cause: 'no-answer' });
  for (const code of ['DEPTH_ZERO_SELF_SIGNED_CERT', 'CERT_HAS_EXPIRED', 'ERR_TLS_CERT_ALTNAME_INVALID']) {
    t.match(classifyTokenTransportFailure(coded(code)), { kind: 'misconfigured', code: 'E_OAUTH_MISCONFIGURED', cause: 'tls' }, code);
  }
  const defect = new TypeError('x is not a function');
  t.throws(() => classifyTokenTransportFailure(defect), defect, 'a defect is thrown on');
  const invalidArg = Object.assign(new Error('invalid'), { code: 'UND_ERR_INVALID_ARG' });
  t.throws(() => classifyTokenTransportFailure(invalidArg), invalidArg, 'a request we built wrong is thrown on');
});

t.test('every code the classifier answers has its sentence in the error table', async (t) => {
  for (const code of ['E_OAUTH_REFRESH_REFUSED', 'E_OAUTH_CLIENT_REFUSED', 'E_OAUTH_MISCONFIGURED', 'E_OAUTH_UNAVAILABLE'] as const) {
    t.match(Codes[code].msg, /^The token endpoint /, code);
  }
  for (const code of ['E_OAUTH_REFRESH_REFUSED', 'E_OAUTH_CLIENT_REFUSED', 'E_OAUTH_MISCONFIGURED'] as const) {
    t.notMatch(Codes[code].msg, /did not answer|unavailable/, `${code}: not said as an outage`);
  }
  t.equal(Codes.E_OAUTH_UNAVAILABLE.retryable, true);
  t.equal(Codes.E_OAUTH_REFRESH_REFUSED.retryable, false);
  t.equal(Codes.E_OAUTH_MISCONFIGURED.retryable, false);
});
