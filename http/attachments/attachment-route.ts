/**
 * `GET /attachments/{capability}` (and HEAD): one attachment download,
 * authorized by the signed capability alone (docs/attachment-links.md). The
 * listener in front supplies the concurrency permit, the shared anonymous rate
 * bucket and the request timeout; this handler runs after them.
 *
 * Answers:
 * - 200: the decoded bytes, `Content-Disposition: attachment` with the file
 *   name (RFC 6266, RFC 5987 `filename*`), `Content-Length`, and the part's
 *   type only when it is on `SERVED_AS_DECLARED`; every other type
 *   (text/html, SVG, XML, scripts, message/*, anything unknown) is served as
 *   `application/octet-stream`, so nothing from a mail is ever rendered as
 *   a document of this origin.
 * - 404, one response byte for byte: expired, forged, malformed, signed
 *   under a key the ring no longer holds, orphaned (the message or
 *   attachment is gone, or the account is no longer configured), no key
 *   ring configured, any method but GET and HEAD, any other path below
 *   `/attachments/`.
 * - 5xx, empty: the key ring could not be read, or the read failed; the
 *   status is the error table's (runtime/errors.ts: 504 when the read did
 *   not answer in time, 503 when the part doing it is not running), 500 for
 *   anything else. Only reachable before any check of the token, or with a
 *   valid one.
 * Every answer carries `Cache-Control: no-store`, `X-Content-Type-Options:
 * nosniff` and a sandboxing Content-Security-Policy.
 *
 * Privacy: the capability is the credential. Nothing here logs it or any
 * part of the request path: no line per download, and a failure is logged
 * with the route template `/attachments/{capability}` only (and the trace id
 * of the request's span when traced; the span is named by the template too).
 *
 * Importable by the MCP listener (and redeem.ts, for `AttachmentDownload`).
 */
import type { Context } from '@opentelemetry/api';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AppError, Codes } from '../../runtime/errors.ts';
import type { KeyRing } from '../../runtime/keyring/keyring.ts';
import type { Logger } from '../../runtime/log.ts';
import { traceIdOf } from '../../runtime/telemetry/tracing.ts';
import { verifyCapability, type CapabilityClaims } from './capability.ts';
import { contentDisposition, servedContentType } from './download-headers.ts';
import { pathOf } from '../pipeline.ts';

/** What spans, metrics and logs name this route by: never the path itself. */
export const ATTACHMENT_ROUTE = '/attachments/{capability}';
const PREFIX = '/attachments/';

export type AttachmentDownload = { filename: string | null; contentType: string; content: Uint8Array };

export type AttachmentRouteDeps = {
  /** The key ring as of this request (its file checked after the request arrived); null when none is configured (every link is then 404). */
  keyRing(): KeyRing | null | Promise<KeyRing | null>;
  /** Reads the attachment the claims name from the mailbox, now; null when it is not there to serve. */
  fetch(claims: CapabilityClaims): Promise<AttachmentDownload | null>;
  log: Logger;
  /** The request's span's context (http/pipeline.ts `Handler`): its trace id is on the `attachment.failed` line. */
  trace?: Context;
  /** Epoch milliseconds; Date.now by default. */
  now?: () => number;
};

/** Whether the request path is this route's (the listener's dispatch test; the query string is ignored). */
export function isAttachmentPath(url: string | undefined): boolean {
  return pathOf(url).startsWith(PREFIX);
}

export async function serveAttachment(req: IncomingMessage, res: ServerResponse, deps: AttachmentRouteDeps): Promise<void> {
  // A body sent with the request is never read; drain it so the connection stays usable.
  req.resume();
  const head = req.method === 'HEAD';
  if (req.method !== 'GET' && !head) return notFound(res);
  const token = capabilityOf(req.url);
  if (token === null) return notFound(res);
  let ring: KeyRing | null;
  try {
    ring = await deps.keyRing();
  } catch (err) {
    return failed(res, deps, err, 'attachment key ring unavailable');
  }
  if (ring === null) return notFound(res);
  const claims = verifyCapability(ring, token, (deps.now ?? Date.now)());
  if (claims === null) return notFound(res);
  let found: AttachmentDownload | null;
  try {
    found = await deps.fetch(claims);
  } catch (err) {
    return failed(res, deps, err, 'attachment read failed');
  }
  if (found === null) return notFound(res);
  const content = Buffer.from(found.content.buffer, found.content.byteOffset, found.content.byteLength);
  res.statusCode = 200;
  guard(res);
  res.setHeader('Content-Type', servedContentType(found.contentType));
  res.setHeader('Content-Disposition', contentDisposition(found.filename, found.contentType));
  res.setHeader('Content-Length', content.byteLength);
  res.end(head ? undefined : content);
}

/** The token segment of `/attachments/{token}`, or null for any other shape. */
function capabilityOf(url: string | undefined): string | null {
  const path = pathOf(url);
  if (!path.startsWith(PREFIX)) return null;
  const token = path.slice(PREFIX.length);
  return token.length > 0 && !token.includes('/') ? token : null;
}

/** Headers of every answer, 404 included. */
function guard(res: ServerResponse): void {
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Content-Security-Policy', "default-src 'none'; sandbox; frame-ancestors 'none'");
}

function notFound(res: ServerResponse): void {
  empty(res, 404);
}

function empty(res: ServerResponse, status: number): void {
  res.statusCode = status;
  guard(res);
  res.setHeader('Content-Length', 0);
  res.end();
}

function failed(res: ServerResponse, { log, trace }: AttachmentRouteDeps, err: unknown, message: string): void {
  // A server-side failure by the table's status; a client-side one cannot reach here with a valid token, so it is a defect: 500.
  const status = err instanceof AppError && Codes[err.code].status >= 500 ? Codes[err.code].status : 500;
  // The route template only: the URL carries the capability. The trace id is the request span's, when traced.
  const traceId = traceIdOf(trace);
  log.error({ err, event: 'attachment.failed', route: ATTACHMENT_ROUTE, status, ...(traceId ? { traceId } : {}) }, message);
  empty(res, status);
}
