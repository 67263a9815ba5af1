/**
 * The answers of the administrative surface (docs/admin-api.md
 * "Refusals"): RFC 9457 problem documents for a
 * refusal that has something to say, empty bodies for the rest.
 *
 * - 403: exactly `status`, `detail` (a sentence naming the permission) and
 *   `permission` (the bare name). Nothing else: no route, no credential hint.
 * - 400 and 413: `status`, `title`, `detail` (a sentence naming what to change).
 * - 404 of a route naming a record in its path (`GET /api/admin/outbox/{id}`)
 *   that the deployment does not hold: `status`, `title`, `detail`. Every
 *   other 404 (a path no route serves) is empty.
 *
 * A problem document never carries a credential, a token or anything the
 * request body held beyond a member name or an account identifier the
 * caller wrote.
 */
import type { ServerResponse } from 'node:http';

type Problem = { readonly status: number } & Readonly<Record<string, string | number>>;

function answerProblem(res: ServerResponse, problem: Problem, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(problem);
  res.statusCode = problem.status;
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  res.setHeader('Content-Type', 'application/problem+json');
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}

/** The sentence of a 403; the command-line client matches "credential does not hold the permission". */
export function forbiddenDetail(permission: string): string {
  return `The credential does not hold the permission ${permission}.`;
}

export function answerForbidden(res: ServerResponse, permission: string): void {
  answerProblem(res, { status: 403, detail: forbiddenDetail(permission), permission });
}

export function answerInvalid(res: ServerResponse, detail: string): void {
  answerProblem(res, { status: 400, title: 'Invalid request', detail });
}

/** 404 of a route that names a record in its path, when the deployment holds none by that name (the listener's own 404 has no body). */
export function answerNotFound(res: ServerResponse, detail: string): void {
  answerProblem(res, { status: 404, title: 'Not found', detail });
}

/** 413: the body is past the route's limit; the connection is not reused, since the rest of the body is not read. */
export function answerTooLarge(res: ServerResponse, limitBytes: number): void {
  answerProblem(res, { status: 413, title: 'Request body too large', detail: `Send a body of at most ${limitBytes} bytes.` }, { Connection: 'close' });
}

export function answerJson(res: ServerResponse, status: number, value: unknown): void {
  const text = JSON.stringify(value);
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json');
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}
