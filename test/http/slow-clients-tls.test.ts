/**
 * Slow clients on a TLS socket that offers HTTP/2 and HTTP/1.1 (the default
 * `HttpProtocols`), against a service started for real with an HTTPS profile
 * and small `Connections` bounds (docs/security.md "Connection limits"):
 *
 * - HTTP/1.1 over TLS: slow headers and slow bodies get 408 and lose their
 *   connection past `HeadersTimeout`/`ReceiveTimeout`, as on clear text.
 * - HTTP/2: a stream whose body trickles is answered 408 past
 *   `ReceiveTimeout` while other streams of the same session are answered;
 *   a session that never sends HEADERS (or not even the preface) is closed
 *   past `HeadersTimeout`.
 *
 * - A connection that never starts its TLS handshake is closed past
 *   `HeadersTimeout`.
 * - HTTP/2, a stream already answered (headers sent) whose body still
 *   trickles: reset with CANCEL past `ReceiveTimeout` (the listener alone,
 *   with a handler that answers before it reads).
 *
 * Throughout each abuse a well-behaved HTTP/2 client gets `/readyz` 200 and
 * an MCP `tools/list` through the SDK's client; nothing is logged as a failure.
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import {
  type ClientHttp2Session,
  type ClientHttp2Stream,
  constants,
  connect as h2Connect,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
} from 'node:http2';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import t, { type Test } from 'tap';
import { Connections } from '../../config/schema/connections.ts';
import { close, listen } from '../../http/listen.ts';
import type { SurfaceHandler } from '../../http/pipeline.ts';
import { createTlsServer } from '../../http/tls/secure-server.ts';
import { type Service, startService } from '../../service/app.ts';
import { createCa, issue, type TestCa } from '../harness/test-ca.ts';
import { loopbackLookup, mcpOver, tlsClient } from '../harness/tls-client.ts';
import { tempDir, writeConfig } from '../helpers/daemon.ts';
import { defectLines } from '../helpers/fuzz-tally.ts';
import { captureLog } from '../helpers/log-capture.ts';
import { collect, openSocket, parseResponses, type RawExchange } from '../helpers/raw-http.ts';

t.setTimeout(110_000);

const KEY = `mc_${randomUUID().replaceAll('-', '')}`;
const DOMAIN = 'mail.example.test';
const HEALTH_DOMAIN = 'health.example.test';
const HEADERS_TIMEOUT_MS = 2_000;
const RECEIVE_TIMEOUT_MS = 3_000;
/** Cut-offs come up to a second after their bound (http/listen.ts), and a loaded machine adds its own delay. */
const SLACK_MS = 6_000;
/** How long trickling HTTP/2 streams may take to close past ReceiveTimeout before the test reports each one's state. */
const STREAMS_SLACK_MS = 30_000;
const TOOLS_LIST = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${KEY}` };

type Served = { service: Service; port: number; healthPort: number; ca: TestCa; logs: ReturnType<typeof captureLog> };

async function serve(t: Test): Promise<Served> {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'agent.key'), KEY);
  const ca = createCa(dir, 'slow-root');
  const profile = (name: string, domain: string) => {
    const leaf = issue(ca, { name, dns: [domain], eku: ['serverAuth'], keyUsage: ['digitalSignature'] });
    return {
      Name: name,
      Domain: domain,
      BindAddress: '127.0.0.1',
      Port: 0,
      ServerCertificate: {
        CertificateChain: { Name: `${name}-chain`, SecretReference: `file:${leaf.certPath}` },
        PrivateKey: { Name: `${name}-key`, SecretReference: `file:${leaf.keyPath}` },
      },
    };
  };
  // IdleTimeout well past HeadersTimeout: a session closed at 2 s was closed by the header bound, not the idle one.
  const connections = { HeadersTimeout: '00:00:02', ReceiveTimeout: '00:00:03', IdleTimeout: '00:00:30' };
  const logs = captureLog();
  const config = {
    HealthEndpoints: { Transport: 'HttpsOnly', Https: { Endpoints: [profile('health', HEALTH_DOMAIN)] } },
    Storage: { Database: join(dir, 'mailcairn.db') },
    MailSynchronization: { Enabled: false },
    McpEndpoint: {
      Enabled: true,
      Authentication: [{ ApiKey: { Name: 'agent', SecretReference: `file:${join(dir, 'agent.key')}`, Lifetime: 'NoLimit' } }],
      RateLimiting: { TokenCapacity: 100_000, TokensPerReplenishmentPeriod: 100_000, MaxConcurrentRequests: 100 },
      Transport: 'HttpsOnly',
      Https: { Endpoints: [profile('mail', DOMAIN)] },
      Connections: { ...connections, MaxConnections: 1_000 },
    },
  };
  const service = await startService({ configFile: writeConfig(dir, config), env: {}, log: logs.log, hostLogSink: logs.write });
  t.teardown(() => service.stop());
  return { service, port: service.mcp!.port, healthPort: service.health!.port, ca, logs };
}

/** A client that behaves, over HTTP/2: `/readyz` 200 and `tools/list` answered, through the SDK's own client. */
async function wellBehaved(t: Test, served: Served): Promise<() => Promise<void>> {
  const client = tlsClient({ ca: served.ca.cert, http2: true });
  const mcp = await mcpOver(client, `https://${DOMAIN}:${served.port}/mcp`, KEY);
  t.teardown(async () => {
    await mcp.close();
    await client.close();
  });
  return async () => {
    const ready = await within('/readyz', 15_000, client.fetch(`https://${HEALTH_DOMAIN}:${served.healthPort}/readyz`));
    await within('/readyz body', 15_000, ready.text());
    if (ready.status !== 200) throw new Error(`/readyz answered ${ready.status}`);
    const { tools } = await within('tools/list (SDK client)', 15_000, mcp.listTools());
    if (tools.length === 0) throw new Error('tools/list answered no tool');
  };
}

