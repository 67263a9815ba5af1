/**
 * The clear-text redirect listener over real loopback HTTP (undici, and a
 * raw socket where a client would tidy the request up): every method and
 * path answered 308 to its own host's profile with the request target kept
 * byte for byte, `:443` left out; a host naming no profile, none, two, or
 * an IP literal answered an empty 400; a body never buffered, the
 * connection kept after a small one and closed after a large one; and
 * nothing a request carries reaching the log.
 */
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import t from 'tap';
import { Agent, request } from 'undici';
import { close, listen } from '../../../http/listen.ts';
import { createRedirectListener, type RedirectTarget } from '../../../http/tls/redirect-listener.ts';
import { captureLog } from '../../helpers/log-capture.ts';

t.setTimeout(30_000);

const TARGETS: RedirectTarget[] = [
  { domain: 'mail.example.org', port: 8443 },
  { domain: 'agents.example.net', port: 9443 },
  { domain: 'secure.example.com', port: 443 },
];

async function started(targets: readonly RedirectTarget[] = TARGETS) {
  const capture = captureLog();
  const server = createRedirectListener(targets, { log: capture.log, surface: 'mcp' });
  const connections: { bytesRead: () => number }[] = [];
  server.on('connection', (socket) => {
    connections.push({ bytesRead: () => socket.bytesRead });
  });
  const address: AddressInfo = await listen(server, 'McpEndpoint:Https:Redirect', '127.0.0.1', 0);
  const agent = new Agent({ connections: 1 });
  t.teardown(async () => {
    await agent.close();
    await close(server, 100);
  });
  const base = `http://127.0.0.1:${address.port}`;
  return { server, capture, connections, agent, base, port: address.port };
}

type Exchange = { status: number; location: string | undefined; connection: string | undefined; body: string };

async function ask(
  at: { base: string; agent: Agent },
  path: string,
  host: string,
  options: { method?: 'GET' | 'POST' | 'HEAD' | 'PUT' | 'DELETE'; body?: string | Buffer | Readable; headers?: Record<string, string> } = {},
): Promise<Exchange> {
  const res = await request(`${at.base}${path}`, {
    dispatcher: at.agent,
    method: options.method ?? 'GET',
    headers: { host, ...options.headers },
    ...(options.body === undefined ? {} : { body: options.body }),
  });
  const body = await res.body.text();
  const header = (name: string): string | undefined => {
    const value = res.headers[name];
    return Array.isArray(value) ? value.join(', ') : value;
  };
  return { status: res.statusCode, location: header('location'), connection: header('connection'), body };
}

/** Sends `text` as is over a new connection and returns everything the server wrote until it closed or `ms` passed. */
function raw(port: number, text: string | Buffer, ms = 2_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => socket.destroy(), ms);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString('latin1'));
    });
    socket.write(text);
  });
}

function statusOf(answer: string): number {
  return Number(/^HTTP\/1\.[01] (\d{3})/.exec(answer)?.[1] ?? 0);
}

function locationOf(answer: string): string | undefined {
  return /\r\nlocation: ([^\r]*)\r\n/i.exec(answer)?.[1];
}

t.test('GET and POST are answered 308 to the profile, path and query kept', async (t) => {
  const at = await started();
  const get = await ask(at, '/mcp?session=1&x=a%20b', 'mail.example.org');
  t.equal(get.status, 308);
  t.equal(get.location, 'https://mail.example.org:8443/mcp?session=1&x=a%20b');
  t.equal(get.body, '', 'no body');

  const post = await ask(at, '/mcp', 'mail.example.org', {
    method: 'POST',
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    headers: { 'content-type': 'application/json' },
  });
  t.equal(post.status, 308, '308 keeps the method and body (301/302 would turn POST into GET)');
  t.equal(post.location, 'https://mail.example.org:8443/mcp');
  t.not(post.connection, 'close', 'a small body is discarded and the connection kept');

  for (const method of ['PUT', 'DELETE'] as const) {
    const other = await ask(at, '/api/admin/contacts/7', 'mail.example.org', { method });
    t.equal(other.status, 308, method);
  }
  t.equal(at.connections.length, 1, 'every request above went over one connection');

  const cache = await request(`${at.base}/mcp`, { dispatcher: at.agent, headers: { host: 'mail.example.org' } });
  await cache.body.dump();
  t.equal(cache.headers['cache-control'], 'no-store', 'not cached: a permanent redirect would outlive a change of profiles');
});

