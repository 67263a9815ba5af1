/**
 * Server certificates of HTTPS profiles (agent-surface rule 13), read and
 * checked at startup: real certificates from a test authority made with
 * openssl, PEM chains and PKCS#12 bundles behind file: and env: references,
 * each refusal of the rule, all profiles reported together, the expiry log
 * lines, and that no material, password, subject or reference target reaches
 * a problem or a log line.
 */
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import t from 'tap';
import { validateConfig } from '../../../config/load.ts';
import { formatProblem } from '../../../config/problem.ts';
import type { Config } from '../../../config/schema.ts';
import { logCertificateExpiry, readServerCertificates, serverCertificateProblems } from '../../../http/tls/server-certificates.ts';
import { createLogger } from '../../../runtime/log.ts';
import { chainOf, createCa, type Issued, issue, pkcs12 } from '../../harness/test-ca.ts';

const dir = mkdtempSync(join(tmpdir(), 'mailcairn-certs-'));
const now = Date.now();
const DAY = 86_400_000;

// Subjects (CNs) are distinctive so that the privacy assertions can look for them.
const root = createCa(dir, 'cn-root-authority');
const intermediate = createCa(dir, 'cn-intermediate-authority', { parent: root });
const otherRoot = createCa(dir, 'cn-unrelated-authority');
const expiredIntermediate = createCa(dir, 'cn-expired-intermediate', { parent: root, validFromDays: -60, validToDays: -1 });

const serverLeaf = (name: string, options: Partial<Parameters<typeof issue>[1]> = {}, ca = intermediate): Issued =>
  issue(ca, { name, dns: ['mail.example.test'], eku: ['serverAuth'], keyUsage: ['digitalSignature'], ...options });

const good = serverLeaf('cn-subject-good');
const rsa = serverLeaf('cn-subject-rsa', { keyType: 'rsa', keyUsage: ['digitalSignature', 'keyEncipherment'] });
const BUNDLE_PASSWORD = 'pw-correct-horse-battery';

let fileCount = 0;
function fileRef(content: string | Buffer): string {
  const path = join(dir, `material-${++fileCount}`);
  writeFileSync(path, content);
  return `file:${path}`;
}

type Ref = { chain: string; key: string } | { bundle: string; password?: string };

function profile(name: string, domain: string, ref: Ref, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const ServerCertificate =
    'chain' in ref
      ? { CertificateChain: { Name: `${name}-chain`, SecretReference: ref.chain }, PrivateKey: { Name: `${name}-key`, SecretReference: ref.key } }
      : {
          Bundle: {
            Name: `${name}-bundle`,
            SecretReference: ref.bundle,
            ...(ref.password === undefined ? {} : { Password: { Name: `${name}-password`, SecretReference: ref.password } }),
          },
        };
  return { Name: name, Domain: domain, ServerCertificate, ...extra };
}

const pem = (chain: string, key: string): Ref => ({ chain: fileRef(chain), key: fileRef(key) });

function config(raw: Record<string, unknown>): Config {
  const result = validateConfig(raw);
  if (!result.ok) throw new Error(result.problems.map(formatProblem).join('\n'));
  return result.config;
}

const mcp = (...profiles: Record<string, unknown>[]): Config =>
  config({ McpEndpoint: { Enabled: true, Transport: 'HttpsOnly', Https: { Endpoints: profiles } } });

/** Problem lines of a one-profile MCP configuration for `domain` (default mail.example.test). */
function refusal(ref: Ref, domain = 'mail.example.test', env: NodeJS.ProcessEnv = {}): string[] {
  return serverCertificateProblems(mcp(profile('mail', domain, ref)), env, now).map(formatProblem);
}

const AT = 'McpEndpoint:Https:Endpoints:0:ServerCertificate';
const fingerprints = (chain: string): string[] =>
  (chain.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? []).map((block) => new X509Certificate(block).fingerprint256);
