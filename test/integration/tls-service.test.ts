/**
 * The service end to end over real TLS (docs/security.md "TLS in process"):
 * `startService` in-process with certificates from a test authority, real
 * clients (undici over HTTP/2 and HTTP/1.1, node:tls, curl, the official MCP
 * SDK client), loopback only.
 *
 * One service runs the worked example of docs/security.md as written (its
 * paths and ports moved into a temporary directory), beside an administrative
 * endpoint over TLS with its redirect listener and health over HttpsOnly;
 * a second one the `<profile:name>` rate-limit partition without credential
 * entries; a third start is refused for two certificate problems at once.
 * Every log line of every service is captured and searched for material.
 */
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect as netConnect } from 'node:net';
import { join } from 'node:path';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import { promisify } from 'node:util';
import t from 'tap';
import { request } from 'undici';
import { runCheckConfig } from '../../service/check-config.ts';
import { type Service, startService } from '../../service/app.ts';
import { chainOf, createCa, type Issued, issue, pkcs12, type TestCa } from '../harness/test-ca.ts';
import { mcpOver, type TlsClient, tlsClient } from '../harness/tls-client.ts';
import { tempDir, writeConfig } from '../helpers/daemon.ts';
import { captureLog, type LogLine } from '../helpers/log-capture.ts';
import { reservePort } from '../helpers/ports.ts';

t.setTimeout(150_000);

const run = promisify(execFile);

const MCP_KEY = 'mcp-key-7d1e0c9a4b2f86d3e5a1';
const ADMIN_KEY = 'admin-key-3c5b8e2d9f0a71c4b6e2';
const BUNDLE_PASSWORD = 'bundle-pass-91f3c2a7';
const TOOLS_LIST = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

/** Every log line of every service this file starts, for the privacy check at the end. */
const captured: Array<{ raw(): string; lines: LogLine[] }> = [];
/** What must reach no log line: material, secrets, client names and subjects, reference targets. */
const forbidden: Array<{ what: string; text: string }> = [];

/** The middle of a PEM body: any run of its base64 in a log line means material leaked. */
function bodyOf(pem: string): string {
  const body = pem.replace(/-----[A-Z ]+-----/g, '').replace(/\s+/g, '');
  return body.slice(Math.floor(body.length / 2) - 16, Math.floor(body.length / 2) + 16);
}

function forbid(what: string, issued: Issued): void {
  forbidden.push({ what: `${what} certificate`, text: bodyOf(issued.cert) }, { what: `${what} private key`, text: bodyOf(issued.key) });
}

function serverLeaf(ca: TestCa, name: string, domain: string, extra: Partial<Parameters<typeof issue>[1]> = {}): Issued {
  const leaf = issue(ca, { name, dns: [domain], eku: ['serverAuth'], keyUsage: ['digitalSignature'], ...extra });
  forbid(name, leaf);
  return leaf;
}

function clientLeaf(ca: TestCa, name: string, san: string): Issued {
  const leaf = issue(ca, { name, dns: [san], eku: ['clientAuth'], keyUsage: ['digitalSignature'] });
  forbid(name, leaf);
  forbidden.push({ what: `${name} subject`, text: name }, { what: `${name} name`, text: san });
  return leaf;
}

/** A profile on loopback serving `domain` from PEM files. */
function pemProfile(name: string, domain: string, leaf: Issued, port = 0): Record<string, unknown> {
  return {
    Name: name,
    Domain: domain,
    BindAddress: '127.0.0.1',
    Port: port,
    ServerCertificate: {
      CertificateChain: { Name: `${name}-chain`, SecretReference: `file:${leaf.certPath}` },
      PrivateKey: { Name: `${name}-key`, SecretReference: `file:${leaf.keyPath}` },
    },
  };
}

