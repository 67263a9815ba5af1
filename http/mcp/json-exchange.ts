/**
 * The transport of one stateless MCP exchange: a POST whose JSON body the
 * pipeline already read, answered with one JSON response (or 202), written
 * straight to the Node response.
 *
 * It takes the place of the SDK's `StreamableHTTPServerTransport` in
 * stateless JSON-response mode, with the same answers (status, JSON-RPC
 * error code and message) to the same requests: Accept must list both
 * `application/json` and `text/event-stream` (406), the body must be JSON
 * (415), at most 100 messages in a batch (400), each a JSON-RPC message
 * (400, -32700), one initialize request alone (400), a supported
 * `MCP-Protocol-Version` outside initialization (400); notifications and
 * responses only: 202. Why: the SDK's transport converts every Node request
 * to a Web `Request` and every answer to a Web `Response` (@hono/node-server)
 * and back; that round of conversions, streams and header objects was the
 * largest part of the main thread's time per call (docs/performance.md).
 * GET and DELETE never reach it (the listener answers 405).
 *
 * One instance per request, like the SDK's stateless transport: request ids
 * of different clients never meet. Imports of the SDK stay under http/mcp/.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { isJsonContentType } from '@modelcontextprotocol/sdk/shared/mediaType.js';
import { MAX_BATCH_SIZE } from '@modelcontextprotocol/sdk/server/requestBody.js';
import {
  isInitializeRequest,
  isJSONRPCErrorResponse,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  JSONRPCMessageSchema,
  type JSONRPCMessage,
  type RequestId,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '@modelcontextprotocol/sdk/types.js';

type Refusal = { status: number; code: number; message: string };

const refusal = (status: number, code: number, message: string): Refusal => ({ status, code, message });

export class JsonExchangeTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: Transport['onmessage'];

  /**
   * One slot per request, in the order the requests came, filled by its
   * answer. Slots, not a map by id: a batch may repeat an id (a client's
   * mistake), and each of its requests still gets its one answer.
   */
  private readonly pending: Array<{ id: RequestId; answer: JSONRPCMessage | null }> = [];
  private finished: (() => void) | null = null;
  private closed = false;
  /** Whether the answer was written: nothing more is (a late or surplus answer is dropped). */
  private written = false;

  private readonly req: IncomingMessage;
  private readonly res: ServerResponse;

  constructor(req: IncomingMessage, res: ServerResponse) {
    this.req = req;
    this.res = res;
  }

  async start(): Promise<void> {}

  /**
   * Dispatches the body's messages to the server and resolves once the
   * answer is written (or the exchange closed first).
   */
  async handle(body: unknown): Promise<void> {
    const read = this.read(body);
    if (!Array.isArray(read)) return this.answerError(read.status, read.code, read.message);
    const messages = read;
    const requestInfo = { headers: this.req.headers };
    if (!messages.some(isJSONRPCRequest)) {
      for (const message of messages) this.onmessage?.(message, { requestInfo });
      this.res.statusCode = 202;
      this.res.end();
      return;
    }
    for (const message of messages) if (isJSONRPCRequest(message)) this.pending.push({ id: message.id, answer: null });
    const answered = new Promise<void>((resolve) => {
      this.finished = resolve;
    });
    for (const message of messages) this.onmessage?.(message, { requestInfo });
    await answered;
  }

  /** Keeps a response to one of this exchange's requests; writes them all once the last arrives. Other messages (progress, logging) have nowhere to go in JSON mode. */
  async send(message: JSONRPCMessage): Promise<void> {
    if (!isJSONRPCResultResponse(message) && !isJSONRPCErrorResponse(message)) return;
    const id = message.id;
    if (this.closed || this.written || id === undefined) return;
    const slot = this.pending.find((p) => p.answer === null && p.id === id);
    if (slot === undefined) return;
    slot.answer = message;
    if (this.pending.some((p) => p.answer === null)) return;
    const answers = this.pending.map((p) => p.answer);
    this.writeJson(200, answers.length === 1 ? answers[0] : answers);
    this.finish();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.finish();
    this.onclose?.();
  }

  /** The body's JSON-RPC messages, or the SDK transport's refusal of this POST (checked in its order). */
  private read(body: unknown): JSONRPCMessage[] | Refusal {
    const headers = this.req.headers;
    const accept = headers.accept;
    if (!accept?.includes('application/json') || !accept.includes('text/event-stream'))
      return refusal(406, -32000, 'Not Acceptable: Client must accept both application/json and text/event-stream');
    if (!isJsonContentType(headers['content-type'])) return refusal(415, -32000, 'Unsupported Media Type: Content-Type must be application/json');
    if (Array.isArray(body) && body.length > MAX_BATCH_SIZE) return refusal(400, -32600, `Invalid Request: Batch must not exceed ${MAX_BATCH_SIZE} messages`);
    const messages: JSONRPCMessage[] = [];
    for (const raw of Array.isArray(body) ? body : [body]) {
      const parsed = JSONRPCMessageSchema.safeParse(raw);
      if (!parsed.success) return refusal(400, -32700, 'Parse error: Invalid JSON-RPC message');
      messages.push(parsed.data);
    }
    if (messages.some(isInitializeRequest)) {
      return messages.length > 1 ? refusal(400, -32600, 'Invalid Request: Only one initialization request is allowed') : messages;
    }
    const version = headers['mcp-protocol-version'];
    if (typeof version === 'string' && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
      const supported = SUPPORTED_PROTOCOL_VERSIONS.join(', ');
      return refusal(400, -32000, `Bad Request: Unsupported protocol version: ${version} (supported versions: ${supported})`);
    }
    return messages;
  }

  private answerError(status: number, code: number, message: string): void {
    this.writeJson(status, { jsonrpc: '2.0', error: { code, message }, id: null });
  }

  private writeJson(status: number, value: unknown): void {
    this.written = true;
    const text = JSON.stringify(value);
    this.res.statusCode = status;
    this.res.setHeader('Content-Type', 'application/json');
    this.res.setHeader('Content-Length', Buffer.byteLength(text));
    this.res.end(text);
  }

  private finish(): void {
    const done = this.finished;
    this.finished = null;
    done?.();
  }
}
