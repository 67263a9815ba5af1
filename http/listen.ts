/**
 * Opening and closing a listener, shared by every surface. A port that
 * another process holds fails startup with a sentence naming the section
 * (clashes inside this process are refused earlier, by configuration).
 */
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Connections, type ConnectionLimits } from '../config/schema/connections.ts';
import { AppError } from '../runtime/errors.ts';
import { ExchangeResponse } from './pipeline/exchange-response.ts';

/**
 * How often Node looks for connections past `HeadersTimeout` or
 * `ReceiveTimeout` (its default, 30 s, would let a slow client overstay a
 * bound by that much). A cut-off comes at most this long after its bound.
 */
export const CONNECTION_CHECK_MS = 1_000;

/** What every node:http(s) server is made with, for the connection bounds to be looked at in time. */
export const SERVER_OPTIONS = { connectionsCheckingInterval: CONNECTION_CHECK_MS } as const;

/**
 * A clear-text node:http server answering with `handler`, not yet listening:
 * every listener of the process (MCP, administrative, health, redirect,
 * Prometheus scrape) is made here, with one response class. node:http's own
 * functions (`writeHead`, `setHeader`, `resOnFinish`, the parser's callbacks)
 * run for every listener; a second response class reaching them now and then
 * (a probe, a scrape) deoptimises them and leaves them polymorphic for the
 * hot path: +7% of the main thread's CPU per `/mcp` call once a Prometheus
 * listener was scraped (docs/performance.md "Telemetry", TM16–TM17).
 */
export function httpServer(handler: (req: IncomingMessage, res: ServerResponse) => void): Server {
  const server = createServer(
    { ...SERVER_OPTIONS, ServerResponse: ExchangeResponse },
    handler as RequestListener<typeof IncomingMessage, typeof ExchangeResponse>,
  );
  // Outside, a listener is only opened and closed: the response class is this module's business.
  return server as unknown as Server;
}

/**
 * The section's `Connections` bounds (docs/security.md "Connection limits").
 * The default idle time (65 s) outlasts clients and proxies that keep a
 * connection 60 s: Node's own 5 s raced clients reusing a connection after
 * a pause (seen in the search bench as "fetch failed").
 *
 * On a socket that offers HTTP/2 (node:http2's server) `IdleTimeout` is a
 * time without traffic; the header and receive bounds of its HTTP/2 streams
 * are kept by http/tls/http2-client-bounds.ts, those of its HTTP/1.1
 * fallback by node:http's check, which reads the values set here.
 */
export function applyConnectionLimits(server: Server, limits: ConnectionLimits): void {
  server.headersTimeout = limits.HeadersTimeout;
  server.requestTimeout = limits.ReceiveTimeout;
  server.keepAliveTimeout = limits.IdleTimeout;
  server.maxConnections = limits.MaxConnections;
  server.maxHeadersCount = limits.MaxHeaderCount;
  (server as Server & { maxHeaderSize?: number }).maxHeaderSize = limits.MaxHeaderBytes;
  if (server.constructor.name === 'Http2SecureServer') server.setTimeout(limits.IdleTimeout);
}

/** Opens `server` with the section's connection bounds (the defaults when none are given). */
export function listen(
  server: Server,
  section: string,
  bindAddress: string,
  port: number,
  limits: ConnectionLimits = Connections.parse({}),
): Promise<AddressInfo> {
  applyConnectionLimits(server, limits);
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => {
      const why =
        err.code === 'EADDRINUSE'
          ? 'is already in use by another process'
          : err.code === 'EACCES'
            ? 'may not be bound by this user'
            : `could not be bound (${err.code ?? 'unknown'})`;
      reject(new AppError('E_CONFIG_INVALID', { message: `${section}: ${bindAddress}:${port} ${why}` }));
    };
    server.once('error', onError);
    server.listen(port, bindAddress, () => {
      server.off('error', onError);
      resolve(server.address() as AddressInfo);
    });
  });
}

/** Stop accepting, end idle keep-alive connections, and give active ones until `graceMs`. */
export async function close(server: Server, graceMs = 2_000): Promise<void> {
  if (!server.listening) return;
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const timer = setTimeout(() => server.closeAllConnections(), graceMs);
  await closed;
  clearTimeout(timer);
}
