/**
 * The answers of the administrative surface (docs/admin-api.md
 * "Refusals"): RFC 9457 problem documents for a refusal that has something
 * to say, empty bodies for the rest. The status of every failure is the
 * error table's (runtime/errors.ts); `failureAnswerOf` is the one mapping
 * from an error to what this surface answers.
 *
 * - 403: exactly `status`, `detail` (a sentence naming the permission) and
 *   `permission` (the bare name). Nothing else: no route, no credential hint.
 * - Every other 4xx (400, 404 of a route naming a record in its path, 409,
 *   413…): `status`, `title`, `detail` (the error's sentence: what to
 *   change). The listener's own 404 (a path no route serves) is empty.
 * - 5xx: empty, the generic failure; the reason is only in the log.
 *
 * A problem document never carries a credential, a token or anything the
 * request body held beyond a member name or an account identifier the
 * caller wrote: a 4xx's sentence is written for the caller (errors.ts), and
 * a 5xx's message never leaves the log.
 */
import { STATUS_CODES, type ServerResponse } from 'node:http';
import { AppError, Codes } from '../../runtime/errors.ts';

/** A refusal naming what to change. */
export type Problem = { readonly status: number; readonly title: string; readonly detail: string };
/** A refusal for want of a permission: exactly these three members. */
export type ForbiddenProblem = { readonly status: number; readonly detail: string; readonly permission: string };

/** What the surface answers for an error a route's use case threw. */
export type FailureAnswer =
  | { readonly kind: 'forbidden'; readonly problem: ForbiddenProblem }
  /** E_APP_REFUSED naming no permission: the use case was reached under no principal, so the credential's 401. */
  | { readonly kind: 'unauthenticated' }
  | { readonly kind: 'problem'; readonly problem: Problem }
  /** A 5xx: nothing to say to the caller. */
  | { readonly kind: 'empty'; readonly status: number };

export function failureAnswerOf(err: AppError): FailureAnswer {
  if (err.code === 'E_APP_REFUSED') {
    const permission = err.details?.permission;
    return typeof permission === 'string' ? { kind: 'forbidden', problem: forbiddenProblem(permission) } : { kind: 'unauthenticated' };
  }
  if (err.status < 500) return { kind: 'problem', problem: problemOf(err) };
  return { kind: 'empty', status: err.status };
}

/** Titles the surface has always used; any other status is named by its reason phrase. */
const TITLES: Readonly<Record<number, string>> = { 400: 'Invalid request', 404: 'Not found', 413: 'Request body too large' };

/** The problem document of a 4xx: the table's status, and the error's sentence. */
export function problemOf(err: AppError): Problem {
  return { status: err.status, title: TITLES[err.status] ?? STATUS_CODES[err.status] ?? 'Refused', detail: err.message };
}

/** The sentence of a 403; the command-line client matches "credential does not hold the permission". */
export function forbiddenDetail(permission: string): string {
  return `The credential does not hold the permission ${permission}.`;
}

export function forbiddenProblem(permission: string): ForbiddenProblem {
  return { status: Codes.E_APP_REFUSED.status, detail: forbiddenDetail(permission), permission };
}

export function answerProblem(res: ServerResponse, problem: Problem | ForbiddenProblem, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(problem);
  res.statusCode = problem.status;
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  res.setHeader('Content-Type', 'application/problem+json');
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}

export function answerForbidden(res: ServerResponse, permission: string): void {
  answerProblem(res, forbiddenProblem(permission));
}

/** The listener's own 400: the request's shape, before any use case. */
export function answerInvalid(res: ServerResponse, detail: string): void {
  answerProblem(res, problemOf(new AppError('E_HTTP_BAD_REQUEST', { message: detail })));
}

/** 413: the body is past the route's limit; the connection is not reused, since the rest of the body is not read. */
export function answerTooLarge(res: ServerResponse, limitBytes: number): void {
  answerProblem(res, problemOf(new AppError('E_HTTP_BODY_TOO_LARGE', { message: `Send a body of at most ${limitBytes} bytes.` })), { Connection: 'close' });
}

export function answerJson(res: ServerResponse, status: number, value: unknown): void {
  const text = JSON.stringify(value);
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json');
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}