/**
 * `work`, or an error naming `what` if it takes longer than `ms` (a hang fails with its name, not tap's
 * timeout). `what` may be a function: it is read when the time is up, to state what was still pending.
 */
async function within<T>(what: string | (() => string), ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${typeof what === 'string' ? what : what()}: no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Runs `probe` again and again while `abuse` is under way; how many rounds passed (each one must). */
async function throughout(abuse: Promise<unknown>, probe: () => Promise<void>): Promise<number> {
  let over = false;
  const end = (): void => {
    over = true;
  };
  // Both ways: an abuse that fails (a bound in `within`) ends the rounds, and its rejection is awaited below.
  abuse.then(end, end);
  let rounds = 0;
  while (!over) {
    await probe();
    rounds += 1;
    await sleep(200);
  }
  await abuse;
  return rounds;
}

/** A TLS connection to the profile's domain offering only `alpn`, once the handshake is done. */
function openTls(served: Served, alpn: string): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port: served.port, servername: DOMAIN, ca: served.ca.cert, ALPNProtocols: [alpn] }, () => {
      socket.off('error', reject);
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

/** HTTP/1.1 over TLS: writes `head` at once, then `drip` one byte every `everyMs` until the server closes the connection. */
async function dripping(
  served: Served,
  head: string,
  drip: string,
  everyMs: number,
): Promise<RawExchange & { elapsedMs: number; alpn: string | false | null }> {
  const socket = await openTls(served, 'http/1.1');
  const started = Date.now();
  const done = collect(socket, HEADERS_TIMEOUT_MS + RECEIVE_TIMEOUT_MS + SLACK_MS);
  socket.write(head);
  let at = 0;
  const timer = setInterval(() => {
    if (socket.destroyed) return clearInterval(timer);
    socket.write(drip[at % drip.length] as string, () => {});
    at += 1;
  }, everyMs);
  const result = await done;
  clearInterval(timer);
  return { ...result, elapsedMs: Date.now() - started, alpn: socket.alpnProtocol };
}

/** An HTTP/2 session to the profile's domain on `port`, trusting `ca`. */
function h2Session(port: number, ca: TestCa): Promise<ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    const session = h2Connect(`https://${DOMAIN}:${port}`, { ca: ca.cert, lookup: loopbackLookup }, () => {
      session.off('error', reject);
      resolve(session);
    });
    session.once('error', reject);
  });
}

type StreamOutcome = {
  status: number | undefined;
  /** Whether the answer's HEADERS frame ended the stream (END_STREAM): an answer without a body, complete. */
  endStream: boolean;
  rstCode: number | undefined;
  body: string;
  elapsedMs: number;
};

/**
 * Reads `stream` to its close: the status it was answered, the reset code, the body. Never rejects.
 *
 * A stream the server reset while it was still sending (its body unfinished) is destroyed here once its
 * answer has ended, as a client that has its whole answer drops the rest of its upload. node's client does
 * not close it by itself when the reset is NO_ERROR and one of its writes was still queued: that write never
 * completes, and the stream waits for it before it closes (node 20).
 */
