/**
 * The client-certificate check of `/mcp`, against real certificates made by
 * openssl at test time (test/harness/test-ca.ts) and anchor files on disk;
 * then once through a real TLS server and client, to prove the socket
 * plumbing on a keep-alive connection and a resumed session.
 */
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { Agent, createServer, request } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import t from 'tap';
import {
  type CertificateVerdict,
  type ClientCertificateProfiles,
  createClientCertificateCheck,
  logCertificateRefusal,
  peerCertificateOf,
  REFUSAL_REASONS,
} from '../../../http/tls/client-certificates.ts';
import { Codes } from '../../../runtime/errors.ts';
import { createLogger } from '../../../runtime/log.ts';
import { createCa, type Issued, issue } from '../../harness/test-ca.ts';

const dir = mkdtempSync(join(tmpdir(), 'client-certificates-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

const BATCH = 'batch.example.test';
const clientCa = createCa(dir, 'Client CA');
const otherCa = createCa(dir, 'Other CA');
const intermediate = createCa(dir, 'Intermediate', { parent: clientCa });
const leaf = (ca: typeof clientCa, name: string, options: Omit<Parameters<typeof issue>[1], 'name'> = {}): Issued =>
  issue(ca, { name, dns: [BATCH], eku: ['clientAuth'], ...options });

const good = leaf(clientCa, 'good');
const wrongName = leaf(clientCa, 'wrongname', { dns: ['other.example.test'] });
const noEku = leaf(clientCa, 'noeku', { eku: [] });
const serverOnly = leaf(clientCa, 'serveronly', { eku: ['serverAuth'] });
const expired = leaf(clientCa, 'expired', { validFromDays: -30, validToDays: -1 });
const notYetValid = leaf(clientCa, 'notyetvalid', { validFromDays: 1, validToDays: 30 });
const foreign = leaf(otherCa, 'foreign');
const viaIntermediate = leaf(intermediate, 'viaintermediate');
const commonNameOnly = leaf(clientCa, BATCH, { dns: [] });
const wildcard = leaf(clientCa, 'wildcard', { dns: ['*.example.test'] });

const x509 = (issued: Issued): X509Certificate => new X509Certificate(issued.cert);
const thumbprint = (issued: Issued): string => x509(issued).fingerprint256.replaceAll(':', '');

let files = 0;
/** A fresh anchor file holding `pem`. */
function anchorFile(...pems: string[]): string {
  files += 1;
  const path = join(dir, `anchor-${files}.pem`);
  writeFileSync(path, pems.join(''));
  return path;
}

type Profile = ClientCertificateProfiles[number];
function profile(name: string, anchorPaths: readonly string[], options: { names?: string[]; requirement?: Profile['Requirement'] } = {}): Profile {
  return {
    Name: name,
    Requirement: options.requirement ?? 'Required',
    TrustAnchors: anchorPaths.map((path, i) => ({ Name: `${name} authority ${i}`, SecretReference: `file:${path}` })),
    SubjectAlternativeNames: options.names ?? [BATCH],
  };
}

function capturedLog() {
  const raw: string[] = [];
  const log = createLogger({ level: 'debug', format: 'Json', destination: { write: (line: string) => raw.push(line) } });
  const lines = (): Record<string, unknown>[] => raw.map((line) => JSON.parse(line) as Record<string, unknown>);
  return { log, raw, lines };
}

const refused = (issued: Issued, reason: string): CertificateVerdict => ({ kind: 'refused', thumbprint: thumbprint(issued), reason });

t.test('a certificate with an expected name, client authentication, in its period and issued by an anchor names its profile', async (t) => {
  const check = createClientCertificateCheck([profile('batch', [anchorFile(clientCa.cert)])], { log: capturedLog().log });
  t.same(await check({ certificate: x509(good) }), { kind: 'identified', profile: 'batch' });
});

t.test('each rule refuses on its own, with the thumbprint and a fixed reason', async (t) => {
  const { log, lines } = capturedLog();
  const check = createClientCertificateCheck([profile('batch', [anchorFile(clientCa.cert)])], { log });
  const cases: [string, Issued, string][] = [
    ['a name the profile does not expect', wrongName, REFUSAL_REASONS.noExpectedName],
    ['no extended key usage at all', noEku, REFUSAL_REASONS.noClientAuthentication],
    ['server authentication only', serverOnly, REFUSAL_REASONS.noClientAuthentication],
    ['expired', expired, REFUSAL_REASONS.expired],
    ['not valid yet', notYetValid, REFUSAL_REASONS.notYetValid],
    ['issued by another authority', foreign, REFUSAL_REASONS.notIssuedByAnchor],
    ['issued by an intermediate that is not an anchor', viaIntermediate, REFUSAL_REASONS.notIssuedByAnchor],
    ['the expected name as common name, no subject alternative name', commonNameOnly, REFUSAL_REASONS.noExpectedName],
    ['a wildcard name covering the expected one', wildcard, REFUSAL_REASONS.noExpectedName],
  ];
  for (const [what, issued, reason] of cases) t.same(await check({ certificate: x509(issued) }), refused(issued, reason), what);
  t.same(lines(), [], 'judging logs nothing (the listener logs the refusal)');
});

t.test('the validity period is judged at the time of the request, bounds included', async (t) => {
  let at = Date.now();
  const check = createClientCertificateCheck([profile('batch', [anchorFile(clientCa.cert)])], { log: capturedLog().log, now: () => at });
  const validTo = Date.parse(x509(good).validTo);
  at = validTo;
  t.same(await check({ certificate: x509(good) }), { kind: 'identified', profile: 'batch' }, 'the last second of the period');
  at = validTo + 1000;
  t.same(await check({ certificate: x509(good) }), refused(good, REFUSAL_REASONS.expired), 'the second after');
});

t.test('an intermediate authority counts only when listed as an anchor itself', async (t) => {
  const log = capturedLog().log;
  const listed = createClientCertificateCheck([profile('batch', [anchorFile(intermediate.cert)])], { log });
  t.same(await listed({ certificate: x509(viaIntermediate) }), { kind: 'identified', profile: 'batch' }, 'listed alone');
  t.same(await listed({ certificate: x509(good) }), refused(good, REFUSAL_REASONS.notIssuedByAnchor), 'the root it chains to is not an anchor then');
  const bothInOneFile = createClientCertificateCheck([profile('batch', [anchorFile(clientCa.cert, intermediate.cert)])], { log });
  t.same(await bothInOneFile({ certificate: x509(viaIntermediate) }), { kind: 'identified', profile: 'batch' }, 'one file of several certificates');
  t.same(await bothInOneFile({ certificate: x509(good) }), { kind: 'identified', profile: 'batch' });
});

t.test('profiles are tried in configuration order; the first acceptance wins', async (t) => {
  const log = capturedLog().log;
  const clientAnchor = anchorFile(clientCa.cert);
  const otherAnchor = anchorFile(otherCa.cert);
  const both = createClientCertificateCheck([profile('first', [clientAnchor]), profile('second', [clientAnchor])], { log });
  t.same(await both({ certificate: x509(good) }), { kind: 'identified', profile: 'first' });
  const split = createClientCertificateCheck([profile('other', [otherAnchor]), profile('client', [clientAnchor])], { log });
  t.same(await split({ certificate: x509(good) }), { kind: 'identified', profile: 'client' }, 'a later profile accepts what an earlier one refuses');
  t.same(await split({ certificate: x509(foreign) }), { kind: 'identified', profile: 'other' });
  const byName = createClientCertificateCheck([profile('reports', [clientAnchor], { names: ['reports.example.test'] }), profile('batch', [clientAnchor])], {
    log,
  });
  t.same(await byName({ certificate: x509(good) }), { kind: 'identified', profile: 'batch' }, 'the names tell the profiles of one authority apart');
  t.same(await byName({ certificate: x509(wrongName) }), refused(wrongName, REFUSAL_REASONS.noExpectedName));
});

t.test('no certificate: refused when a profile is Required, unidentified when all are Optional', async (t) => {
  const log = capturedLog().log;
  const anchor = anchorFile(clientCa.cert);
  const required = createClientCertificateCheck([profile('batch', [anchor])], { log });
  t.same(await required({ certificate: null }), { kind: 'refused', thumbprint: null, reason: REFUSAL_REASONS.noCertificate });
  const optional = createClientCertificateCheck([profile('batch', [anchor], { requirement: 'Optional' })], { log });
  t.same(await optional({ certificate: null }), { kind: 'unidentified' });
  t.same(await optional({ certificate: x509(good) }), { kind: 'identified', profile: 'batch' }, 'an Optional profile still identifies');
  t.same(
    await optional({ certificate: x509(foreign) }),
    refused(foreign, REFUSAL_REASONS.notIssuedByAnchor),
    'a presented certificate no profile accepts is refused',
  );
  const mixed = createClientCertificateCheck(
    [profile('optional', [anchor], { requirement: 'Optional' }), profile('required', [anchor], { names: ['reports.example.test'] })],
    { log },
  );
  t.same(await mixed({ certificate: null }), { kind: 'refused', thumbprint: null, reason: REFUSAL_REASONS.noCertificate }, 'one Required profile requires');
  const none = createClientCertificateCheck([], { log });
  t.same(await none({ certificate: null }), { kind: 'unidentified' }, 'no profile');
  t.same(await none({ certificate: x509(good) }), { kind: 'unidentified' }, 'no profile, a certificate');
});

t.test('anchor material replaced in place takes effect on the next call', async (t) => {
  const { log, lines } = capturedLog();
  const path = anchorFile(clientCa.cert);
  const check = createClientCertificateCheck([profile('batch', [path])], { log });
  t.same(await check({ certificate: x509(good) }), { kind: 'identified', profile: 'batch' });
  writeFileSync(path, otherCa.cert);
  t.same(await check({ certificate: x509(good) }), refused(good, REFUSAL_REASONS.notIssuedByAnchor), 'the old authority is gone');
  t.same(await check({ certificate: x509(foreign) }), { kind: 'identified', profile: 'batch' }, 'the new one is in');
  writeFileSync(path, clientCa.cert + otherCa.cert);
  t.same(await check({ certificate: x509(good) }), { kind: 'identified', profile: 'batch' }, 'overlap: both');
  t.same(await check({ certificate: x509(foreign) }), { kind: 'identified', profile: 'batch' });
  writeFileSync(path, otherCa.cert);
  t.same(await check({ certificate: x509(good) }), refused(good, REFUSAL_REASONS.notIssuedByAnchor), 'withdrawn from the file');
  t.same(lines(), []);
});

t.test('an anchor that does not load is logged at error by setting and name, and skipped', async (t) => {
  const { log, lines, raw } = capturedLog();
  const missing = join(dir, 'missing-anchor.pem');
  const check = createClientCertificateCheck([profile('batch', [missing, anchorFile(clientCa.cert)])], { log });
  t.same(await check({ certificate: x509(good) }), { kind: 'identified', profile: 'batch' }, 'the other anchor still accepts');
  t.same(await check({ certificate: x509(good) }), { kind: 'identified', profile: 'batch' });
  t.match(lines(), [
    {
      level: 50,
      event: 'mcp.certificate-anchor-failed',
      setting: 'McpEndpoint:ClientCertificateProfiles:0:TrustAnchors:0',
      anchor: 'batch authority 0',
      profile: 'batch',
      cause: 'its secret reference could not be read',
      err: { code: 'E_CONFIG_SECRET_UNREADABLE' },
    },
  ]);
  t.equal(lines().length, 1, 'logged once while the cause stays the same');
  t.notMatch(raw.join(''), 'missing-anchor', 'the path is not logged');
  writeFileSync(missing, clientCa.cert);
  t.same(await check({ certificate: x509(good) }), { kind: 'identified', profile: 'batch' });
  t.match(lines()[1], { level: 30, event: 'mcp.certificate-anchor-loaded', setting: 'McpEndpoint:ClientCertificateProfiles:0:TrustAnchors:0' }, 'loads again');
  writeFileSync(missing, 'not a certificate');
  await check({ certificate: x509(good) });
  t.match(lines()[2], { level: 50, event: 'mcp.certificate-anchor-failed', cause: 'it holds no PEM certificate' });
  writeFileSync(missing, good.cert);
  await check({ certificate: x509(good) });
  t.match(lines()[3], { level: 50, event: 'mcp.certificate-anchor-failed', cause: 'it holds a certificate that is not a certificate authority' });
  writeFileSync(missing, clientCa.cert + clientCa.key);
  await check({ certificate: x509(good) });
  t.match(lines()[4], { level: 50, event: 'mcp.certificate-anchor-failed', cause: 'it holds a PEM block that is not a certificate' });
  unlinkSync(missing);
});

t.test('a profile none of whose anchors loads refuses every certificate', async (t) => {
  const { log, lines } = capturedLog();
  const check = createClientCertificateCheck([profile('batch', [join(dir, 'gone-1.pem'), anchorFile('garbage')])], { log });
  t.same(await check({ certificate: x509(good) }), refused(good, REFUSAL_REASONS.noAnchorLoads));
  t.same(
    lines().map((line) => [line.level, line.setting]),
    [
      [50, 'McpEndpoint:ClientCertificateProfiles:0:TrustAnchors:0'],
      [50, 'McpEndpoint:ClientCertificateProfiles:0:TrustAnchors:1'],
    ],
  );
});

t.test('a refusal is logged as one warning carrying the reason and the thumbprint, nothing else of the certificate', async (t) => {
  const { log, lines, raw } = capturedLog();
  const check = createClientCertificateCheck([profile('batch', [anchorFile(clientCa.cert)])], { log });
  for (const issued of [wrongName, noEku, expired, foreign, commonNameOnly, wildcard]) {
    const verdict = await check({ certificate: x509(issued) });
    if (verdict.kind === 'refused') logCertificateRefusal(log, verdict);
  }
  const none = await createClientCertificateCheck([profile('batch', [anchorFile(clientCa.cert)])], { log })({ certificate: null });
  if (none.kind === 'refused') logCertificateRefusal(log, none);
  t.equal(lines().length, 7);
  for (const line of lines()) {
    const { level, time, pid, hostname, msg, ...fields } = line;
    t.equal(level, 40);
    t.equal(msg, 'mcp.certificate-refused');
    t.same(Object.keys(fields).sort(), fields.thumbprint === undefined ? ['event', 'reason'] : ['event', 'reason', 'thumbprint']);
  }
  t.equal(lines()[0]!.thumbprint, thumbprint(wrongName));
  t.match(lines()[0]!.thumbprint, /^[0-9A-F]{64}$/);
  const text = raw.join('');
  for (const leak of ['example.test', 'BEGIN', 'CN=', 'wrongname', 'Client CA', 'anchor-']) t.notMatch(text, leak, `no ${leak} in the log`);
});

t.test('over a real TLS connection: judged per request, on a kept-alive connection and on a resumed session', async (t) => {
  const { log, lines } = capturedLog();
  const serverCa = createCa(dir, 'Server CA');
  const serverLeaf = issue(serverCa, { name: 'server', dns: ['localhost'], ips: ['127.0.0.1'], eku: ['serverAuth'] });
  const anchor = anchorFile(clientCa.cert);
  const check = createClientCertificateCheck([profile('batch', [anchor])], { log });
  let handshakes = 0;
  const server = createServer({ cert: serverLeaf.cert, key: serverLeaf.key, requestCert: true, rejectUnauthorized: false }, async (req, res) => {
    const socket = req.socket as TLSSocket;
    const verdict = await check({ certificate: peerCertificateOf(socket) });
    if (verdict.kind === 'refused') logCertificateRefusal(log, verdict);
    res.writeHead(verdict.kind === 'refused' ? Codes.E_HTTP_CERTIFICATE_REFUSED.status : 200, { 'x-resumed': String(socket.isSessionReused()) });
    res.end(verdict.kind === 'identified' ? verdict.profile : '');
  });
  server.on('secureConnection', () => {
    handshakes += 1;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  const port = (server.address() as AddressInfo).port;

  type Answer = { status: number; body: string; resumed: boolean; clientPort: number };
  const get = (agent: Agent): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: '/mcp', agent, timeout: 5000 }, (res) => {
        let body = '';
        const clientPort = res.socket.localPort!;
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode!, body, resumed: res.headers['x-resumed'] === 'true', clientPort }));
      });
      req.on('timeout', () => req.destroy(new Error('no answer in time')));
      req.on('error', reject);
      req.end();
    });

  const withCertificate = new Agent({ keepAlive: true, maxSockets: 1, ca: serverCa.cert, cert: good.cert, key: good.key });
  t.teardown(() => withCertificate.destroy());
  const first = await get(withCertificate);
  t.match(first, { status: 200, body: 'batch', resumed: false });
  writeFileSync(anchor, otherCa.cert);
  const second = await get(withCertificate);
  t.match(second, { status: 403, body: '' }, 'the replaced anchor refuses on the same connection');
  t.equal(second.clientPort, first.clientPort, 'same connection');
  writeFileSync(anchor, clientCa.cert);
  t.match(await get(withCertificate), { status: 200, body: 'batch', clientPort: first.clientPort }, 'and restoring it admits again, same connection');
  t.equal(handshakes, 1, 'one handshake for three requests');

  // A new connection from the same agent resumes the TLS session: the certificate is still presented and judged.
  for (const socket of Object.values(withCertificate.freeSockets).flat()) socket?.destroy();
  await new Promise((resolve) => setTimeout(resolve, 50));
  writeFileSync(anchor, otherCa.cert);
  const resumed = await get(withCertificate);
  t.match(resumed, { status: 403, resumed: true }, 'a resumed session is judged too');
  t.not(resumed.clientPort, first.clientPort);
  t.equal(handshakes, 2);

  const withoutCertificate = new Agent({ keepAlive: false, ca: serverCa.cert });
  t.match(await get(withoutCertificate), { status: 403 }, 'no certificate under a Required profile');

  t.same(
    lines().map((line) => [line.event, line.reason, typeof line.thumbprint]),
    [
      ['mcp.certificate-refused', REFUSAL_REASONS.notIssuedByAnchor, 'string'],
      ['mcp.certificate-refused', REFUSAL_REASONS.notIssuedByAnchor, 'string'],
      ['mcp.certificate-refused', REFUSAL_REASONS.noCertificate, 'undefined'],
    ],
    'the resumed session presented its certificate (not judged as none)',
  );
});