async function start(dir: string, config: Record<string, unknown>): Promise<{ service: Service; log: ReturnType<typeof captureLog> }> {
  const log = captureLog();
  captured.push(log);
  const file = writeConfig(dir, { Storage: { Database: join(dir, 'mailcairn.db') }, ...config });
  const service = await startService({ configFile: file, env: {}, log: log.log, hostLogSink: log.write });
  return { service, log };
}

type Answer = { status: number; headers: Record<string, string | string[] | undefined>; body: string };

async function send(client: TlsClient, url: string, init: { method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: string } = {}): Promise<Answer> {
  const res = await request(url, {
    dispatcher: client.agent,
    method: init.method ?? 'GET',
    headers: init.headers ?? {},
    ...(init.body === undefined ? {} : { body: init.body }),
  });
  return { status: res.statusCode, headers: res.headers, body: await res.body.text() };
}

const toolsList = (client: TlsClient, url: string, apiKey?: string): Promise<Answer> =>
  send(client, url, { method: 'POST', headers: { ...MCP_HEADERS, ...(apiKey === undefined ? {} : { authorization: `Bearer ${apiKey}` }) }, body: TOOLS_LIST });

/** A bare handshake from 127.0.0.1: the server certificate's names and the version, or why it failed. */
function handshake(port: number, options: ConnectionOptions): Promise<{ san?: string; version?: string | null; failed?: string }> {
  return new Promise((resolve) => {
    const socket = tlsConnect({ host: '127.0.0.1', port, ...options }, () => {
      resolve({ san: socket.getPeerX509Certificate()?.subjectAltName, version: socket.getProtocol() });
      socket.end();
    });
    socket.on('error', (err: NodeJS.ErrnoException) => resolve({ failed: err.code ?? err.message }));
    socket.on('close', () => resolve({ failed: 'closed' }));
  });
}

/** curl against a clear-text listener: the status and the Location it was given. */
async function curlRedirect(args: string[]): Promise<{ status: number; location: string | undefined; cacheControl: string | undefined }> {
  const { stdout } = await run('curl', ['-s', '-o', '/dev/null', '-D', '-', '--max-time', '10', ...args]);
  const lines = stdout.split('\r\n');
  const header = (name: string) =>
    lines
      .find((line) => line.toLowerCase().startsWith(`${name}:`))
      ?.slice(name.length + 1)
      .trim();
  return { status: Number(lines[0]?.split(' ')[1]), location: header('location'), cacheControl: header('cache-control') };
}

