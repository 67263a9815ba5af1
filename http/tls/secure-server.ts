/**
 * A TLS listener for the profiles that share one address and port
 * (docs/security.md "HTTPS profiles"): the certificate is chosen by the
 * server name the client sends (SNI), HTTP/1.1 and HTTP/2 are offered by
 * ALPN as the profiles' `HttpProtocols` say, and every request is handed to
 * the surface's handler, the same pipeline as on clear text.
 *
 * - An unknown server name, or none, ends the handshake: there is no default
 *   certificate (the server's own context holds none, so a handshake without
 *   SNI finds nothing to present).
 * - `MinimumTlsVersion` is per profile, but OpenSSL fixes the version range
 *   before the server name is known. The socket offers the lowest floor of
 *   its profiles, and a connection whose negotiated version is below its own
 *   profile's floor is ended right after the handshake, before any request.
 * - HTTP/2 (node:http2's compatibility API) and HTTP/1.1 responses are both
 *   exchanges (http/pipeline/exchange-response.ts); an HTTP/2 request's
 *   `:authority` is copied to `Host` when it carries none, so the stages that
 *   read `Host` (forwarded headers, metadata, the host guard) read one field.
 * - With client-certificate profiles the handshake asks for a certificate
 *   and accepts any (`rejectUnauthorized: false`): whether it identifies a
 *   client is judged per request on `/mcp` (http/tls/client-certificates.ts),
 *   so withdrawing a client takes effect on a kept-alive connection too.
 *
 * Imported by the composition root (service/app.ts).
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createSecureServer, type Http2ServerRequest, type Http2ServerResponse } from 'node:http2';
import { createSecureContext, type SecureContext, type TLSSocket } from 'node:tls';
import { Connections, type ConnectionLimits } from '../../config/schema/connections.ts';
import { ExchangeResponse, Http2ExchangeResponse } from '../pipeline/exchange-response.ts';
import { SERVER_OPTIONS } from '../listen.ts';
import type { SurfaceHandler } from '../pipeline.ts';
import { boundHttp2Clients, handshakeTimeoutOf, http2Options } from './http2-client-bounds.ts';

export type TlsVersion = 'TLSv1.2' | 'TLSv1.3';

/** One profile's certificate as the listener needs it (read and checked by http/tls/server-certificates.ts). */
export type SecureProfile = {
  readonly domain: string;
  /** PEM private key, in memory only. */
  readonly key: string;
  /** PEM chain, leaf first. */
  readonly chain: string;
  readonly minVersion: TlsVersion;
};

export type SecureServerOptions = {
  readonly profiles: readonly SecureProfile[];
  /** Identical for every profile on the socket (startup refuses otherwise). */
  readonly protocols: readonly ('Http1' | 'Http2')[];
  /** Ask the client for a certificate (the MCP surface with client-certificate profiles). */
  readonly requestClientCertificate: boolean;
  /**
   * The section's `Connections` (the defaults when absent). http/listen.ts
   * applies them again when the socket opens; the HTTP/2 header bounds and
   * the handshake time are fixed when the server is made.
   */
  readonly limits?: ConnectionLimits;
};

const VERSION_ORDER: Record<TlsVersion, number> = { 'TLSv1.2': 2, 'TLSv1.3': 3 };

/** Server names compare as DNS names: case-insensitively, without a trailing dot. */
function nameKey(name: string): string {
  return name.toLowerCase().replace(/\.$/, '');
}

export function createTlsServer(handler: SurfaceHandler, options: SecureServerOptions): Server {
  const byName = new Map<string, { context: SecureContext; minVersion: TlsVersion }>();
  for (const profile of options.profiles) {
    const context = createSecureContext({ key: profile.key, cert: profile.chain, minVersion: profile.minVersion });
    byName.set(nameKey(profile.domain), { context, minVersion: profile.minVersion });
  }
  const floor = options.profiles.reduce<TlsVersion>((low, p) => (VERSION_ORDER[p.minVersion] < VERSION_ORDER[low] ? p.minVersion : low), 'TLSv1.3');
  const limits = options.limits ?? Connections.parse({});
  const common = {
    minVersion: floor,
    handshakeTimeout: handshakeTimeoutOf(limits),
    SNICallback(servername: string, done: (err: Error | null, context?: SecureContext) => void): void {
      const profile = byName.get(nameKey(servername));
      if (profile === undefined) done(new Error('no profile serves this server name'));
      else done(null, profile.context);
    },
    ...(options.requestClientCertificate ? { requestCert: true, rejectUnauthorized: false } : {}),
  };

  const serve = (req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse): void => {
    if (req.httpVersionMajor === 2 && req.headers.host === undefined) {
      const authority = req.headers[':authority'];
      if (typeof authority === 'string') req.headers.host = authority;
    }
    handler(req as IncomingMessage, res as ExchangeResponse);
  };

  const http2 = options.protocols.includes('Http2');
  const server: Server = http2
    ? (createSecureServer({
        ...common,
        allowHTTP1: options.protocols.includes('Http1'),
        ...http2Options(limits),
        Http1ServerResponse: ExchangeResponse,
        Http2ServerResponse: Http2ExchangeResponse,
      } as Parameters<typeof createSecureServer>[0]) as unknown as Server)
    : createHttpsServer({ ...common, ...SERVER_OPTIONS, ServerResponse: ExchangeResponse } as Parameters<typeof createHttpsServer>[0]);
  server.on('request', serve);

  // A profile's own floor, once the server name and the version are both known.
  server.on('secureConnection', (socket: TLSSocket) => {
    const servername = (socket as TLSSocket & { servername?: string | false }).servername;
    const profile = typeof servername === 'string' ? byName.get(nameKey(servername)) : undefined;
    const version = socket.getProtocol() as TlsVersion | null;
    if (profile === undefined || version === null || !(version in VERSION_ORDER) || VERSION_ORDER[version] < VERSION_ORDER[profile.minVersion]) {
      socket.destroy();
    }
  });
  // A failed handshake (unknown name, no name, a version below every floor) is the client's business: nothing to log.
  server.on('tlsClientError', () => {});
  if (http2) {
    boundHttp2Clients(server, limits);
    closableLikeHttp(server);
  }
  return server;
}

/**
 * node:http2's server has no `closeIdleConnections`/`closeAllConnections`,
 * which the stop (http/listen.ts `close`) calls. Given here: idle means
 * "ask every HTTP/2 session to end once its streams are done" (GOAWAY); all
 * means every connection, HTTP/2 or HTTP/1.1, ended now.
 */
function closableLikeHttp(server: Server): void {
  const sockets = new Set<TLSSocket>();
  const sessions = new Set<{ close(): void; destroy(): void }>();
  server.on('secureConnection', (socket: TLSSocket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  server.on('session', (session: { close(): void; destroy(): void; once(event: 'close', f: () => void): void }) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
  });
  Object.assign(server, {
    closeIdleConnections(): void {
      for (const session of sessions) session.close();
    },
    closeAllConnections(): void {
      for (const session of sessions) session.destroy();
      for (const socket of sockets) socket.destroy();
    },
  });
}
