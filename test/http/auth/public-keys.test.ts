/**
 * Public keys of key-pair clients (docs/security.md "Key pair (signed client
 * assertion)"): what
 * is accepted, every kind refused at startup by position, and which
 * algorithms an accepted key admits.
 */
import { execFileSync } from 'node:child_process';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { readSecret } from '../../../runtime/secret-ref.ts';
import { type PublicKeyEntry, inspectPublicKey, loadPublicKey, publicKeyStartupProblems } from '../../../http/auth/public-keys.ts';
import { AppError } from '../../../runtime/errors.ts';
import { tempDir } from '../../helpers/daemon.ts';

const now = Date.parse('2026-06-01T12:00:00Z');

function spki(key: KeyObject): string {
  return key.export({ type: 'spki', format: 'pem' }) as string;
}

const rsa = (modulusLength: number) => generateKeyPairSync('rsa', { modulusLength });
const ec = (namedCurve: string) => generateKeyPairSync('ec', { namedCurve });

t.test('RSA of 2048 bits and more, and EC on P-256, P-384, P-521, are accepted with the algorithms they admit', async (t) => {
  const rsaAlgorithms = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'];
  for (const bits of [2048, 3072]) {
    const pair = rsa(bits);
    const spkiPem = spki(pair.publicKey);
    t.match(inspectPublicKey(spkiPem), { ok: true, algorithms: rsaAlgorithms }, `RSA ${bits} (SubjectPublicKeyInfo)`);
    const pkcs1 = pair.publicKey.export({ type: 'pkcs1', format: 'pem' }) as string;
    t.match(inspectPublicKey(pkcs1), { ok: true, algorithms: rsaAlgorithms }, `RSA ${bits} (RSA PUBLIC KEY)`);
    t.equal(loadPublicKey(`\n\n${spkiPem}\n`).asymmetricKeyDetails?.modulusLength, bits, 'surrounding whitespace is fine');
    t.equal(loadPublicKey(spkiPem.replace(/\n/g, '\r\n')).type, 'public', 'CRLF line ends');
  }
  for (const [curve, alg] of [
    ['P-256', 'ES256'],
    ['P-384', 'ES384'],
    ['P-521', 'ES512'],
  ] as const) {
    t.match(inspectPublicKey(spki(ec(curve).publicKey)), { ok: true, algorithms: [alg] }, `${curve} admits ${alg} only`);
  }
});

t.test('refusals, each naming its kind and never the material', async (t) => {
  const rsaPair = rsa(2048);
  const privatePkcs8 = rsaPair.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
  const cases: Array<[string, string, string]> = [
    ['hello', 'not-public-key', 'arbitrary text'],
    ['', 'not-public-key', 'empty'],
    [spki(rsaPair.publicKey).replace('MII', 'XXX'), 'not-public-key', 'a damaged block'],
    [JSON.stringify(rsaPair.publicKey.export({ format: 'jwk' })), 'not-public-key', 'a JWK'],
    [`${spki(rsaPair.publicKey)}${spki(ec('P-256').publicKey)}`, 'not-public-key', 'two keys in one material'],
    [`comment\n${spki(rsaPair.publicKey)}`, 'not-public-key', 'text beside the block'],
    [privatePkcs8, 'private-key', 'a PKCS#8 private key'],
    [rsaPair.privateKey.export({ type: 'pkcs1', format: 'pem' }) as string, 'private-key', 'an RSA PRIVATE KEY'],
    [ec('P-256').privateKey.export({ type: 'sec1', format: 'pem' }) as string, 'private-key', 'an EC PRIVATE KEY'],
    [rsaPair.privateKey.export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: 'pw' }) as string, 'private-key', 'an ENCRYPTED PRIVATE KEY'],
    [`${spki(rsaPair.publicKey)}${privatePkcs8}`, 'private-key', 'a public key beside its private key'],
    [spki(rsa(1024).publicKey), 'rsa-too-small', 'RSA 1024'],
    [spki(rsa(2040).publicKey), 'rsa-too-small', 'RSA 2040'],
    [spki(ec('secp256k1').publicKey), 'curve', 'secp256k1 (256 bits, not P-256)'],
    [spki(ec('brainpoolP256r1').publicKey), 'curve', 'brainpoolP256r1'],
    [spki(ec('brainpoolP384r1').publicKey), 'curve', 'brainpoolP384r1'],
    [spki(generateKeyPairSync('ed25519').publicKey), 'key-type', 'Ed25519'],
    [spki(generateKeyPairSync('ed448').publicKey), 'key-type', 'Ed448'],
    [spki(generateKeyPairSync('x25519').publicKey), 'key-type', 'X25519'],
    [spki(generateKeyPairSync('dsa', { modulusLength: 2048, divisorLength: 256 }).publicKey), 'key-type', 'DSA'],
    [spki(generateKeyPairSync('rsa-pss', { modulusLength: 2048 }).publicKey), 'key-type', 'an RSASSA-PSS-only key'],
  ];
  for (const [pem, refusal, what] of cases) {
    const inspection = inspectPublicKey(pem);
    t.match(inspection, { ok: false, refusal }, what);
    if (!inspection.ok && pem.length > 40) t.notOk(inspection.message.includes(pem.slice(30, 60)), `${what}: the message repeats no material`);
  }
  const thrown = (() => {
    try {
      loadPublicKey(spki(rsa(1024).publicKey));
    } catch (err) {
      return err;
    }
    return null;
  })();
  t.ok(thrown instanceof AppError && thrown.code === 'E_CONFIG_INVALID', 'loadPublicKey throws E_CONFIG_INVALID');
  t.match((thrown as AppError).message, /RSA key of 1024 bits; at least 2048/);
});