function refusedPort(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = netConnect({ host: '127.0.0.1', port });
    socket.on('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

/** The worked example's JSON as docs/security.md writes it, paths moved under `dir` and its two ports replaced. */
function workedExample(dir: string, tlsPort: number, clearPort: number): Record<string, unknown> {
  const page = readFileSync(new URL('../../docs/security.md', import.meta.url), 'utf8');
  const block = /<!-- tls-worked-example -->\s*```json\n([\s\S]*?)\n```/.exec(page)?.[1];
  if (block === undefined) throw new Error('docs/security.md has no block after <!-- tls-worked-example -->');
  return JSON.parse(
    block
      .replaceAll('/etc/mailcairn/', `${dir}/`)
      .replace(/\b8443\b/g, String(tlsPort))
      .replace(/\b8080\b/g, String(clearPort)),
  ) as Record<string, unknown>;
}

t.test('the worked example of docs/security.md, with admin and health over TLS beside it', async (t) => {
  const dir = tempDir(t);
  forbidden.push({ what: 'a reference target', text: dir });
  mkdirSync(join(dir, 'tls'));
  mkdirSync(join(dir, 'keys'));
  const serverCa = createCa(dir, 'server-ca');
  const mail = serverLeaf(serverCa, 'mail', 'mail.example.org');
  const agents = serverLeaf(serverCa, 'agents', 'agents.example.org');
  const admin = serverLeaf(serverCa, 'admin', 'admin.example.org');
  const health = serverLeaf(serverCa, 'health', 'health.example.org');
  const clientsCa = createCa(dir, 'clients-ca');
  const otherCa = createCa(dir, 'other-clients-ca');
  const ci = clientLeaf(clientsCa, 'ci-agent-7f3', 'ci.agents.example.org');
  const stranger = clientLeaf(clientsCa, 'stranger-c41', 'stranger.agents.example.org');
  forbidden.push(
    { what: 'the MCP API key', text: MCP_KEY },
    { what: 'the admin API key', text: ADMIN_KEY },
    { what: 'the bundle password', text: BUNDLE_PASSWORD },
    { what: 'clients CA', text: bodyOf(clientsCa.cert) },
  );

  // The files the example names.
  writeFileSync(join(dir, 'keys', 'assistant'), MCP_KEY);
  writeFileSync(join(dir, 'tls', 'mail.example.org.pem'), chainOf(mail, serverCa));
  writeFileSync(join(dir, 'tls', 'mail.example.org.key'), mail.key);
  pkcs12(join(dir, 'tls', 'agents.example.org.p12'), agents, '', BUNDLE_PASSWORD);
  writeFileSync(join(dir, 'tls', 'agents.example.org.pass'), BUNDLE_PASSWORD);
  const anchorFile = join(dir, 'tls', 'clients-ca.pem');
  writeFileSync(anchorFile, clientsCa.cert);
  writeFileSync(join(dir, 'admin.key'), ADMIN_KEY);

  const tlsPort = await reservePort();
  const redirectPort = await reservePort();
  const adminRedirectPort = await reservePort();
  const example = workedExample(dir, tlsPort, redirectPort);
  const { service, log } = await start(dir, {
    ...example,
    AdminEndpoint: {
      Enabled: true,
      Authentication: [{ ApiKey: { Name: 'operator', SecretReference: `file:${join(dir, 'admin.key')}`, Lifetime: 'NoLimit' } }],
      Https: { Endpoints: [pemProfile('admin', 'admin.example.org', admin)], Redirect: { BindAddress: '127.0.0.1', Port: adminRedirectPort } },
    },
    HealthEndpoints: { Transport: 'HttpsOnly', Https: { Endpoints: [pemProfile('health', 'health.example.org', health)] } },
  });
  t.teardown(() => service.stop());
  const mcpAt = (domain: string) => `https://${domain}:${tlsPort}/mcp`;
  const clients: TlsClient[] = [];
  const clientOf = (options: Omit<Parameters<typeof tlsClient>[0], 'ca'>): TlsClient => {
    const client = tlsClient({ ca: serverCa.cert, ...options });
    clients.push(client);
    return client;
  };
  t.teardown(() => Promise.all(clients.map((c) => c.close())));

  t.test('check-config prints the sockets the service opened', async (t) => {
    const out: string[] = [];
    t.equal(runCheckConfig({ file: join(dir, 'mailcairn.json'), env: {}, out: (line) => out.push(line) }), 0, out.join('\n'));
    t.ok(
      out.includes(
        `  McpEndpoint:Https:Endpoints:0 (mail): serving /mcp for mail.example.org on https://0.0.0.0:${tlsPort}, TLS 1.2 or later, Http1 and Http2`,
      ),
    );
    t.ok(out.includes(`  McpEndpoint:Https:Endpoints:1 (agents): serving /mcp for agents.example.org on https://0.0.0.0:${tlsPort}, TLS 1.3, Http1 and Http2`));
    t.ok(out.includes(`  McpEndpoint:Https:Redirect: clear text on 0.0.0.0:${redirectPort} answers 308 to the https address of each domain`));
    t.same(
      service.listeners.map(
        (l) => `${l.surface} ${l.role} ${l.section} ${l.address.address}:${l.role === 'tls' && l.surface !== 'McpEndpoint' ? 'any' : l.address.port}`,
      ),
      [
        'HealthEndpoints tls HealthEndpoints:Https:Endpoints:0 127.0.0.1:any',
        `McpEndpoint tls McpEndpoint:Https:Endpoints:0 0.0.0.0:${tlsPort}`,
        `McpEndpoint redirect McpEndpoint:Https:Redirect 0.0.0.0:${redirectPort}`,
        'AdminEndpoint tls AdminEndpoint:Https:Endpoints:0 127.0.0.1:any',
        `AdminEndpoint redirect AdminEndpoint:Https:Redirect 127.0.0.1:${adminRedirectPort}`,
      ],
      'one socket for the two MCP profiles, one per other profile, and the two redirect listeners',
    );
    t.equal(service.mcp?.port, tlsPort);
  });

  t.test('health over HttpsOnly: /readyz answers 200 over HTTPS once ready', async (t) => {
    const client = clientOf({ http2: true });
    const url = `https://health.example.org:${service.health!.port}/readyz`;
    let last: Answer;
    const deadline = Date.now() + 20_000;
    do {
      last = await send(client, url);
      if (last.status === 200) break;
      await new Promise((r) => setTimeout(r, 100));
    } while (Date.now() < deadline);
    t.equal(last.status, 200, last.body);
    t.match(JSON.parse(last.body), { status: 'ready', checks: { listeners: 'open' } });
    t.same(client.protocols(), ['h2']);
  });

  t.test('tools/list through the MCP SDK client, with the key and a certificate, over HTTP/2 and HTTP/1.1', async (t) => {
    for (const [http2, domain] of [
      [true, 'mail.example.org'],
      [false, 'mail.example.org'],
      [true, 'agents.example.org'],
    ] as const) {
      const client = clientOf({ http2, cert: ci.cert, key: ci.key });
      const mcp = await mcpOver(client, mcpAt(domain), MCP_KEY);
      const { tools } = await mcp.listTools();
      t.ok(tools.length > 0, `${domain} over ${http2 ? 'HTTP/2' : 'HTTP/1.1'}: ${tools.length} tools listed`);
      t.ok(
        tools.some((tool) => tool.name === 'search_emails'),
        'search_emails among them',
      );
      await mcp.close();
      t.same(client.protocols(), [http2 ? 'h2' : 'http/1.1'], 'one connection, of the protocol ALPN chose');
    }
  });

  t.test('no client certificate: 403 with an empty body, logged without a thumbprint or a name', async (t) => {
    for (const http2 of [true, false]) {
      const before = log.events('mcp.certificate-refused').length;
      const answer = await toolsList(clientOf({ http2 }), mcpAt('mail.example.org'), MCP_KEY);
      t.equal(answer.status, 403);
      t.equal(answer.body, '');
      const refused = log.events('mcp.certificate-refused').slice(before);
      t.equal(refused.length, 1, 'one line per refusal');
      t.equal(refused[0]?.reason, 'no client certificate was presented and a profile requires one');
      t.notOk(refused[0] && 'thumbprint' in refused[0], 'nothing presented, no thumbprint');
    }
  });

  t.test('a certificate with a name no profile expects: 403, logged by its thumbprint only', async (t) => {
    const before = log.events('mcp.certificate-refused').length;
    const answer = await toolsList(clientOf({ http2: true, cert: stranger.cert, key: stranger.key }), mcpAt('mail.example.org'), MCP_KEY);
    t.equal(answer.status, 403);
    t.equal(answer.body, '');
    const refused = log.events('mcp.certificate-refused').slice(before);
    t.equal(refused.length, 1);
    t.match(refused[0]?.thumbprint, /^[0-9A-F]{64}$/, '64 hex digits');
    t.equal(refused[0]?.thumbprint, new X509Certificate(stranger.cert).fingerprint256.replaceAll(':', ''), "the certificate's SHA-256");
    t.equal(refused[0]?.reason, "the certificate carries none of any profile's expected DNS names");
    t.notMatch(JSON.stringify(refused[0]), /stranger|example\.org|CN=/, 'neither its names nor its subject');
  });

  t.test('a certificate of the right client without the API key is still refused by authentication', async (t) => {
    const answer = await toolsList(clientOf({ cert: ci.cert, key: ci.key }), mcpAt('mail.example.org'));
    t.equal(answer.status, 401, 'the certificate names the application, the credential entries decide who is served');
  });

  t.test('SNI: each domain presents its own certificate; an unknown name or none ends the handshake', async (t) => {
    const agentsHello = await handshake(tlsPort, { servername: 'agents.example.org', ca: serverCa.cert });
    t.equal(agentsHello.san, 'DNS:agents.example.org');
    t.equal(agentsHello.version, 'TLSv1.3');
    const mailHello = await handshake(tlsPort, { servername: 'MAIL.example.org', ca: serverCa.cert, maxVersion: 'TLSv1.2' });
    t.equal(mailHello.san, 'DNS:mail.example.org', 'names compare case-insensitively');
    t.equal(mailHello.version, 'TLSv1.2', 'mail admits TLS 1.2');
    const unknown = await handshake(tlsPort, { servername: 'unknown.example.org', ca: serverCa.cert });
    t.ok(unknown.failed, `unknown name: ${unknown.failed}`);
    t.notOk(unknown.san);
    const none = await handshake(tlsPort, { servername: '', ca: serverCa.cert, rejectUnauthorized: false });
    t.ok(none.failed, `no name: ${none.failed}`);

    // A TLS 1.2-only client: served on mail, closed before any request on agents (MinimumTlsVersion Tls13).
    const old = clientOf({ maxVersion: 'TLSv1.2', cert: ci.cert, key: ci.key });
    t.equal((await toolsList(old, mcpAt('mail.example.org'), MCP_KEY)).status, 200, 'mail over TLS 1.2');
    await t.rejects(toolsList(old, mcpAt('agents.example.org'), MCP_KEY), 'agents refuses TLS 1.2');
  });

  t.test('the clear-text port redirects with 308 to the domain the Host names; an unknown Host gets 400', async (t) => {
    const moved = await curlRedirect([
      '-X',
      'POST',
      '-H',
      'content-type: application/json',
      '--data',
      TOOLS_LIST,
      '--resolve',
      `mail.example.org:${redirectPort}:127.0.0.1`,
      `http://mail.example.org:${redirectPort}/mcp?x=1`,
    ]);
    t.equal(moved.status, 308);
    t.equal(moved.location, `https://mail.example.org:${tlsPort}/mcp?x=1`);
    t.equal(moved.cacheControl, 'no-store');
    const agentsMoved = await curlRedirect(['-H', 'Host: AGENTS.example.org', `http://127.0.0.1:${redirectPort}/mcp`]);
    t.equal(agentsMoved.location, `https://agents.example.org:${tlsPort}/mcp`);
    const unknown = await curlRedirect(['-X', 'POST', '--data', '{}', '-H', 'Host: unknown.example.org', `http://127.0.0.1:${redirectPort}/mcp?x=1`]);
    t.equal(unknown.status, 400);
    t.equal(unknown.location, undefined);
    const ip = await curlRedirect([`http://127.0.0.1:${redirectPort}/mcp`]);
    t.equal(ip.status, 400, 'an IP address as Host');
  });

  t.test('admin over TLS: the session route with an admin key; its redirect listener answers 308', async (t) => {
    const adminPort = service.admin!.port;
    const client = clientOf({ http2: true });
    const url = `https://admin.example.org:${adminPort}/api/admin/session`;
    const session = await send(client, url, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
    t.equal(session.status, 200, session.body);
    t.match(JSON.parse(session.body), { service: 'mailcairn', credential: 'operator' });
    t.equal((await send(client, url)).status, 401, 'no key, no session');
    t.equal((await send(client, url, { headers: { authorization: `Bearer ${MCP_KEY}` } })).status, 401, "the MCP surface's key is not an admin key");
    const wrongSni = await handshake(adminPort, { servername: 'mail.example.org', ca: serverCa.cert });
    t.ok(wrongSni.failed, 'the admin socket serves only its own domain');
    const moved = await curlRedirect([
      '--resolve',
      `admin.example.org:${adminRedirectPort}:127.0.0.1`,
      `http://admin.example.org:${adminRedirectPort}/api/admin/session`,
    ]);
    t.equal(moved.status, 308);
    t.equal(moved.location, `https://admin.example.org:${adminPort}/api/admin/session`);
  });

  t.test('replacing the trust anchor file takes effect on the next request of a kept-alive connection', async (t) => {
    const client = clientOf({ cert: ci.cert, key: ci.key });
    const url = mcpAt('mail.example.org');
    t.equal((await toolsList(client, url, MCP_KEY)).status, 200, 'accepted');
    writeFileSync(anchorFile, otherCa.cert);
    t.teardown(() => writeFileSync(anchorFile, clientsCa.cert));
    const refused = await toolsList(client, url, MCP_KEY);
    t.equal(refused.status, 403, 'another authority: refused');
    t.equal(refused.body, '');
    t.equal(
      log.events('mcp.certificate-refused').at(-1)?.reason,
      "the certificate names a profile but was not issued directly by one of that profile's trust anchors",
    );
    writeFileSync(anchorFile, clientsCa.cert);
    t.equal((await toolsList(client, url, MCP_KEY)).status, 200, 'the authority is back: accepted');
    t.equal(client.connections(), 1, 'all three on one connection');
  });
});

t.test('the <profile:name> partition: two certificate clients draw on separate buckets', async (t) => {
  const dir = tempDir(t);
  forbidden.push({ what: 'a reference target', text: dir });
  const serverCa = createCa(dir, 'server-ca');
  const server = serverLeaf(serverCa, 'mcp', 'mcp.example.org');
  const clientsCa = createCa(dir, 'clients-ca');
  const alpha = clientLeaf(clientsCa, 'alpha-client-5e', 'alpha.clients.example.org');
  const beta = clientLeaf(clientsCa, 'beta-client-9a', 'beta.clients.example.org');
  const anchor = (name: string) => ({
    Name: name,
    Requirement: 'Required',
    TrustAnchors: [{ Name: 'clients-ca', SecretReference: `file:${clientsCa.certPath}` }],
    SubjectAlternativeNames: [`${name}.clients.example.org`],
  });
  const { service, log } = await start(dir, {
    HealthEndpoints: { Port: 0 },
    McpEndpoint: {
      Enabled: true,
      Transport: 'HttpsOnly',
      Https: { Endpoints: [pemProfile('mcp', 'mcp.example.org', server)] },
      RateLimiting: { TokenCapacity: 2, TokensPerReplenishmentPeriod: 1, ReplenishmentPeriod: '00:01:00' },
      ClientCertificateProfiles: [anchor('alpha'), anchor('beta')],
    },
  });
  t.teardown(() => service.stop());
  t.ok(
    log.events('config.warning').some((line) => line.code === 'mcp-no-authentication'),
    'no credential entries: the unauthenticated posture',
  );
  const url = `https://mcp.example.org:${service.mcp!.port}/mcp`;
  const alphaClient = tlsClient({ ca: serverCa.cert, cert: alpha.cert, key: alpha.key, http2: true });
  const betaClient = tlsClient({ ca: serverCa.cert, cert: beta.cert, key: beta.key });
  const nobody = tlsClient({ ca: serverCa.cert });
  t.teardown(() => Promise.all([alphaClient.close(), betaClient.close(), nobody.close()]));

  t.equal((await toolsList(alphaClient, url)).status, 200);
  t.equal((await toolsList(alphaClient, url)).status, 200);
  const spent = await toolsList(alphaClient, url);
  t.equal(spent.status, 429, "alpha's bucket is spent");
  t.ok(Number(spent.headers['retry-after']) >= 1, 'with Retry-After');
  t.equal((await toolsList(betaClient, url)).status, 200, 'beta is still served: a bucket of its own');
  t.equal((await toolsList(betaClient, url)).status, 200);
  t.equal((await toolsList(betaClient, url)).status, 429, "then beta's is spent too");
  t.equal((await toolsList(nobody, url)).status, 403, 'no certificate under a Required profile: refused before the limiter');
});

t.test('startup refuses an expired certificate and a SAN mismatch together, before any port opens', async (t) => {
  const dir = tempDir(t);
  forbidden.push({ what: 'a reference target', text: dir });
  const serverCa = createCa(dir, 'server-ca');
  const expired = serverLeaf(serverCa, 'expired', 'old.example.org', { validFromDays: -60, validToDays: -3 });
  const elsewhere = serverLeaf(serverCa, 'elsewhere', 'elsewhere.example.org');
  const [tlsPort, otherPort, healthPort] = [await reservePort(), await reservePort(), await reservePort()];
  const log = captureLog();
  captured.push(log);
  const file = writeConfig(dir, {
    Storage: { Database: join(dir, 'mailcairn.db') },
    HealthEndpoints: { Port: healthPort },
    McpEndpoint: {
      Enabled: true,
      Transport: 'HttpsOnly',
      Https: {
        Endpoints: [pemProfile('old', 'old.example.org', expired, tlsPort), pemProfile('mismatch', 'mcp.example.org', elsewhere, otherPort)],
      },
    },
  });
  const refusal = await startService({ configFile: file, env: {}, log: log.log, hostLogSink: log.write }).then(
    (service) => {
      void service.stop();
      return null;
    },
    (err: unknown) => err as Error & { code?: string },
  );
  t.equal(refusal?.code, 'E_CONFIG_INVALID');
  t.same(refusal?.message.split('\n'), [
    `McpEndpoint:Https:Endpoints:0:ServerCertificate:CertificateChain: the leaf certificate is not valid now: it expired on ${new Date(Date.now() - 3 * 86_400_000).toISOString().slice(0, 10)} (rule: the certificate is valid now)`,
    'McpEndpoint:Https:Endpoints:1:ServerCertificate:CertificateChain: no subject alternative name of the leaf certificate covers Domain (rule: a subject alternative name covers Domain exactly or by one wildcard label)',
  ]);
  t.notMatch(refusal?.message ?? '', new RegExp(`example\\.org|${dir}`), 'no domain, no path');
  for (const [what, port] of [
    ['the first profile', tlsPort],
    ['the second profile', otherPort],
    ['health', healthPort],
  ] as const) {
    t.equal(await refusedPort(port!), 'ECONNREFUSED', `nothing listens on ${what}'s port`);
  }
  t.notOk(existsSync(join(dir, 'mailcairn.db')), 'the database was not opened');
});

t.test('privacy: no log line of any service carries material, a secret, a client name or subject, or a reference target', async (t) => {
  const all = captured.flatMap((log) => log.lines);
  const text = captured.map((log) => log.raw()).join('');
  t.ok(all.length > 50, `${all.length} lines captured`);
  t.ok(all.filter((line) => line.event === 'tls.certificate').length >= 5, 'expiry lines were logged (by profile name)');
  t.ok(all.some((line) => line.event === 'mcp.certificate-refused'));
  for (const { what, text: secret } of forbidden) t.notOk(text.includes(secret), `no ${what}`);
  t.notMatch(text, /BEGIN|PRIVATE KEY|CERTIFICATE-----/, 'no PEM');
  t.notMatch(text, /CN=/, 'no subject');
  t.notMatch(text, /example\.org/, 'no domain of a profile or a client');
});
