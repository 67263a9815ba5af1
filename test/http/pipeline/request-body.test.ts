/**
 * The one request-body reader over a real listener built by the pipeline
 * (createListener, so the response is the pipeline's ExchangeResponse),
 * asked by undici and by a raw socket that behaves as a client can:
 * a body within the limit is read whole; a declared Content-Length past the
 * limit is answered 413 before the body is sent at all; a chunked body that
 * grows past the limit is answered 413 while the client is still sending,
 * and the client reads the 413 rather than a reset; the connection closes
 * once the rest is drained, or after the linger bound when it never comes.
 */
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { request } from 'undici';
import { answerEmpty, createListener, readBody } from '../../../http/pipeline.ts';
import { LINGER_MS } from '../../../http/pipeline/request-body.ts';

const LIMIT = 64 * 1024;

type Seen = { reads: string[]; failures: unknown[] };

async function setup(t: { teardown(fn: () => unknown): void }): Promise<{ port: number; url: string; seen: Seen }> {
  const seen: Seen = { reads: [], failures: [] };
  const server = createListener({
    surface: 'mcp',
    route: () => ({
      template: '/',
      handler: async (req, res) => {
        const read = await readBody(req, res, LIMIT);
        seen.reads.push(read.kind);
        if (read.kind === 'gone') return;
        if (read.kind === 'too-large') return answerEmpty(res, 413);
        res.setHeader('Content-Type', 'text/plain');
        res.end(String(read.bytes.length));
      },
    }),
    failed: (err) => seen.failures.push(err),
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const { port } = server.address() as AddressInfo;
  return { port, url: `http://127.0.0.1:${port}/`, seen };
}

async function* chunks(total: number, size = 16 * 1024): AsyncGenerator<Buffer> {
  for (let sent = 0; sent < total; sent += size) yield Buffer.alloc(Math.min(size, total - sent), 0x78);
}

/** A raw HTTP/1.1 exchange: what the socket received, and when the first byte and the close came. */
type Raw = { text: string; firstByteAt: number | null; closedAt: number; error: string | null };

function rawExchange(port: number, head: string, send: (socket: import('node:net').Socket) => Promise<void>): Promise<Raw> {
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = connect(port, '127.0.0.1');
    let text = '';
    let firstByteAt: number | null = null;
    let error: string | null = null;
    socket.on('data', (data) => {
      firstByteAt ??= Date.now() - started;
      text += data.toString('latin1');
    });
    socket.on('error', (err: NodeJS.ErrnoException) => (error = err.code ?? err.message));
    socket.on('close', () => resolve({ text, firstByteAt, closedAt: Date.now() - started, error }));
    socket.on('connect', () => {
      socket.write(head);
      void send(socket).catch(() => {});
    });
  });
}

/** Writes `total` bytes of chunked body with backpressure, ending the body unless `end` is false. */
async function writeChunked(socket: import('node:net').Socket, total: number, end = true): Promise<void> {
  for await (const chunk of chunks(total)) {
    if (socket.destroyed) return;
    socket.write(`${chunk.length.toString(16)}\r\n`);
    socket.write(chunk);
    if (!socket.write('\r\n')) await new Promise((resolve) => socket.once('drain', resolve).once('close', resolve));
  }
  if (end && !socket.destroyed) socket.write('0\r\n\r\n');
}

t.test('a body within the limit is read whole, declared or chunked', async (t) => {
  const s = await setup(t);
  const declared = await request(s.url, { method: 'POST', body: Buffer.alloc(LIMIT, 0x61) });
  t.equal(declared.statusCode, 200);
  t.equal(await declared.body.text(), String(LIMIT), 'exactly the limit is taken');
  const chunked = await request(s.url, { method: 'POST', body: Readable.from(chunks(LIMIT - 1)) });
  t.equal(chunked.statusCode, 200);
  t.equal(await chunked.body.text(), String(LIMIT - 1));
  t.same(s.seen.reads, ['ok', 'ok']);
});

t.test('a declared Content-Length past the limit: 413 before a byte of the body is sent', async (t) => {
  const s = await setup(t);
  // The client declares a body and sends none of it: the answer cannot be waiting for the body.
  const raw = await rawExchange(s.port, `POST / HTTP/1.1\r\nHost: x\r\nContent-Length: ${LIMIT + 1}\r\n\r\n`, async () => {});
  t.match(raw.text, /^HTTP\/1\.1 413 /, 'the 413 arrives');
  t.match(raw.text, /\r\nconnection: close\r\n/i, 'and says the connection closes');
  t.match(raw.text, /\r\ncontent-length: 0\r\n/i);
  t.ok(raw.firstByteAt !== null && raw.firstByteAt < LINGER_MS / 2, `answered at once (${raw.firstByteAt} ms)`);
  t.ok(raw.closedAt >= LINGER_MS - 100, `the connection closed after the linger bound (${raw.closedAt} ms), the body never having come`);
  t.equal(raw.error, null, 'no reset');

  for (const size of [LIMIT + 1, 4 * 1024 * 1024]) {
    const res = await request(s.url, { method: 'POST', body: Buffer.alloc(size, 0x78) });
    t.equal(res.statusCode, 413, `undici sending ${size} declared bytes reads the 413`);
    t.equal(await res.body.text(), '');
  }
  t.same(s.seen.reads, ['too-large', 'too-large', 'too-large']);
  t.same(s.seen.failures, []);
});

t.test('a chunked body growing past the limit: 413 while the client still sends, received rather than reset', async (t) => {
  const s = await setup(t);
  for (const total of [LIMIT + 1, 2 * LIMIT, 8 * 1024 * 1024]) {
    const res = await request(s.url, { method: 'POST', body: Readable.from(chunks(total)) });
    t.equal(res.statusCode, 413, `undici streaming ${total} bytes reads the 413`);
    t.equal(res.headers.connection, 'close');
    t.equal(await res.body.text(), '');
  }

  // A client that sends the whole body, reading nothing until it is done, still finds the 413 waiting.
  const whole = await rawExchange(s.port, 'POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n', (socket) =>
    writeChunked(socket, 8 * 1024 * 1024),
  );
  t.match(whole.text, /^HTTP\/1\.1 413 /, 'after a whole 8 MiB chunked body');
  t.equal(whole.error, null, 'no reset');

  // A client that passes the limit and then stalls: the answer does not wait for the end of the body.
  const stalled = await rawExchange(s.port, 'POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n', (socket) =>
    writeChunked(socket, 2 * LIMIT, false),
  );
  t.match(stalled.text, /^HTTP\/1\.1 413 /);
  t.ok(stalled.firstByteAt !== null && stalled.firstByteAt < LINGER_MS / 2, `answered once past the limit (${stalled.firstByteAt} ms)`);
  t.ok(stalled.closedAt >= LINGER_MS - 100, `closed after the linger bound (${stalled.closedAt} ms)`);
  t.equal(stalled.error, null);
  t.same(s.seen.reads, ['too-large', 'too-large', 'too-large', 'too-large', 'too-large']);
  t.same(s.seen.failures, []);
});

t.test('the client going away mid-body is nobody to answer', async (t) => {
  const s = await setup(t);
  const raw = await rawExchange(s.port, `POST / HTTP/1.1\r\nHost: x\r\nContent-Length: ${LIMIT}\r\n\r\n`, async (socket) => {
    socket.write(Buffer.alloc(100));
    await sleep(50);
    socket.destroy();
  });
  t.equal(raw.text, '');
  await sleep(50);
  t.same(s.seen.reads, ['gone']);
  t.same(s.seen.failures, []);
});