function outcome(stream: ClientHttp2Stream, started = Date.now()): Promise<StreamOutcome> {
  return new Promise((resolve) => {
    let status: number | undefined;
    let endStream = false;
    const chunks: Buffer[] = [];
    stream.on('response', (headers: IncomingHttpHeaders, flags: number) => {
      status = Number(headers[':status']);
      endStream = (flags & constants.NGHTTP2_FLAG_END_STREAM) !== 0;
    });
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('error', () => {});
    const dropOnceAnswered = (): void => {
      if (stream.closed && stream.readableEnded && !stream.destroyed) stream.destroy();
    };
    stream.on('aborted', dropOnceAnswered); // the server's reset arrived while this side was still sending
    stream.on('end', dropOnceAnswered);
    stream.once('close', () =>
      resolve({ status, endStream, rstCode: stream.rstCode, body: Buffer.concat(chunks).toString('utf8'), elapsedMs: Date.now() - started }),
    );
  });
}

type Trickled = {
  readonly done: Promise<StreamOutcome>;
  /** Where the stream stands, for a failure's message: what was answered, whether it was reset, closed. */
  state(): string;
};

/** A request on `session` whose body trickles, a byte every 100 ms, until the stream closes. */
function trickle(session: ClientHttp2Session, headers: OutgoingHttpHeaders): Trickled {
  const started = Date.now();
  const stream = session.request(headers);
  const done = outcome(stream, started);
  let status: number | undefined;
  stream.on('response', (answer: IncomingHttpHeaders) => {
    status = Number(answer[':status']);
  });
  const timer = setInterval(() => {
    if (stream.destroyed || stream.closed) clearInterval(timer);
    else stream.write(' ');
  }, 100);
  let closeEmitted = false;
  void done.finally(() => {
    closeEmitted = true;
    clearInterval(timer);
  });
  return {
    done,
    state: () =>
      `status ${status ?? 'none'}, rstCode ${stream.rstCode ?? 'none'}, stream closed ${stream.closed}, 'close' emitted ${closeEmitted}, ` +
      `answer ended ${stream.readableEnded}, writes pending ${stream.writableLength}, ${Date.now() - started} ms`,
  };
}

/** The outcomes of `streams`, or an error stating each one's state if they have not all closed within `ms`. */
function allClosed(what: string, streams: readonly Trickled[], ms: number): Promise<StreamOutcome[]> {
  const states = (): string => `${what} did not all close (${streams.map((s, i) => `#${i + 1}: ${s.state()}`).join('; ')})`;
  return within(states, ms, Promise.all(streams.map((s) => s.done)));
}

function toolsList(session: ClientHttp2Session): Promise<StreamOutcome> {
  const stream = session.request({ ':method': 'POST', ':path': '/mcp', ...MCP_HEADERS });
  const done = outcome(stream);
  stream.end(TOOLS_LIST);
  return done;
}

