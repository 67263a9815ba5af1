/**
 * Opening and closing a listener, shared by every surface. A port that
 * another process holds fails startup with a sentence naming the section
 * (clashes inside this process are refused earlier, by configuration).
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AppError } from '../runtime/errors.ts';

/**
 * Idle keep-alive connections are kept this long. Node's default (5 s) races
 * clients that reuse a connection after a pause: the server closes it as the
 * next request is sent, and the client sees "fetch failed" (seen in the
 * search bench, where notmuch runs between MCP calls). Clients and proxies
 * commonly keep connections 60 s, so the server outlasts them.
 */
const KEEP_ALIVE_MS = 65_000;

export function listen(server: Server, section: string, bindAddress: string, port: number): Promise<AddressInfo> {
  server.keepAliveTimeout = KEEP_ALIVE_MS;
  server.headersTimeout = KEEP_ALIVE_MS + 1_000;
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
