/**
 * One request to the administrative endpoint and its whole answer, over
 * Node's own `node:http` / `node:https`. The client used undici before;
 * loading it cost more than half of a command's start-up (docs/performance.md
 * "Client start-up"), and the client needs none of what it adds.
 *
 * Per transport (one per command): keep-alive connections (a command sends
 * the session request and then its own), a 10-second limit on opening a
 * connection, and for a pinned profile a TLS connection that is judged by
 * its certificate's fingerprint before the request is written on it, so a
 * credential never reaches a certificate the profile has not pinned
 * (certificate.ts). The whole answer's limit is the caller's signal.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { connect as tlsConnect, type ConnectionOptions, type TLSSocket } from 'node:tls';
import { PinMismatch } from './certificate.ts';

export type Exchange = { status: number; headers: IncomingHttpHeaders; text: string };

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

export type Transport = {
  /** Sends the request and reads the answer in full; rejects with the socket's or parser's error, or the signal's when it aborts. */
  send(method: Method, url: URL, headers: Record<string, string>, body: string | undefined, signal: AbortSignal): Promise<Exchange>;
  /** Closes the kept-alive connections. */
  close(): void;
};

/** Destroys `socket` with ETIMEDOUT unless it is connected (`event`) within `limitMs`. */
function limitConnect<S extends Socket>(socket: S, event: 'connect' | 'secureConnect', limitMs: number): S {
  const timer = setTimeout(() => socket.destroy(Object.assign(new Error('connect timeout'), { code: 'ETIMEDOUT' })), limitMs);
  socket.once(event, () => clearTimeout(timer));
  socket.once('close', () => clearTimeout(timer));
  return socket;
}

class LimitedHttpAgent extends HttpAgent {
  readonly #connectLimitMs: number;
  constructor(connectLimitMs: number) {
    super({ keepAlive: true });
    this.#connectLimitMs = connectLimitMs;
  }
  override createConnection(options: object, callback?: (err: Error | null, socket: Duplex) => void): Duplex {
    return limitConnect(super.createConnection(options, callback) as Socket, 'connect', this.#connectLimitMs);
  }
}

class LimitedHttpsAgent extends HttpsAgent {
  readonly #connectLimitMs: number;
  constructor(connectLimitMs: number) {
    super({ keepAlive: true });
    this.#connectLimitMs = connectLimitMs;
  }
  override createConnection(options: object, callback?: (err: Error | null, socket: Duplex) => void): Duplex {
    return limitConnect(super.createConnection(options, callback) as TLSSocket, 'secureConnect', this.#connectLimitMs);
  }
}

/**
 * Hands the request a TLS connection only once it presents exactly the
 * pinned certificate: the chain and the name are not checked (the
 * fingerprint is the trust), sessions are not resumed (every connection
 * shows its certificate), and any other certificate ends the connection
 * with PinMismatch before anything is written.
 */
class PinnedHttpsAgent extends HttpsAgent {
  readonly #sha256: string;
  readonly #connectLimitMs: number;
  constructor(sha256: string, connectLimitMs: number) {
    super({ keepAlive: true, maxCachedSessions: 0 });
    this.#sha256 = sha256;
    this.#connectLimitMs = connectLimitMs;
  }
  // Node's Agent takes the socket from the callback when createConnection returns nothing (docs: agent.createConnection).
  override createConnection(options: object, callback: (err: Error | null, socket?: Duplex) => void): undefined {
    const socket = limitConnect(
      tlsConnect({ ...(options as ConnectionOptions), rejectUnauthorized: false, session: undefined }),
      'secureConnect',
      this.#connectLimitMs,
    );
    const failed = (err: Error): void => callback(err);
    socket.once('error', failed);
    socket.once('secureConnect', () => {
      socket.off('error', failed);
      const presented = socket.getPeerCertificate()?.fingerprint256;
      if (presented !== this.#sha256) {
        socket.destroy();
        callback(new PinMismatch(presented ?? 'none'));
        return;
      }
      callback(null, socket);
    });
    return undefined;
  }
}

export function createTransport(options: { certificateSha256?: string | undefined; connectLimitMs: number }): Transport {
  const http = new LimitedHttpAgent(options.connectLimitMs);
  const https = options.certificateSha256
    ? new PinnedHttpsAgent(options.certificateSha256, options.connectLimitMs)
    : new LimitedHttpsAgent(options.connectLimitMs);
  return {
    send(method, url, headers, body, signal) {
      const secure = url.protocol === 'https:';
      return new Promise<Exchange>((resolve, reject) => {
        const req = (secure ? httpsRequest : httpRequest)(url, { method, headers, agent: secure ? https : http, signal });
        req.once('error', reject);
        req.once('response', (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.once('error', reject);
          res.once('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
          // Closed before the end: the connection was lost mid-answer (a settled promise ignores this after 'end').
          res.once('close', () => reject(Object.assign(new Error('answer cut short'), { code: 'ECONNRESET' })));
        });
        req.end(body);
      });
    },
    close() {
      http.destroy();
      https.destroy();
    },
  };
}