t.test('slow clients on a TLS socket offering HTTP/2 are cut off while other clients are served', async (t) => {
  const served = await serve(t);
  const probe = await wellBehaved(t, served);
  await probe();

  t.test('HTTP/1.1 over TLS, slow headers: 408 and closed past HeadersTimeout', async (t) => {
    const head = `POST /mcp HTTP/1.1\r\nHost: ${DOMAIN}\r\n`;
    const abuse = Promise.all(Array.from({ length: 10 }, () => dripping(served, head, 'X-Slow: a\r\n', 250)));
    const rounds = await throughout(abuse, probe);
    t.ok(rounds >= 2, `the well-behaved client was served ${rounds} times during the abuse`);
    for (const r of await abuse) {
      t.equal(r.alpn, 'http/1.1', 'the connection is HTTP/1.1 over TLS');
      t.ok(r.closedByServer, 'the server closed the connection');
      t.equal(parseResponses(r.bytes)[0]?.status, 408, 'answered 408 Request Timeout');
      t.ok(r.elapsedMs >= HEADERS_TIMEOUT_MS - 100, 'not before HeadersTimeout');
    }
  });

  t.test('HTTP/1.1 over TLS, slow body: 408 and closed past ReceiveTimeout', async (t) => {
    const body = TOOLS_LIST.padEnd(2_000, ' ');
    const head =
      `POST /mcp HTTP/1.1\r\nHost: ${DOMAIN}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n` +
      `Authorization: Bearer ${KEY}\r\nContent-Length: ${body.length}\r\n\r\n`;
    const abuse = Promise.all(Array.from({ length: 5 }, () => dripping(served, head, body, 100)));
    const rounds = await throughout(abuse, probe);
    t.ok(rounds >= 2, `the well-behaved client was served ${rounds} times during the abuse`);
    for (const r of await abuse) {
      t.ok(r.closedByServer, 'the server closed the connection');
      t.equal(parseResponses(r.bytes)[0]?.status, 408, 'answered 408 Request Timeout');
      t.ok(r.elapsedMs >= RECEIVE_TIMEOUT_MS - 100, 'not before ReceiveTimeout');
    }
  });

  t.test('HTTP/2, a trickled body: the stream is answered 408, the same session serves other streams', async (t) => {
    const session = await h2Session(served.port, served.ca);
    t.teardown(() => session.destroy());
    t.equal(session.alpnProtocol, 'h2', 'the session is HTTP/2');
    const slowStreams = Array.from({ length: 3 }, () => trickle(session, { ':method': 'POST', ':path': '/mcp', ...MCP_HEADERS, 'content-length': '2000' }));
    // A stream never closed fails here, stating each one's state, well before tap's timeout.
    const abuse = allClosed('the slow streams', slowStreams, RECEIVE_TIMEOUT_MS + STREAMS_SLACK_MS);
    let sameSession = 0;
    const rounds = await throughout(abuse, async () => {
      await probe();
      const beside = await within('tools/list on the slow session', 15_000, toolsList(session));
      if (beside.status !== 200) throw new Error(`a stream beside the slow ones was answered ${beside.status}`);
      sameSession += 1;
    });
    t.ok(rounds >= 2, `the well-behaved client was served ${rounds} times during the abuse`);
    t.ok(sameSession >= 2, `streams on the slow streams' own session were answered 200 (${sameSession}) meanwhile`);
    for (const r of await within('the slow streams', SLACK_MS + RECEIVE_TIMEOUT_MS, abuse)) {
      t.equal(r.status, 408, 'the trickling stream was answered 408 Request Timeout');
      t.ok(r.endStream, 'a complete answer (END_STREAM) before the reset (RFC 9113 §8.1)');
      t.equal(r.rstCode, 0, 'then reset with NO_ERROR: the rest of the body is refused');
      t.ok(r.elapsedMs >= RECEIVE_TIMEOUT_MS - 100, 'not before ReceiveTimeout');
    }
    t.notOk(session.closed || session.destroyed, 'the session is still open');
    const after = await toolsList(session);
    t.equal(after.status, 200, 'and serves a new stream afterwards');
    t.match(JSON.parse(after.body), { id: 1, result: { tools: Array } });
  });

  t.test('HTTP/2, a session that never sends HEADERS: closed past HeadersTimeout', async (t) => {
    const sessions = await Promise.all(Array.from({ length: 5 }, () => h2Session(served.port, served.ca)));
    const abuse = Promise.all(
      sessions.map(
        (session) =>
          new Promise<{ elapsedMs: number; goaway: boolean; closedByServer: boolean }>((resolve) => {
            const started = Date.now();
            let goaway = false;
            session.on('goaway', () => {
              goaway = true;
            });
            session.on('error', () => {});
            const giveUp = setTimeout(() => session.destroy(), HEADERS_TIMEOUT_MS + SLACK_MS);
            session.once('close', () => {
              clearTimeout(giveUp);
              resolve({ elapsedMs: Date.now() - started, goaway, closedByServer: Date.now() - started < HEADERS_TIMEOUT_MS + SLACK_MS });
            });
          }),
      ),
    );
    const rounds = await throughout(abuse, probe);
    t.ok(rounds >= 2, `the well-behaved client was served ${rounds} times during the abuse`);
    for (const r of await abuse) {
      t.ok(r.closedByServer, 'the server closed the session');
      t.ok(r.goaway, 'with GOAWAY');
      t.ok(r.elapsedMs >= HEADERS_TIMEOUT_MS - 100, 'not before HeadersTimeout');
    }
  });

  t.test('HTTP/2 chosen by ALPN, then not even the preface: closed past HeadersTimeout', async (t) => {
    const sockets = await Promise.all(Array.from({ length: 5 }, () => openTls(served, 'h2')));
    const started = Date.now();
    const abuse = Promise.all(sockets.map((s) => collect(s, HEADERS_TIMEOUT_MS + SLACK_MS)));
    const rounds = await throughout(abuse, probe);
    t.ok(rounds >= 2, `the well-behaved client was served ${rounds} times during the abuse`);
    const results = await abuse;
    t.same(
      sockets.map((s) => s.alpnProtocol),
      sockets.map(() => 'h2'),
      'each connection negotiated h2',
    );
    t.equal(results.filter((r) => r.closedByServer).length, sockets.length, 'every connection was closed by the server');
    t.ok(Date.now() - started >= HEADERS_TIMEOUT_MS - 100, 'not before HeadersTimeout');
  });

  t.test('a TCP connection that never starts the TLS handshake: closed past HeadersTimeout', async (t) => {
    const sockets = await Promise.all(Array.from({ length: 5 }, () => openSocket(served.port)));
    const started = Date.now();
    const abuse = Promise.all(sockets.map((s) => collect(s, HEADERS_TIMEOUT_MS + SLACK_MS)));
    const rounds = await throughout(abuse, probe);
    t.ok(rounds >= 2, `the well-behaved client was served ${rounds} times during the abuse`);
    t.equal((await abuse).filter((r) => r.closedByServer).length, sockets.length, 'every connection was closed by the server');
    t.ok(Date.now() - started >= HEADERS_TIMEOUT_MS - 100, 'not before HeadersTimeout');
  });

  t.test('afterwards: ready, served, nothing logged as a failure', async (t) => {
    await probe();
    const { restarts, defects } = defectLines(served.logs.lines);
    t.equal(restarts, 0, 'no restart');
    t.same(
      defects.map((l) => l.event),
      [],
      'no defect line',
    );
    t.notOk(served.logs.raw().includes(KEY), 'no key in any log line');
  });
});

