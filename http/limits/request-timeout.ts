/**
 * `RequestTimeout` of an HTTP surface (docs/security.md "Request timeout"):
 * a request still running after `Duration` is abandoned: answered 504 with
 * an empty body if nothing was sent yet (the connection is destroyed
 * otherwise, since a half-sent answer cannot be turned into a 504), its
 * in-flight work is told through an AbortSignal, and `onTimeout` runs so the
 * caller releases its rate-limiter permit.
 *
 * The same signal also aborts when the client goes away before the answer is
 * complete, so work nobody will read stops either way. `deadline` is the
 * absolute instant (epoch ms) an actor `ask` made on behalf of the request
 * should carry (every `ask` carries a deadline: docs/actors.md), or null when
 * the timeout is off.
 *
 * Start it before the limiter and pass `signal` to `acquire`, so the queue
 * wait counts toward the bound and ends with it.
 *
 * Imported by the listeners.
 */
import type { ServerResponse } from 'node:http';
import { Codes } from '../../runtime/errors.ts';

export type RequestTimeoutSettings = { readonly Enabled: boolean; readonly Duration: number };

export type RequestDeadline = {
  /** Aborts on timeout (reason: a `TimeoutError` DOMException) or when the client goes away (an `AbortError`). */
  readonly signal: AbortSignal;
  /** Epoch milliseconds after which the request is abandoned; null when the timeout is off. */
  readonly deadline: number | null;
  /** Whether the request was abandoned with 504 (or, headers already sent, by destroying the connection). */
  timedOut(): boolean;
};

export function withRequestTimeout(res: ServerResponse, settings: RequestTimeoutSettings, onTimeout: () => void): RequestDeadline {
  const controller = new AbortController();
  let timedOut = false;
  let timer: NodeJS.Timeout | undefined;

  const expire = (): void => {
    timer = undefined;
    if (res.writableEnded || res.destroyed) return;
    timedOut = true;
    // The abandoned handler may still try to write; that must not become an
    // unhandled 'error' event (write after end) and take the process down.
    res.on('error', () => {});
    if (!res.headersSent) {
      res.statusCode = Codes.E_HTTP_REQUEST_TIMEOUT.status;
      res.setHeader('Cache-Control', 'no-store');
      res.setHeader('Content-Length', 0);
      // The request body may be unread: do not reuse the connection.
      res.setHeader('Connection', 'close');
      res.end();
    } else {
      res.destroy();
    }
    controller.abort(new DOMException('request timeout exceeded', 'TimeoutError'));
    onTimeout();
  };

  if (settings.Enabled) {
    timer = setTimeout(expire, settings.Duration);
    // A pending bound never keeps a stopping process alive; the socket does that.
    timer.unref();
  }
  res.once('close', () => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    if (!res.writableFinished && !controller.signal.aborted) {
      controller.abort(new DOMException('client went away', 'AbortError'));
    }
  });

  return {
    signal: controller.signal,
    deadline: settings.Enabled ? Date.now() + settings.Duration : null,
    timedOut: () => timedOut,
  };
}