const fingerprintOf = (issued: { cert: string }): string => new X509Certificate(issued.cert).fingerprint256;

/** Every line a test produced, for the privacy assertions at the end. */
const seen: string[] = [];
function remember(lines: string[]): string[] {
  seen.push(...lines);
  return lines;
}

/** A TLS handshake on loopback against the certificate as read: what a client trusting `root` sees. */
async function handshake(
  key: string,
  chain: string,
  servername: string,
  minVersion: tls.SecureVersion,
): Promise<{ authorized: boolean; protocol: string | null }> {
  const server = tls.createServer({ key, cert: chain, minVersion }, (socket) => socket.end());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  try {
    return await new Promise((resolve, reject) => {
      const socket = tls.connect({ host: '127.0.0.1', port, servername, ca: root.cert, rejectUnauthorized: false, timeout: 5000 }, () => {
        resolve({ authorized: socket.authorized, protocol: socket.getProtocol() });
        socket.destroy();
      });
      socket.on('error', reject);
      socket.on('timeout', () => reject(new Error('handshake timed out')));
    });
  } finally {
    server.close();
  }
}

t.test('a PEM chain given out of order is read, its order rebuilt from issuers, and serves a TLS handshake', async (t) => {
  // Root first, then the intermediate, the leaf last: the served chain is leaf, intermediate, root.
  const ref = pem(root.cert + intermediate.cert + good.cert, good.key);
  const { certificates, problems } = readServerCertificates(mcp(profile('mail', 'mail.example.test', ref, { MinimumTlsVersion: 'Tls13' })), {}, now);
  t.same(problems, []);
  t.equal(certificates.length, 1);
  const [certificate] = certificates;
  t.same(fingerprints(certificate!.chain), [fingerprintOf(good), fingerprintOf(intermediate), fingerprintOf(root)]);
  t.match(certificate, {
    section: 'McpEndpoint:Https:Endpoints:0',
    surface: 'McpEndpoint',
    index: 0,
    name: 'mail',
    domain: 'mail.example.test',
    minVersion: 'TLSv1.3',
  });
  t.equal(certificate!.notAfter.getTime(), new Date(new X509Certificate(good.cert).validTo).getTime());
  const seenByClient = await handshake(certificate!.key, certificate!.chain, 'mail.example.test', certificate!.minVersion);
  t.same(seenByClient, { authorized: true, protocol: 'TLSv1.3' });
});

t.test('an RSA leaf with keyEncipherment beside digitalSignature is accepted (TLS 1.2 floor by default)', (t) => {
  const { certificates, problems } = readServerCertificates(mcp(profile('mail', 'mail.example.test', pem(chainOf(rsa, intermediate), rsa.key))), {}, now);
  t.same(problems, []);
  t.equal(certificates[0]?.minVersion, 'TLSv1.2');
  t.end();
});

t.test('PKCS#12 bundles, with a password and without, as DER in a file or base64 in a variable', async (t) => {
  const withPassword = readFileSync(pkcs12(join(dir, 'good-pw.p12'), good, intermediate.cert, BUNDLE_PASSWORD));
  const withoutPassword = readFileSync(pkcs12(join(dir, 'good-nopw.p12'), good, intermediate.cert, ''));
  const cases: [string, Ref, NodeJS.ProcessEnv][] = [
    ['DER file with a password', { bundle: fileRef(withPassword), password: fileRef(`${BUNDLE_PASSWORD}\n`) }, {}],
    ['DER file without a password', { bundle: fileRef(withoutPassword) }, {}],
    [
      'base64 in a variable',
      { bundle: 'env:TLS_BUNDLE', password: 'env:TLS_BUNDLE_PASSWORD' },
      { TLS_BUNDLE: withPassword.toString('base64'), TLS_BUNDLE_PASSWORD: BUNDLE_PASSWORD },
    ],
  ];
  for (const [label, ref, env] of cases) {
    const { certificates, problems } = readServerCertificates(mcp(profile('mail', 'mail.example.test', ref)), env, now);
    t.same(problems, [], label);
    t.same(fingerprints(certificates[0]?.chain ?? ''), [fingerprintOf(good), fingerprintOf(intermediate)], label);
  }
  const { certificates } = readServerCertificates(mcp(profile('mail', 'mail.example.test', cases[0]![1])), {}, now);
  t.same(await handshake(certificates[0]!.key, certificates[0]!.chain, 'mail.example.test', 'TLSv1.2'), { authorized: true, protocol: 'TLSv1.3' });
});