t.test('HTTP/2, a stream answered before its body arrived: reset with CANCEL past ReceiveTimeout, the session goes on', async (t) => {
  const dir = tempDir(t);
  const ca = createCa(dir, 'cancel-root');
  const leaf = issue(ca, { name: 'cancel', dns: [DOMAIN], eku: ['serverAuth'], keyUsage: ['digitalSignature'] });
  const limits = Connections.parse({ HeadersTimeout: '00:00:02', ReceiveTimeout: '00:00:02', IdleTimeout: '00:00:30' });
  // Answers at once, then reads the body and ends the answer when it is complete.
  const handler = ((req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.write('begun\n');
    req.resume();
    req.on('end', () => res.end('done\n'));
  }) as SurfaceHandler;
  const server = createTlsServer(handler, {
    profiles: [{ domain: DOMAIN, key: leaf.key, chain: leaf.cert, minVersion: 'TLSv1.2' }],
    protocols: ['Http1', 'Http2'],
    requestClientCertificate: false,
    limits,
  });
  const address = await listen(server, 'McpEndpoint:Https:Endpoints:0', '127.0.0.1', 0, limits);
  t.teardown(() => close(server));
  const session = await h2Session(address.port, ca);
  t.teardown(() => session.destroy());

  const slow = trickle(session, { ':method': 'POST', ':path': '/upload', 'content-length': '2000' });
  const slowDone = within(() => `the trickling stream did not close (${slow.state()})`, 2_000 + STREAMS_SLACK_MS, slow.done);
  const quick = session.request({ ':method': 'POST', ':path': '/upload' });
  const quickDone = outcome(quick);
  quick.end('all of it');

  const q = await quickDone;
  t.equal(q.status, 200, 'a stream whose body arrived at once is answered');
  t.equal(q.body, 'begun\ndone\n', 'in full');
  const s = await slowDone;
  t.equal(s.status, 200, 'the trickling stream had been answered 200 before its body arrived');
  t.equal(s.rstCode, 8, 'then reset with CANCEL (0x8)');
  t.ok(s.elapsedMs >= 2_000 - 100, 'not before ReceiveTimeout');
  t.notOk(s.body.includes('done'), 'its answer was not completed');
  t.notOk(session.closed || session.destroyed, 'the session is still open');
  const again = session.request({ ':method': 'POST', ':path': '/upload' });
  const againDone = outcome(again);
  again.end('x');
  t.equal((await againDone).status, 200, 'and serves a new stream afterwards');
});
