/** Telling an assertion, an access token and an API key apart (docs/security.md "Credential entries"). */
import t from 'tap';
import { ASSERTION_MEDIA_TYPE, credentialShape, jwtParts, namesAssertionType } from '../../../http/auth/credential-shape.ts';

function segment(value: unknown): string {
  return Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
}

function jwt(header: unknown, payload: unknown, signature = 'c2ln'): string {
  return `${segment(header)}.${segment(payload)}.${signature}`;
}

t.test('a JWT typed as a client assertion is an assertion, whatever its payload', async (t) => {
  t.equal(credentialShape(jwt({ alg: 'RS256', typ: ASSERTION_MEDIA_TYPE }, { aud: 'urn:service:mcp' })), 'assertion');
  t.equal(credentialShape(jwt({ alg: 'ES256', typ: ASSERTION_MEDIA_TYPE }, { iss: 'https://as.example' })), 'assertion', 'typ wins over iss');
  t.equal(
    credentialShape(jwt({ alg: 'none', typ: ASSERTION_MEDIA_TYPE }, {}, '')),
    'assertion',
    'an unsigned one is still shaped as one (and refused by its judge)',
  );
  t.equal(credentialShape(jwt({ alg: 'RS256', typ: 'application/Service-Client-Assertion+JWT' }, {})), 'assertion', 'RFC 7515 media type comparison');
  t.equal(credentialShape(jwt({ alg: 'RS256', typ: ASSERTION_MEDIA_TYPE }, { iss: 'x' }), ['y']), 'assertion');
});

t.test('a JWT naming its issuer is an access token', async (t) => {
  const token = jwt({ alg: 'RS256', typ: 'at+jwt' }, { iss: 'https://as.example/', sub: 's' });
  t.equal(credentialShape(token), 'access-token');
  t.equal(credentialShape(token, ['https://as.example/']), 'access-token', 'a configured issuer');
  t.equal(credentialShape(token, ['https://as.example']), 'api-key', 'an unconfigured issuer (exact comparison) makes it an opaque key');
  t.equal(credentialShape(token, []), 'api-key');
  t.equal(credentialShape(jwt({ alg: 'RS256' }, { iss: '' })), 'api-key', 'an empty iss names nothing');
  t.equal(credentialShape(jwt({ alg: 'RS256' }, { iss: 42 })), 'api-key');
});

t.test('anything else is an API key, and nothing throws', async (t) => {
  const cases: Array<[string, string]> = [
    ['', 'empty'],
    ['mck_7d1a9f0b2c', 'opaque key'],
    ['a.b.c', 'three segments that are not JSON'],
    [jwt({ alg: 'RS256' }, { sub: 'x' }), 'a JWT without iss or assertion typ'],
    [jwt({ typ: ASSERTION_MEDIA_TYPE }, { iss: 'x' }), 'a header without alg'],
    [jwt(['alg'], { iss: 'x' }), 'a header that is a list'],
    [jwt({ alg: 'RS256' }, '"just a string"'), 'a payload that is not an object'],
    [jwt({ alg: 'RS256' }, 'not json'), 'a payload that is not JSON'],
    [`${jwt({ alg: 'RS256' }, { iss: 'x' })}.extra`, 'four segments (JWE has five)'],
    [`${segment({ alg: 'RS256' })}.${segment({ iss: 'x' })}.si+g`, 'a signature outside base64url'],
    [`${segment({ alg: 'RS256' })}=.${segment({ iss: 'x' })}.sig`, 'padding'],
    ['Bearer x.y.z', 'spaces'],
  ];
  for (const [token, what] of cases) t.equal(credentialShape(token), 'api-key', what);
  t.equal(credentialShape(undefined as unknown as string), 'api-key', 'not even a string');
  t.equal(jwtParts(null as unknown as string), null);
});

t.test('jwtParts decodes without verifying; typ comparison', async (t) => {
  t.same(jwtParts(jwt({ alg: 'ES256', kid: 'k' }, { a: 1 })), { header: { alg: 'ES256', kid: 'k' }, payload: { a: 1 } });
  t.ok(namesAssertionType('service-client-assertion+jwt'));
  t.ok(namesAssertionType('APPLICATION/service-client-assertion+jwt'));
  t.notOk(namesAssertionType('JWT'));
  t.notOk(namesAssertionType('service-client-assertion'));
  t.notOk(namesAssertionType('text/service-client-assertion+jwt'));
  t.notOk(namesAssertionType(undefined));
});

t.test('a token whose payload nests past the JSON depth bound is not decoded: an API key, never a crash', async (t) => {
  const deep = `{"iss":"https://issuer.example","a":${'['.repeat(5_000)}${']'.repeat(5_000)}}`;
  const token = jwt({ alg: 'RS256' }, deep);
  t.equal(jwtParts(token), null, 'not decoded');
  t.equal(credentialShape(token), 'api-key', 'judged as no JWT at all');
  const shallow = `{"iss":"https://issuer.example","a":${'['.repeat(10)}${']'.repeat(10)}}`;
  t.equal(credentialShape(jwt({ alg: 'RS256' }, shallow)), 'access-token', 'a modest nesting still reads');
});