t.test('rule 13 refusals, each naming the setting and the rule', (t) => {
  const other = serverLeaf('cn-subject-other');
  const expired = serverLeaf('cn-subject-expired', { validFromDays: -60, validToDays: -1 });
  const future = serverLeaf('cn-subject-future', { validFromDays: 2, validToDays: 60 });
  const wrongName = serverLeaf('cn-subject-wrong-name', { dns: ['other.example.test'] });
  const clientOnly = serverLeaf('cn-subject-client-only', { eku: ['clientAuth'] });
  const noEku = serverLeaf('cn-subject-no-eku', { eku: [] });
  const noSignature = serverLeaf('cn-subject-no-signature', { keyUsage: ['keyEncipherment'] });
  const underExpired = serverLeaf('cn-subject-under-expired', {}, expiredIntermediate);
  const cases: [string, Ref, RegExp][] = [
    [
      'the key of another leaf',
      pem(chainOf(good, intermediate), other.key),
      /^McpEndpoint:Https:Endpoints:0:ServerCertificate:PrivateKey: .*public keys differ \(rule: the leaf has a private key/,
    ],
    [
      'an expired leaf',
      pem(chainOf(expired, intermediate), expired.key),
      /^[^ ]*:CertificateChain: the leaf certificate is not valid now: it expired on \d{4}-\d\d-\d\d \(rule: the certificate is valid now\)$/,
    ],
    [
      'a leaf not yet valid',
      pem(chainOf(future, intermediate), future.key),
      /:CertificateChain: the leaf certificate is not valid now: it is not valid before \d{4}-/,
    ],
    [
      'a name that does not cover Domain',
      pem(chainOf(wrongName, intermediate), wrongName.key),
      /:CertificateChain: no subject alternative name of the leaf certificate covers Domain \(rule/,
    ],
    [
      'extended key usage without serverAuth',
      pem(chainOf(clientOnly, intermediate), clientOnly.key),
      /extended key usage does not name server authentication \(rule: extended key usage permits/,
    ],
    ['no extended key usage at all', pem(chainOf(noEku, intermediate), noEku.key), /has no extended key usage; it must name server authentication/],
    [
      'key usage without digitalSignature',
      pem(chainOf(noSignature, intermediate), noSignature.key),
      /key usage does not permit digitalSignature \(rule: key usage, where present/,
    ],
    [
      'two leaves',
      pem(good.cert + other.cert + intermediate.cert, good.key),
      /:CertificateChain: states 2 leaves: certificates 1, 2 as given are not certificate authorities \(rule: the chain states one leaf/,
    ],
    [
      'a non-authority after the leaf',
      pem(good.cert + intermediate.cert + clientOnly.cert, good.key),
      /states 2 leaves: certificates 1, 3 as given are not certificate authorities/,
    ],
    [
      'an expired intermediate',
      pem(chainOf(underExpired, expiredIntermediate), underExpired.key),
      /certificate 2 as given \(an authority\) is not valid now: it expired on .* \(rule: every other certificate is a certificate authority, valid now/,
    ],
    [
      'an authority that issues nothing supplied',
      pem(good.cert + intermediate.cert + otherRoot.cert, good.key),
      /certificate 3 as given \(an authority\) issues neither the leaf nor another supplied certificate/,
    ],
  ];
  for (const [label, ref, expected] of cases) {
    const lines = remember(refusal(ref));
    t.equal(lines.length, 1, `${label}: one problem (${lines.join(' | ')})`);
    t.match(lines[0], expected, label);
  }
  // With no leaf, the intermediate issues nothing supplied either: both are said.
  t.match(remember(refusal(pem(intermediate.cert + root.cert, good.key))), [
    /:CertificateChain: states no leaf: every certificate is a certificate authority/,
    /:CertificateChain: certificate 1 as given \(an authority\) issues neither the leaf nor another supplied certificate/,
  ]);
  t.end();
});

t.test('a wildcard name covers exactly one left-most label, compared without case', (t) => {
  const wildcard = serverLeaf('cn-subject-wildcard', { dns: ['*.Example.Test'] });
  const ref = pem(chainOf(wildcard, intermediate), wildcard.key);
  t.same(refusal(ref, 'a.example.test'), []);
  t.same(refusal(ref, 'mail.example.test'), []);
  for (const domain of ['example.test', 'a.b.example.test', 'a.example.org']) {
    t.match(remember(refusal(ref, domain)), [/no subject alternative name of the leaf certificate covers Domain/], domain);
  }
  const upper = serverLeaf('cn-subject-upper', { dns: ['MAIL.Example.TEST'] });
  t.same(refusal(pem(chainOf(upper, intermediate), upper.key)), []);
  t.end();
});

t.test('unreadable references and unparsable material are refused by setting, never quoting what they point at', (t) => {
  t.match(remember(refusal({ chain: 'file:/nonexistent/tls/chain.pem', key: 'env:TLS_KEY_UNSET' })), [
    new RegExp(
      `^${AT}:CertificateChain:SecretReference: could not be read at startup: a secret reference \\(file:\\) could not be read: nothing exists there \\(rule: the reference resolves and parses\\)$`,
    ),
    new RegExp(
      `^${AT}:PrivateKey:SecretReference: could not be read at startup: a secret reference \\(env:\\) could not be read: the environment variable is not set`,
    ),
  ]);
  t.match(remember(refusal(pem('just some words\n', 'not a key either\n'))), [
    `${AT}:CertificateChain: holds no PEM certificate (rule: the reference resolves and parses)`,
    `${AT}:PrivateKey: is not a readable unencrypted PEM private key; the reference, not a passphrase, protects it (rule: the reference resolves and parses)`,
  ]);
  const damaged = good.cert.replace(/\n[A-Za-z0-9+/]{20}/, '\nAAAAAAAAAAAAAAAAAAAA');
  t.match(remember(refusal(pem(damaged + intermediate.cert, good.key))), [
    `${AT}:CertificateChain: certificate 1 as given cannot be parsed (rule: the reference resolves and parses)`,
  ]);
  t.match(remember(refusal({ bundle: fileRef('%%% not a bundle %%%') })), [
    `${AT}:Bundle: is neither a PKCS#12 bundle nor base64 of one (rule: the reference resolves and parses)`,
  ]);
  t.match(remember(refusal({ bundle: fileRef(Buffer.from([0x30, 0x03, 0x02, 0x01, 0x03])) })), [
    `${AT}:Bundle: is not a PKCS#12 bundle that can be read (rule: the reference resolves and parses)`,
  ]);
  t.match(remember(refusal({ bundle: 'env:TLS_BUNDLE' }, 'mail.example.test', { TLS_BUNDLE: good.cert })), [/^[^ ]*:Bundle: is neither a PKCS#12 bundle/]);
  t.end();
});

t.test('a bundle that its password does not open is refused without naming the password', (t) => {
  const bundle = fileRef(readFileSync(pkcs12(join(dir, 'pw.p12'), good, intermediate.cert, BUNDLE_PASSWORD)));
  t.same(remember(refusal({ bundle, password: 'env:TLS_PASSWORD' }, 'mail.example.test', { TLS_PASSWORD: 'pw-wrong-guess' })), [
    `${AT}:Bundle: the bundle could not be opened with its password (rule: the reference resolves and parses)`,
  ]);
  t.same(remember(refusal({ bundle })), [
    `${AT}:Bundle: the bundle could not be opened without a password; write Bundle:Password (rule: the reference resolves and parses)`,
  ]);
  t.same(remember(refusal({ bundle, password: 'env:TLS_PASSWORD' })), [
    `${AT}:Bundle:Password:SecretReference: could not be read at startup: a secret reference (env:) could not be read: the environment variable is not set (rule: the reference resolves and parses)`,
  ]);
  t.end();
});

t.test('a bundle is checked by the same rules as a chain: here its leaf has expired', (t) => {
  const expired = serverLeaf('cn-subject-bundle-expired', { validFromDays: -60, validToDays: -1 });
  const bundle = fileRef(readFileSync(pkcs12(join(dir, 'expired.p12'), expired, intermediate.cert, '')));
  t.match(remember(refusal({ bundle })), [/^McpEndpoint:Https:Endpoints:0:ServerCertificate:Bundle: the leaf certificate is not valid now: it expired on/]);
  t.end();
});

t.test('problems of every profile of every served endpoint come together, and then no certificate is served', (t) => {
  const expired = serverLeaf('cn-subject-expired-2', { dns: ['admin.example.test'], validFromDays: -60, validToDays: -1 });
  const cfg = config({
    McpEndpoint: {
      Enabled: true,
      Transport: 'HttpsOnly',
      Https: {
        Endpoints: [
          profile('good', 'mail.example.test', pem(chainOf(good, intermediate), good.key)),
          profile('misnamed', 'other.example.test', pem(chainOf(good, intermediate), good.key)),
        ],
      },
    },
    AdminEndpoint: {
      Enabled: true,
      Https: { Endpoints: [profile('admin', 'admin.example.test', pem(chainOf(expired, intermediate), expired.key), { Port: 9443 })] },
    },
  });
  const { certificates, problems } = readServerCertificates(cfg, {}, now);
  t.same(certificates, []);
  t.match(remember(problems.map(formatProblem)), [
    /^McpEndpoint:Https:Endpoints:1:ServerCertificate:CertificateChain: no subject alternative name/,
    /^AdminEndpoint:Https:Endpoints:0:ServerCertificate:CertificateChain: the leaf certificate is not valid now/,
  ]);
  t.end();
});

t.test('only profiles a served listener uses are read', (t) => {
  const broken = { chain: 'env:UNSET_CHAIN', key: 'env:UNSET_KEY' };
  const cfg = config({
    McpEndpoint: { Enabled: false, Transport: 'HttpsOnly', Https: { Endpoints: [profile('mcp', 'mcp.example.test', broken)] } },
    AdminEndpoint: { Enabled: false, Https: { Endpoints: [profile('admin', 'admin.example.test', broken)] } },
    HealthEndpoints: { Enabled: false, Transport: 'HttpsOnly', Https: { Endpoints: [profile('health', 'health.example.test', broken)] } },
  });
  t.same(readServerCertificates(cfg, {}, now), { certificates: [], problems: [] });
  const health = config({
    HealthEndpoints: { Enabled: true, Transport: 'HttpsOnly', Https: { Endpoints: [profile('health', 'health.example.test', broken)] } },
  });
  t.match(
    serverCertificateProblems(health, {}, now).map((p) => p.setting),
    [
      'HealthEndpoints:Https:Endpoints:0:ServerCertificate:CertificateChain:SecretReference',
      'HealthEndpoints:Https:Endpoints:0:ServerCertificate:PrivateKey:SecretReference',
    ],
  );
  t.end();
});

t.test('a private key, a bundle or its password written inline is refused by the configuration schema, unquoted', (t) => {
  const inline = [
    profile('mail', 'mail.example.test', { chain: fileRef(good.cert), key: good.key }),
    profile('bundle', 'bundle.example.test', { bundle: 'MIIKYgIBAzCCChgGCSqGSIb3DQEHAaCCCgkEggoF', password: BUNDLE_PASSWORD }),
  ];
  const result = validateConfig({ McpEndpoint: { Enabled: true, Transport: 'HttpsOnly', Https: { Endpoints: inline } } });
  t.notOk(result.ok);
  const lines = remember(result.ok ? [] : result.problems.map(formatProblem));
  const secretRefMessage =
    /: must be a secret reference \(file:\/absolute\/path, env:NAME or systemd:NAME\); the material itself is never written in configuration$/;
  for (const setting of [
    'McpEndpoint:Https:Endpoints:0:ServerCertificate:PrivateKey:SecretReference',
    'McpEndpoint:Https:Endpoints:1:ServerCertificate:Bundle:SecretReference',
    'McpEndpoint:Https:Endpoints:1:ServerCertificate:Bundle:Password:SecretReference',
  ]) {
    t.ok(
      lines.some((line) => line.startsWith(`${setting}:`) && secretRefMessage.test(line)),
      setting,
    );
  }
  t.end();
});

t.test('expiry is logged at info, and as a warning within thirty days, with no subject or material', (t) => {
  const soon = serverLeaf('cn-subject-soon', { dns: ['soon.example.test'], validToDays: 10 });
  const cfg = mcp(
    profile('mail', 'mail.example.test', pem(chainOf(good, intermediate), good.key)),
    profile('soon', 'soon.example.test', {
      bundle: fileRef(readFileSync(pkcs12(join(dir, 'soon.p12'), soon, intermediate.cert, BUNDLE_PASSWORD))),
      password: fileRef(BUNDLE_PASSWORD),
    }),
  );
  const { certificates, problems } = readServerCertificates(cfg, {}, now);
  t.same(problems, []);
  const lines: string[] = [];
  const log = createLogger({ level: 'info', format: 'Json', destination: { write: (line: string) => void lines.push(line) } });
  logCertificateExpiry(log, certificates, Date.now());
  remember(lines);
  const entries = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  t.match(entries, [
    { level: 30, msg: 'tls.certificate', event: 'tls.certificate', section: 'McpEndpoint:Https:Endpoints:0', profile: 'mail', daysLeft: 364 },
    { level: 40, msg: 'tls.certificate', event: 'tls.certificate', section: 'McpEndpoint:Https:Endpoints:1', profile: 'soon', daysLeft: 9 },
  ]);
  t.equal(entries[1]?.notAfter, new Date(new X509Certificate(soon.cert).validTo).toISOString());
  t.ok(Math.abs(Date.parse(String(entries[0]?.notAfter)) - (now + 365 * DAY)) < 2 * DAY);
  t.end();
});

t.test('no problem or log line above carried material, a password, a subject, a domain or a reference target', (t) => {
  t.ok(seen.length > 30, `${seen.length} lines were looked at`);
  const text = seen.join('\n');
  const bodyOf = (material: string): string => material.split('\n').find((line) => line.length > 40 && !line.startsWith('-----')) ?? material;
  for (const material of [good.key, good.cert, intermediate.cert, root.key]) t.notOk(text.includes(bodyOf(material)), 'no PEM body');
  for (const forbidden of [
    'BEGIN',
    BUNDLE_PASSWORD,
    'pw-wrong-guess',
    'cn-',
    'CN=',
    dir,
    '/nonexistent',
    'TLS_KEY_UNSET',
    'TLS_PASSWORD',
    'example.test',
    'MIIK',
  ]) {
    t.notOk(text.includes(forbidden), `nothing says ${forbidden}`);
  }
  t.end();
});