t.test('a certificate is not a public key', { skip: existsSync('/usr/bin/openssl') ? false : 'no openssl to make a certificate' }, async (t) => {
  const dir = tempDir(t);
  const key = join(dir, 'key.pem');
  const cert = join(dir, 'cert.pem');
  writeFileSync(key, ec('P-256').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string);
  execFileSync('openssl', ['req', '-x509', '-key', key, '-out', cert, '-subj', '/CN=client', '-days', '1'], { stdio: 'ignore' });
  t.match(inspectPublicKey(readFileSync(cert, 'utf8')), { ok: false, refusal: 'not-public-key' });
});

t.test('startup problems by position; expired entries are not read', async (t) => {
  const dir = tempDir(t);
  const file = (name: string, material: string): string => {
    writeFileSync(join(dir, name), material);
    return `file:${join(dir, name)}`;
  };
  const entry = (Name: string, SecretReference: string, Lifetime = Number.POSITIVE_INFINITY): PublicKeyEntry => ({ Name, SecretReference, Lifetime });
  const entries = [
    entry('good', file('good.pem', spki(rsa(2048).publicKey))),
    entry('small', file('small.pem', spki(rsa(1024).publicKey))),
    undefined,
    entry('edwards', file('ed.pem', spki(generateKeyPairSync('ed25519').publicKey))),
    entry('gone', `file:${join(dir, 'missing.pem')}`),
    entry('private', file('private.pem', ec('P-384').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string)),
    entry('k1', file('k1.pem', spki(ec('secp256k1').publicKey))),
    entry('expired-small', file('expired.pem', spki(rsa(1024).publicKey)), now - 1),
    entry('expired-gone', `file:${join(dir, 'missing.pem')}`, now - 1),
    entry('p521', file('p521.pem', spki(ec('P-521').publicKey))),
  ];
  const problems = publicKeyStartupProblems('AdminEndpoint', entries, (ref) => readSecret(ref, {}), now);
  t.same(
    problems.map((p) => p.setting),
    [1, 3, 4, 5, 6].map((n) => `AdminEndpoint:Authentication:${n}:PublicKey:SecretReference`),
  );
  t.match(
    problems.map((p) => p.message),
    [
      /RSA key of 1024 bits/,
      /ed25519, which no permitted algorithm covers/,
      /could not be read at startup.*nothing exists there/,
      /contains a private key/,
      /secp256k1; only P-256, P-384 and P-521/,
    ],
  );
  t.notMatch(JSON.stringify(problems), new RegExp(dir), 'no reference target');
  t.same(
    publicKeyStartupProblems('McpEndpoint', [], (ref) => readSecret(ref, {}), now),
    [],
  );
});
