/**
 * HTTP/1.1 over a raw `net` socket, for tests that must send what fetch and
 * undici normalise away (lying lengths, broken chunking, duplicated or
 * oversized headers, pipelining, slow bytes), and a reader of the answers
 * that came back.
 */
import { connect, type Socket } from 'node:net';

export type RawResponse = { status: number; headers: Record<string, string[]>; body: Buffer };

export type RawExchange = {
  /** Every byte the server sent before it closed the connection or `timeoutMs` passed. */
  bytes: Buffer;
  /** Whether the server closed the connection (false: the client gave up at `timeoutMs`). */
  closedByServer: boolean;
  /** Whether the connection was reset rather than closed in order. */
  reset: boolean;
};

/** Opens a connection to loopback `port`, resolving once connected. */
export function openSocket(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.off('error', reject);
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

/**
 * Collects what the server sends on `socket` until it closes the connection
 * or `timeoutMs` passes (then the client closes it). Never rejects.
 */
export function collect(socket: Socket, timeoutMs: number, until?: (bytes: Buffer) => boolean): Promise<RawExchange> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let reset = false;
    let settled = false;
    const settle = (closedByServer: boolean): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ bytes: Buffer.concat(chunks), closedByServer, reset });
    };
    const timer = setTimeout(() => settle(false), timeoutMs);
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      if (until?.(Buffer.concat(chunks))) settle(true);
    });
    socket.on('error', () => {
      reset = true;
    });
    socket.once('close', () => settle(true));
  });
}

/** Sends `request` on a fresh connection and collects the answer (see `collect`). */
export async function exchange(port: number, request: Buffer | string, timeoutMs: number): Promise<RawExchange> {
  const socket = await openSocket(port);
  const done = collect(socket, timeoutMs);
  socket.write(request, () => {});
  return done;
}

/**
 * The responses in `bytes`, in order: status, headers (lower-cased names)
 * and a body framed by Content-Length or chunked encoding. A response cut
 * short ends the list and is not in it (`statusesOf` counts it).
 */
export function parseResponses(bytes: Buffer): RawResponse[] {
  const responses: RawResponse[] = [];
  let at = 0;
  while (at < bytes.length) {
    const end = bytes.indexOf('\r\n\r\n', at);
    if (end === -1) break;
    const head = bytes.subarray(at, end).toString('latin1').split('\r\n');
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head[0] ?? '')?.[1]);
    if (!Number.isInteger(status)) break;
    const headers: Record<string, string[]> = {};
    for (const line of head.slice(1)) {
      const colon = line.indexOf(':');
      if (colon <= 0) continue;
      const name = line.slice(0, colon).trim().toLowerCase();
      const values = headers[name] ?? [];
      values.push(line.slice(colon + 1).trim());
      headers[name] = values;
    }
    at = end + 4;
    let body: Buffer = Buffer.alloc(0);
    if (headers['transfer-encoding']?.some((v) => /chunked/i.test(v))) {
      const parts: Buffer[] = [];
      for (;;) {
        const lineEnd = bytes.indexOf('\r\n', at);
        if (lineEnd === -1) return responses;
        const size = Number.parseInt(bytes.subarray(at, lineEnd).toString('latin1'), 16);
        at = lineEnd + 2;
        if (!Number.isFinite(size) || size === 0) {
          at += 2;
          break;
        }
        if (at + size + 2 > bytes.length) return responses;
        parts.push(bytes.subarray(at, at + size));
        at += size + 2;
      }
      body = Buffer.concat(parts);
    } else {
      const length = Number(headers['content-length']?.[0] ?? 0);
      if (at + length > bytes.length) break;
      body = bytes.subarray(at, at + length);
      at += length;
    }
    responses.push({ status, headers, body });
  }
  return responses;
}

/** The status of every response begun in `bytes`, complete or cut short. */
export function statusesOf(bytes: Buffer): number[] {
  return [...bytes.toString('latin1').matchAll(/(?:^|\r\n)HTTP\/1\.[01] (\d{3}) /g)].map((m) => Number(m[1]));
}
