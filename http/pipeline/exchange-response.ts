/**
 * The response of one exchange on a listener built by http/pipeline.ts
 * (`createServer({ ServerResponse: ExchangeResponse })`): a node:http
 * response that knows two things the plain one does not.
 *
 * - Abandoned: the request timeout answered 504 (or cut off an answer
 *   already begun). From then on the handler still running is written
 *   nowhere: headers, writes and the end it attempts are dropped. This is
 *   what lets the MCP SDK's transport, which writes the response itself and
 *   cannot be told to stop, finish its work after a 504 without throwing
 *   "headers already sent" into its own error path.
 * - Lingering: after a 413 the rest of the request body is still arriving.
 *   `endAfter(drained)` makes the next `end()` write its answer at once, in
 *   full, but end the response (and with `Connection: close`, the
 *   connection) only when `drained` settles: closing a socket whose receive
 *   side still holds unread bytes sends a reset, which can take the 413 with
 *   it before the client reads it (RFC 9112 §9.6, "lingering close").
 *
 * One class body, two bases: `ExchangeResponse` (HTTP/1.1, node:http and
 * node:https) and `Http2ExchangeResponse` (the HTTP/2 compatibility API of
 * node:http2, what the TLS listeners serve h2 streams with:
 * http/tls/secure-server.ts). The pipeline sees one type: the HTTP/2 class
 * answers the same members. On HTTP/2 a connection-specific header
 * (`Connection`, `Keep-Alive`, …) is dropped rather than thrown on: the stream
 * ends, the connection is the client's, and a 413's lingering close has no
 * HTTP/2 counterpart (the rest of the body is refused by the stream's reset).
 *
 * Imported by http/pipeline.ts, http/pipeline/request-body.ts and the TLS listener.
 */
import { type IncomingMessage, ServerResponse } from 'node:http';
import { Http2ServerResponse } from 'node:http2';

type EndCallback = () => void;

/** Headers HTTP/2 forbids (RFC 9113 §8.2.2); node:http2 throws on them. */
const CONNECTION_SPECIFIC = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade']);

/** What the exchange calls on its base, whichever it is. */
type ResponseBase = {
  // biome-ignore lint/suspicious/noExplicitAny: the bases' overloads
  writeHead(...args: any[]): unknown;
  // biome-ignore lint/suspicious/noExplicitAny: the bases' overloads
  setHeader(name: string, value: any): unknown;
  // biome-ignore lint/suspicious/noExplicitAny: the bases' overloads
  write(...args: any[]): boolean;
  // biome-ignore lint/suspicious/noExplicitAny: the bases' overloads
  end(...args: any[]): unknown;
  flushHeaders?(): void;
  readonly destroyed: boolean;
};

// biome-ignore lint/suspicious/noExplicitAny: a mixin's base constructor (TypeScript requires any[] here)
type ResponseClass = new (...args: any[]) => ResponseBase;

function exchangeOf<Base extends ResponseClass>(Base: Base, http2: boolean) {
  return class Exchange extends Base {
    #abandoned = false;
    #drained: Promise<unknown> | null = null;

    /** Whether the request timeout abandoned the exchange: nothing the handler writes goes out any more. */
    get abandoned(): boolean {
      return this.#abandoned;
    }

    /** Called by the request timeout once its own answer (504, or cutting the connection) is done. */
    abandon(): void {
      this.#abandoned = true;
    }

    /** The next `end()` sends its answer now and ends the response once `drained` settles (HTTP/1.1 only). */
    endAfter(drained: Promise<unknown>): void {
      if (!http2) this.#drained = drained;
    }

    // The signatures below are the bases' overloads; `any` keeps the override assignable to every one of them.
    // biome-ignore lint/suspicious/noExplicitAny: the bases' overloads (above)
    override writeHead(...args: any[]): this {
      if (this.#abandoned) return this;
      // biome-ignore lint/suspicious/noExplicitAny: the bases' overloads
      return (super.writeHead as (...a: any[]) => this)(...args);
    }

    // biome-ignore lint/suspicious/noExplicitAny: the bases' overloads
    override setHeader(name: string, value: any): this {
      if (this.#abandoned || (http2 && CONNECTION_SPECIFIC.has(name.toLowerCase()))) return this;
      // biome-ignore lint/suspicious/noExplicitAny: the bases' overloads
      (super.setHeader as (...a: any[]) => unknown)(name, value);
      return this;
    }

    // biome-ignore lint/suspicious/noExplicitAny: the bases' overloads
    override write(...args: any[]): boolean {
      if (this.#abandoned) return true;
      // biome-ignore lint/suspicious/noExplicitAny: the bases' overloads
      return (super.write as (...a: any[]) => boolean)(...args);
    }

    // biome-ignore lint/suspicious/noExplicitAny: the bases' overloads
    override end(...args: any[]): this {
      if (this.#abandoned) return this;
      const drained = this.#drained;
      // biome-ignore lint/suspicious/noExplicitAny: the bases' overloads
      if (drained === null) return (super.end as (...a: any[]) => this)(...args);
      this.#drained = null;
      const callback = args.find((arg): arg is EndCallback => typeof arg === 'function');
      const chunk: unknown = typeof args[0] === 'function' ? undefined : args[0];
      const encoding = typeof args[1] === 'string' ? (args[1] as BufferEncoding) : undefined;
      // biome-ignore lint/suspicious/noExplicitAny: the bases' overloads
      const write = super.write as (...a: any[]) => boolean;
      // The whole answer goes out now (Content-Length says where it ends); only the end of the exchange waits.
      if (chunk === undefined || chunk === null) this.flushHeaders?.();
      else if (encoding === undefined) write.call(this, chunk);
      else write.call(this, chunk, encoding);
      const finish = (): void => {
        // biome-ignore lint/suspicious/noExplicitAny: the bases' overloads
        if (!this.destroyed) (super.end as (...a: any[]) => this)(callback);
      };
      void drained.then(finish, finish);
      return this;
    }
  };
}

/** The HTTP/1.1 exchange: what every handler is typed with. */
export class ExchangeResponse extends exchangeOf(ServerResponse<IncomingMessage>, false) {}

/** The same exchange over an HTTP/2 stream (node:http2's compatibility API), handed to handlers as an `ExchangeResponse`. */
export class Http2ExchangeResponse extends exchangeOf(Http2ServerResponse, true) {}