t.test('the request target is copied byte for byte, encoded characters included', async (t) => {
  const at = await started();
  const targets = [
    '/attachments/aGVsbG8%2Fd29ybGQ%3D?download=1',
    '/a%20b/%25/%C3%A9/.%2E/?q=%2B%26&&empty=&x',
    '/path;param/with:colon@at/',
    '/?only=query',
    '/',
  ];
  for (const target of targets) {
    const answer = await raw(at.port, `GET ${target} HTTP/1.1\r\nHost: mail.example.org\r\nConnection: close\r\n\r\n`);
    t.equal(statusOf(answer), 308, target);
    t.equal(locationOf(answer), `https://mail.example.org:8443${target}`, target);
  }
  // Bytes outside ASCII sent unencoded never reach the listener: Node's parser refuses the request (400), so nothing is re-encoded.
  const bytes = Buffer.concat([
    Buffer.from('GET /caf'),
    Buffer.from([0xc3, 0xa9]),
    Buffer.from(' HTTP/1.1\r\nHost: mail.example.org\r\nConnection: close\r\n\r\n'),
  ]);
  const answer = await raw(at.port, bytes);
  t.equal(statusOf(answer), 400, 'unencoded bytes refused');
  t.equal(locationOf(answer), undefined);
});

t.test(':443 is left out, another port kept, each host sent to its own profile', async (t) => {
  const at = await started();
  t.equal((await ask(at, '/x?y=1', 'secure.example.com')).location, 'https://secure.example.com/x?y=1');
  t.equal((await ask(at, '/x?y=1', 'mail.example.org')).location, 'https://mail.example.org:8443/x?y=1');
  t.equal((await ask(at, '/x?y=1', 'agents.example.net')).location, 'https://agents.example.net:9443/x?y=1');
});

t.test("the Host header's name is matched case-insensitively, its port ignored", async (t) => {
  const at = await started();
  t.equal((await ask(at, '/mcp', 'MAIL.Example.ORG:8080')).location, 'https://mail.example.org:8443/mcp');
  t.equal((await ask(at, '/mcp', `agents.example.net:${at.port}`)).location, 'https://agents.example.net:9443/mcp');
  t.equal((await ask(at, '/mcp', 'mail.example.org.')).location, 'https://mail.example.org:8443/mcp', 'an absolute name (trailing dot)');
});

t.test('a Host naming no profile, an IP literal, or none is answered an empty 400', async (t) => {
  const at = await started();
  for (const host of [
    'other.example.org',
    'example.org',
    'mail.example.org.evil.test',
    '127.0.0.1',
    `127.0.0.1:${at.port}`,
    '[::1]',
    `[::1]:${at.port}`,
    'mail.example.org:http',
    'user@mail.example.org',
  ]) {
    const answer = await ask(at, '/mcp?x=1', host);
    t.equal(answer.status, 400, host);
    t.equal(answer.location, undefined, `${host}: no Location`);
    t.equal(answer.body, '', `${host}: empty body`);
  }
  const noHost = await raw(at.port, 'GET /mcp HTTP/1.0\r\n\r\n');
  t.equal(statusOf(noHost), 400, 'HTTP/1.0 without Host');
  t.notMatch(noHost, /location:/i);
  t.match(noHost, /\r\ncontent-length: 0\r\n/i);

  const twoHosts = await raw(at.port, 'GET /mcp HTTP/1.1\r\nHost: mail.example.org\r\nHost: agents.example.net\r\nConnection: close\r\n\r\n');
  t.equal(statusOf(twoHosts), 400, 'two Host headers (RFC 9112 section 3.2)');

  const asterisk = await raw(at.port, 'OPTIONS * HTTP/1.1\r\nHost: mail.example.org\r\nConnection: close\r\n\r\n');
  t.equal(statusOf(asterisk), 400, 'the asterisk form names no path to send on');
});

