/**
 * The `Connections` bounds on a TLS socket that offers HTTP/2
 * (docs/security.md "Connection limits"). node:http2's server tracks no
 * header or receive time for its streams, so the bounds are kept here:
 *
 * - A session whose first stream's HEADERS have not arrived within
 *   `HeadersTimeout` (or `ReceiveTimeout`, the smaller) is closed: GOAWAY,
 *   then destroyed if it lingers.
 * - A stream whose request body has not fully arrived within
 *   `ReceiveTimeout` of its HEADERS is answered 408 when nothing was
 *   answered yet, else reset with CANCEL; the session keeps serving its
 *   other streams.
 * - `MaxHeaderBytes`/`MaxHeaderCount` are the session's
 *   `maxHeaderListSize` setting and `maxHeaderListPairs` (given at
 *   construction by `http2Options`).
 * - The HTTP/1.1 fallback (`allowHTTP1`) is node:http's own parser and
 *   connection check, which reads the server's `headersTimeout` and
 *   `requestTimeout` (http/listen.ts); only its interval is set here, to the
 *   clear-text one.
 *
 * One timer per session until its first stream, one per stream with a body
 * until the stream closes; all unref'd, all cleared on close.
 */
import type { Server } from 'node:http';
import { constants, type Http2ServerRequest, type Http2ServerResponse, type Http2Session, type ServerHttp2Stream } from 'node:http2';
import type { ConnectionLimits } from '../../config/schema/connections.ts';
import { CONNECTION_CHECK_MS } from '../listen.ts';

/** How long a session told to go away (GOAWAY) may take to close before it is destroyed. */
const GOAWAY_GRACE_MS = 1_000;

/** Options of `createSecureServer` that carry the header bounds. */
export function http2Options(limits: ConnectionLimits): { settings: { maxHeaderListSize: number }; maxHeaderListPairs: number } {
  return { settings: { maxHeaderListSize: limits.MaxHeaderBytes }, maxHeaderListPairs: limits.MaxHeaderCount };
}

/** A TLS handshake is part of the time before the first request's headers. */
export function handshakeTimeoutOf(limits: ConnectionLimits): number {
  return Math.min(limits.HeadersTimeout, limits.ReceiveTimeout);
}

/** An answer the handler may still try to write after a cut-off (http/pipeline/exchange-response.ts). */
type Abandonable = Http2ServerResponse & { abandon?(): void };

/** Keeps the header and receive bounds on `server`, a node:http2 secure server. */
export function boundHttp2Clients(server: Server, limits: ConnectionLimits): void {
  (server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval = CONNECTION_CHECK_MS;
  const headersMs = handshakeTimeoutOf(limits);

  server.on('session', (session: Http2Session) => {
    const timer = setTimeout(() => goAway(session), headersMs).unref();
    const clear = (): void => clearTimeout(timer);
    session.once('stream', clear);
    session.once('close', clear);
  });

  server.on('request', (req: Http2ServerRequest, res: Http2ServerResponse) => {
    if (req.httpVersionMajor !== 2) return; // the HTTP/1.1 fallback: node:http's own check
    const stream = req.stream;
    if (stream.endAfterHeaders) return; // no body to wait for
    const timer = setTimeout(() => cutOff(stream, res as Abandonable), limits.ReceiveTimeout).unref();
    stream.once('close', () => clearTimeout(timer));
  });
}

function goAway(session: Http2Session): void {
  if (session.destroyed) return;
  session.close();
  const force = setTimeout(() => session.destroy(), GOAWAY_GRACE_MS).unref();
  session.once('close', () => clearTimeout(force));
}

/** The body has not fully arrived: 408 if nothing was answered yet, else a reset; other streams go on. */
function cutOff(stream: ServerHttp2Stream, res: Abandonable): void {
  if (stream.destroyed || stream.state.remoteClose === 1) return;
  if (!res.headersSent) {
    // The status set and `end()` alone, not `writeHead`: the compatibility API then sends one HEADERS frame
    // with END_STREAM. After `writeHead` it closes the stream with trailers sent a turn later, which the
    // reset below overtakes: the 408 was never complete on the wire.
    res.statusCode = 408;
    res.setHeader('content-length', '0');
    res.end();
    res.abandon?.();
    // After the complete answer, RST_STREAM NO_ERROR: the rest of the body is not wanted (RFC 9113 §8.1).
    stream.close(constants.NGHTTP2_NO_ERROR);
    return;
  }
  res.abandon?.();
  stream.close(constants.NGHTTP2_CANCEL);
}
