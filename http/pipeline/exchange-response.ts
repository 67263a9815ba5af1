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
 * Imported by http/pipeline.ts and http/pipeline/request-body.ts only.
 */
import { ServerResponse, type IncomingMessage } from 'node:http';

type EndCallback = () => void;

export class ExchangeResponse extends ServerResponse<IncomingMessage> {
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

  /** The next `end()` sends its answer now and ends the response once `drained` settles. */
  endAfter(drained: Promise<unknown>): void {
    this.#drained = drained;
  }

  // The signatures below are node:http's overloads; `any` keeps the override assignable to every one of them.
  // biome-ignore lint/suspicious/noExplicitAny: node:http's overloads (above)
  override writeHead(...args: any[]): this {
    if (this.#abandoned) return this;
    // biome-ignore lint/suspicious/noExplicitAny: node:http's overloads
    return (super.writeHead as (...a: any[]) => this)(...args);
  }

  override setHeader(name: string, value: number | string | readonly string[]): this {
    if (this.#abandoned) return this;
    return super.setHeader(name, value);
  }

  // biome-ignore lint/suspicious/noExplicitAny: node:http's overloads
  override write(...args: any[]): boolean {
    if (this.#abandoned) return true;
    // biome-ignore lint/suspicious/noExplicitAny: node:http's overloads
    return (super.write as (...a: any[]) => boolean)(...args);
  }

  // biome-ignore lint/suspicious/noExplicitAny: node:http's overloads
  override end(...args: any[]): this {
    if (this.#abandoned) return this;
    const drained = this.#drained;
    // biome-ignore lint/suspicious/noExplicitAny: node:http's overloads
    if (drained === null) return (super.end as (...a: any[]) => this)(...args);
    this.#drained = null;
    const callback = args.find((arg): arg is EndCallback => typeof arg === 'function');
    const chunk: unknown = typeof args[0] === 'function' ? undefined : args[0];
    const encoding = typeof args[1] === 'string' ? (args[1] as BufferEncoding) : undefined;
    // The whole answer goes out now (Content-Length says where it ends); only the end of the exchange waits.
    if (chunk === undefined || chunk === null) this.flushHeaders();
    else if (encoding === undefined) super.write(chunk);
    else super.write(chunk, encoding);
    const finish = (): void => {
      if (!this.destroyed) super.end(callback);
    };
    void drained.then(finish, finish);
    return this;
  }
}
