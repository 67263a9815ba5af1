/**
 * The TLS listener (http/tls/secure-server.ts) with certificates from a CA
 * made at test time: the certificate chosen by server name, an unknown name
 * or none ending the handshake, HTTP/2 and HTTP/1.1 on one port (node's
 * clients and curl), a profile's own TLS floor, and the pipeline's answers
 * (Host from `:authority`, connection headers dropped on HTTP/2).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect as connectHttp2 } from 'node:http2';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import { promisify } from 'node:util';
import t from 'tap';
import { close, listen } from '../../../http/listen.ts';
import { createRateLimiter } from '../../../http/limits/rate-limiter.ts';
import { admit, answerEmpty, type Handler, readBody, surfaceHandler } from '../../../http/pipeline.ts';
import { createTlsServer, type SecureProfile } from '../../../http/tls/secure-server.ts';
import { chainOf, createCa, issue } from '../../harness/test-ca.ts';

const dir = mkdtempSync(join(tmpdir(), 'secure-server-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const root = createCa(dir, 'Root');
const inter = createCa(dir, 'Inter', { parent: root });
const serverLeaf = (name: string, dns: string) => issue(inter, { name, dns: [dns], eku: ['serverAuth'], keyUsage: ['digitalSignature'] });
const one = serverLeaf('one', 'one.example.test');
const two = serverLeaf('two', 'two.example.test');
const profile = (leaf: ReturnType<typeof serverLeaf>, domain: string, minVersion: SecureProfile['minVersion'] = 'TLSv1.2'): SecureProfile => ({
  domain,
  key: leaf.key,
  chain: chainOf(leaf, inter),
  minVersion,
});

const slowLimits = { limiter: createRateLimiter({ Enabled: false } as never, { surface: 'mcp' }), timeout: { Enabled: true, Duration: 300 } };

/** Echoes what the pipeline saw: the protocol, the Host, the path. */
const handler = surfaceHandler({
  surface: 'mcp',
  route: (req, res, path) => {
    const handlers: Record<string, Handler> = {
      '/echo': async () => {
        res.setHeader('Connection', 'close'); // dropped on HTTP/2, kept on HTTP/1.1
        const text = JSON.stringify({ version: req.httpVersion, host: req.headers.host, url: req.url });
        res.setHeader('Content-Type', 'application/json');
        res.end(text);
      },
      '/empty': async () => answerEmpty(res, 204),
      // Admitted under a 300 ms request timeout, then never answered by the handler.
      '/slow': async () => {
        await admit(req, res, slowLimits, 'mcp:<anonymous>' as never);
      },
      '/upload': async () => {
        const body = await readBody(req, res, 1024);
        if (body.kind === 'too-large') answerEmpty(res, 413);
        else answerEmpty(res, 204);
      },
    };
    const found = handlers[path];
    return found === undefined ? null : { template: path, handler: found };
  },
  failed: (err) => {
    throw err;
  },
});

async function start(profiles: SecureProfile[], protocols: ('Http1' | 'Http2')[] = ['Http1', 'Http2']): Promise<AddressInfo> {
  const server = createTlsServer(handler, { profiles, protocols, requestClientCertificate: false });
  const address = await listen(server, 'McpEndpoint:Https:Endpoints:0', '127.0.0.1', 0);
  t.teardown(() => close(server));
  return address;
}

/** The handshake's outcome: the server certificate's SAN and the protocol, or the error's code. */
function handshake(
  port: number,
  options: ConnectionOptions,
): Promise<{ san?: string; protocol?: string | null; alpn?: string | false | null; failed?: string }> {
  return new Promise((resolve) => {
    const socket = tlsConnect({ host: '127.0.0.1', port, ca: root.cert, ...options }, () => {
      const san = socket.getPeerX509Certificate()?.subjectAltName;
      resolve({ san, protocol: socket.getProtocol(), alpn: socket.alpnProtocol });
      socket.end();
    });
    socket.on('error', (err: NodeJS.ErrnoException) => resolve({ failed: err.code ?? err.message }));
    socket.on('close', () => resolve({ failed: 'closed' }));
  });
}

t.test('the certificate is chosen by server name; an unknown name or none ends the handshake', async (t) => {
  const { port } = await start([profile(one, 'one.example.test'), profile(two, 'two.example.test')]);
  t.equal((await handshake(port, { servername: 'one.example.test' })).san, 'DNS:one.example.test');
  t.equal((await handshake(port, { servername: 'TWO.example.test' })).san, 'DNS:two.example.test', 'names compare case-insensitively');
  const unknown = await handshake(port, { servername: 'three.example.test' });
  t.ok(unknown.failed, `an unknown name: handshake ended (${unknown.failed})`);
  t.notOk(unknown.san);
  // An IP address is sent without SNI (RFC 6066); so is a client that sends none.
  const none = await handshake(port, { servername: '' });
  t.ok(none.failed, `no server name: handshake ended (${none.failed})`);
});

