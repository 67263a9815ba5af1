/**
 * The one request-body reader of every listener (MCP `/mcp`, the
 * administrative writes): at most `limit` bytes, and a 413 that reaches the
 * client; JSON nested at most `MAX_JSON_DEPTH` levels (json-depth.ts).
 *
 * - A declared `Content-Length` past the limit is refused before a byte of
 *   the body is read.
 * - A body of unknown length (chunked) is accumulated until it passes the
 *   limit; from there on it is discarded, never kept.
 * - Either way the caller then writes its 413. The reader has marked the
 *   response `Connection: close` and told it (`endAfter`) to end only once
 *   the rest of the body is drained, the client goes away, or `LINGER_MS`
 *   passes, so the answer is on the wire before the socket closes and no
 *   reset overtakes it.
 *
 * Event listeners, not `for await`: leaving an async iterator early destroys
 * the request, and with it the socket the 413 was to go out on (the bug this
 * module replaces, issue 11).
 *
 * Nothing here logs: a body is the caller's text.
 *
 * Imported through http/pipeline.ts.
 */
import type { IncomingMessage } from 'node:http';
import type { ExchangeResponse } from './exchange-response.ts';
import { nestsWithin } from './json-depth.ts';

/** How long the rest of a refused body is drained before the connection is closed regardless. */
export const LINGER_MS = 2_000;

export type BodyRead =
  | { kind: 'ok'; bytes: Buffer }
  /** Past the limit: answer 413 now (the reader has prepared the response for it). */
  | { kind: 'too-large' }
  /** The client went away mid-body: there is nobody to answer. */
  | { kind: 'gone' };

export type JsonRead =
  | { kind: 'ok'; value: unknown }
  | { kind: 'malformed' }
  /** Nested deeper than `MAX_JSON_DEPTH` (json-depth.ts): never parsed, nothing downstream walks it. */
  | { kind: 'too-deep' }
  | Exclude<BodyRead, { kind: 'ok' }>;

export function readBody(req: IncomingMessage, res: ExchangeResponse, limit: number): Promise<BodyRead> {
  const declared = declaredLength(req);
  if (declared !== null && declared > limit) return Promise.resolve(refuse(req, res));
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const settle = (read: BodyRead): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onGone);
      req.off('close', onGone);
      chunks.length = 0;
      resolve(read);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) return settle(refuse(req, res));
      chunks.push(chunk);
    };
    const onEnd = (): void => settle({ kind: 'ok', bytes: Buffer.concat(chunks, size) });
    const onGone = (): void => settle({ kind: 'gone' });
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('error', onGone);
    req.once('close', onGone);
  });
}

/** The body as JSON (an empty body is malformed), bounded in depth before it is parsed. */
export async function readJson(req: IncomingMessage, res: ExchangeResponse, limit: number): Promise<JsonRead> {
  const read = await readBody(req, res, limit);
  if (read.kind !== 'ok') return read;
  if (!nestsWithin(read.bytes)) return { kind: 'too-deep' };
  try {
    return { kind: 'ok', value: JSON.parse(read.bytes.toString('utf8')) };
  } catch {
    return { kind: 'malformed' };
  }
}

/** The declared length, or null for a body of unknown length (chunked, or none declared). */
function declaredLength(req: IncomingMessage): number | null {
  const header = req.headers['content-length'];
  if (header === undefined) return null;
  const value = Number(header);
  return Number.isFinite(value) ? value : null;
}

function refuse(req: IncomingMessage, res: ExchangeResponse): BodyRead {
  // The rest of the body is not read into anything, so the connection cannot carry another request.
  res.setHeader('Connection', 'close');
  res.endAfter(drain(req));
  return { kind: 'too-large' };
}

/** Discards what is still coming; settles when the body ended, the client went away, or LINGER_MS passed. */
function drain(req: IncomingMessage): Promise<void> {
  if (req.complete || req.destroyed) {
    req.resume();
    return Promise.resolve();
  }
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      req.off('end', done);
      req.off('close', done);
      req.off('error', done);
      resolve();
    };
    const timer = setTimeout(done, LINGER_MS);
    timer.unref();
    req.once('end', done);
    req.once('close', done);
    req.once('error', done);
    req.resume();
  });
}
