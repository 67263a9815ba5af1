/**
 * What the two OpenAI-compatible stand-ins share (embedding-standin.ts,
 * chat-standin.ts): a JSON server on 127.0.0.1 at an ephemeral port whose
 * `close()` destroys every socket (hung ones included, so no test waits on
 * it), the JSON answer, the OpenAI error body, and the faults both can be
 * scripted with.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** Faults either stand-in answers with: a status (with `Retry-After` and a body of choice), no answer until closed, a cut JSON body, a reset connection. */
export type StandinFault =
  | { kind: 'status'; status: number; retryAfter?: string; body?: string }
  | { kind: 'hang' }
  | { kind: 'malformed-json' }
  | { kind: 'reset' };

export type JsonServer = { readonly baseAddress: string; close(): Promise<void> };

/** Serves `handle` with each request's whole body as text. */
export async function startJsonServer(handle: (req: IncomingMessage, res: ServerResponse, raw: string) => void): Promise<JsonServer> {
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handle(req, res, Buffer.concat(chunks).toString('utf8')));
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseAddress: `http://127.0.0.1:${port}`,
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      server.closeAllConnections();
      await closed;
    },
  };
}

export function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/** An OpenAI error body. */
export function sendError(res: ServerResponse, status: number, message: string): void {
  send(res, status, { error: { message, type: 'invalid_request_error' } });
}

/** Answers with `fault`; `cutJson` is the start of a JSON body the endpoint would send, cut short. */
export function answerFault(req: IncomingMessage, res: ServerResponse, fault: StandinFault, cutJson: string): void {
  switch (fault.kind) {
    case 'hang':
      return; // answered by close(), which destroys the socket
    case 'reset':
      req.socket.resetAndDestroy();
      return;
    case 'malformed-json':
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(cutJson);
      return;
    case 'status': {
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (fault.retryAfter !== undefined) headers['retry-after'] = fault.retryAfter;
      res.writeHead(fault.status, headers);
      res.end(fault.body ?? JSON.stringify({ error: { message: `status ${fault.status}`, type: 'server_error' } }));
      return;
    }
  }
}