t.test('HTTP/2 and HTTP/1.1 on the same port, through the same pipeline', async (t) => {
  const { port } = await start([profile(one, 'one.example.test')]);
  t.equal((await handshake(port, { servername: 'one.example.test', ALPNProtocols: ['h2', 'http/1.1'] })).alpn, 'h2', 'h2 preferred by ALPN');
  t.equal((await handshake(port, { servername: 'one.example.test', ALPNProtocols: ['http/1.1'] })).alpn, 'http/1.1');

  const session = connectHttp2(`https://one.example.test:${port}`, { ca: root.cert, host: '127.0.0.1', servername: 'one.example.test' } as never);
  t.teardown(() => session.close());
  const h2 = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const stream = session.request({ ':path': '/echo?x=1' });
    let status = 0;
    let body = '';
    stream.on('response', (headers) => {
      status = Number(headers[':status']);
    });
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      body += chunk;
    });
    stream.on('end', () => resolve({ status, body }));
    stream.on('error', reject);
  });
  t.equal(h2.status, 200, 'HTTP/2: answered (a Connection header is dropped, not thrown on)');
  t.same(JSON.parse(h2.body), { version: '2.0', host: `one.example.test:${port}`, url: '/echo?x=1' }, 'Host read from :authority');

  const h1 = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = httpsRequest(
      { host: '127.0.0.1', port, path: '/echo', servername: 'one.example.test', ca: root.cert, headers: { host: `one.example.test:${port}` } },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
  t.equal(h1.status, 200);
  t.equal(JSON.parse(h1.body).version, '1.1', 'HTTP/1.1 on the same port');

  const curl = async (flag: string): Promise<string> => {
    const { stdout } = await promisify(execFile)('curl', [
      '-sS',
      flag,
      '--cacert',
      root.certPath,
      '--resolve',
      `one.example.test:${port}:127.0.0.1`,
      '-o',
      '/dev/null',
      '-w',
      '%{http_version} %{http_code}',
      `https://one.example.test:${port}/empty`,
    ]);
    return stdout;
  };
  t.equal(await curl('--http2'), '2 204', 'curl --http2');
  t.equal(await curl('--http1.1'), '1.1 204', 'curl --http1.1');
  t.equal(await curl('--http2'), '2 204', 'curl --http2');
});

t.test('Http1 alone offers no h2; Http2 alone refuses HTTP/1.1', async (t) => {
  const { port: h1Only } = await start([profile(one, 'one.example.test')], ['Http1']);
  const h1 = await handshake(h1Only, { servername: 'one.example.test', ALPNProtocols: ['h2', 'http/1.1'] });
  t.equal(h1.alpn, 'http/1.1');
  const { port: h2Only } = await start([profile(one, 'one.example.test')], ['Http2']);
  const h2 = await handshake(h2Only, { servername: 'one.example.test', ALPNProtocols: ['http/1.1'] });
  t.ok(h2.failed, `an HTTP/1.1-only client is refused (${h2.failed})`);
});

t.test("each profile's MinimumTlsVersion holds on a shared socket", async (t) => {
  const { port } = await start([profile(one, 'one.example.test', 'TLSv1.2'), profile(two, 'two.example.test', 'TLSv1.3')]);
  const old = { maxVersion: 'TLSv1.2' as const };
  t.equal((await handshake(port, { servername: 'one.example.test', ...old })).protocol, 'TLSv1.2', 'Tls12 profile: TLS 1.2 served');
  t.equal((await handshake(port, { servername: 'two.example.test' })).protocol, 'TLSv1.3', 'Tls13 profile: TLS 1.3 served');
  // The TLS 1.2 handshake completes (the floor is known only after it) and the connection is ended at once.
  const refused = await new Promise<string>((resolve) => {
    const socket = tlsConnect({ host: '127.0.0.1', port, ca: root.cert, servername: 'two.example.test', ...old });
    socket.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
    socket.on('close', () => resolve('closed'));
    socket.on('secureConnect', () => socket.write('GET /empty HTTP/1.1\r\nHost: two.example.test\r\n\r\n'));
    socket.on('data', () => resolve('answered'));
  });
  t.not(refused, 'answered', `a TLS 1.2 client of the Tls13 profile gets no answer (${refused})`);
});

t.test('HTTP/2: the request timeout and the body limit answer one stream, and the session serves on', async (t) => {
  const { port } = await start([profile(one, 'one.example.test')]);
  const session = connectHttp2(`https://one.example.test:${port}`, { ca: root.cert, host: '127.0.0.1', servername: 'one.example.test' } as never);
  t.teardown(() => session.close());
  const exchange = (path: string, body?: Buffer): Promise<number> =>
    new Promise((resolve, reject) => {
      const stream = session.request({ ':path': path, ':method': body ? 'POST' : 'GET' });
      stream.on('response', (headers) => resolve(Number(headers[':status'])));
      stream.on('error', reject);
      stream.resume();
      stream.end(body);
    });
  const [slow, fast] = await Promise.all([exchange('/slow'), exchange('/empty')]);
  t.equal(slow, 504, 'the request timeout answers its stream 504');
  t.equal(fast, 204, 'a concurrent stream is answered meanwhile');
  t.equal(await exchange('/upload', Buffer.alloc(4096, 1)), 413, 'a body past the limit: 413');
  t.equal(await exchange('/upload', Buffer.alloc(16, 1)), 204, 'the same session serves the next stream');
});