t.test('an absolute-form target names the host; the Host header is then ignored', async (t) => {
  const at = await started();
  const absolute = await raw(at.port, 'GET http://agents.example.net/mcp?a=%2F HTTP/1.1\r\nHost: mail.example.org\r\nConnection: close\r\n\r\n');
  t.equal(statusOf(absolute), 308);
  t.equal(locationOf(absolute), 'https://agents.example.net:9443/mcp?a=%2F');

  const withPort = await raw(at.port, 'GET HTTP://Secure.Example.COM:80?q HTTP/1.1\r\nHost: mail.example.org\r\nConnection: close\r\n\r\n');
  t.equal(locationOf(withPort), 'https://secure.example.com/?q', 'no path: the root, query kept');

  const unknown = await raw(at.port, 'GET http://other.example.org/mcp HTTP/1.1\r\nHost: mail.example.org\r\nConnection: close\r\n\r\n');
  t.equal(statusOf(unknown), 400, 'an unknown authority is refused even beside a known Host');

  const userinfo = await raw(at.port, 'GET http://someone:secret@mail.example.org/ HTTP/1.1\r\nHost: mail.example.org\r\nConnection: close\r\n\r\n');
  t.equal(statusOf(userinfo), 400, 'user information is an error (RFC 9110 section 4.2.4)');
});

t.test('HEAD is answered 308 without a body', async (t) => {
  const at = await started();
  const head = await ask(at, '/readyz', 'mail.example.org', { method: 'HEAD' });
  t.equal(head.status, 308);
  t.equal(head.location, 'https://mail.example.org:8443/readyz');
  t.equal(head.body, '');
});

t.test('a large body is not read: answered at once, the connection closed, the next request served', async (t) => {
  const at = await started();
  const size = 32 * 1024 * 1024;
  const large = await ask(at, '/mcp?big=1', 'mail.example.org', { method: 'POST', body: Buffer.alloc(size, 0x61) });
  t.equal(large.status, 308);
  t.equal(large.location, 'https://mail.example.org:8443/mcp?big=1');
  t.equal(large.connection, 'close', 'the server says it will not read on');
  const read = at.connections[0]?.bytesRead() ?? size;
  t.ok(read < size / 2, `the server read ${read} of ${size} bytes`);

  const next = await ask(at, '/mcp', 'mail.example.org');
  t.equal(next.status, 308, 'the client carries on over a new connection');
  t.equal(at.connections.length, 2);

  const chunked = await ask(at, '/mcp', 'mail.example.org', {
    method: 'POST',
    body: Readable.from([Buffer.alloc(1024, 0x61)]),
  });
  t.equal(chunked.status, 308, 'a body of unknown length (sent chunked)');
  t.equal(chunked.connection, 'close');
});

t.test('Expect: 100-continue is answered 308 at once, never invited to send the body', async (t) => {
  const at = await started();
  const answer = await raw(
    at.port,
    'POST /mcp HTTP/1.1\r\nHost: mail.example.org\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\nExpect: 100-continue\r\n\r\n',
  );
  t.equal(statusOf(answer), 308, 'the first status line is the final answer, not 100');
  t.notMatch(answer, /100 Continue/);
  t.equal(locationOf(answer), 'https://mail.example.org:8443/mcp');
  t.match(answer, /\r\nconnection: close\r\n/i, 'and the connection closes, the body never having come');
});

t.test('nothing a request carries reaches the log', async (t) => {
  const at = await started();
  const capability = 'cap-3f9a1c0de7b24f6e9a51';
  const query = 'token=q-7c1e5b2a90';
  const unknownHost = 'hidden-host.example.org';
  await ask(at, `/attachments/${capability}?${query}`, 'mail.example.org');
  await ask(at, `/attachments/${capability}?${query}`, 'mail.example.org', { method: 'POST', body: `{"secret":"${capability}"}` });
  t.equal(at.capture.lines.length, 0, 'a redirect is not logged at all');

  await ask(at, `/attachments/${capability}?${query}`, unknownHost);
  await raw(at.port, `GET /attachments/${capability}?${query} HTTP/1.0\r\n\r\n`);
  const refused = at.capture.events('redirect.refused');
  t.same(
    refused.map((line) => line.reason),
    ['unknown-host', 'no-host'],
    'a refusal is a debug line naming its kind',
  );
  for (const secret of [capability, query, 'q-7c1e5b2a90', unknownHost, 'attachments']) t.notMatch(at.capture.raw(), secret, `${secret} is not logged`);
});

t.test('no profile configured: every request is refused', async (t) => {
  const at = await started([]);
  t.equal((await ask(at, '/', 'mail.example.org')).status, 400);
});
