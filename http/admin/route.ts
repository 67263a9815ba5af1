/**
 * What an administrative route is: the method and path (also the template
 * logged and counted), the permission it publishes, its body limit, the zod
 * schemas of its query, body and answer (validated here and written into
 * docs/admin-api.md by `npm run docs:admin`), and the handler, which is told
 * the parsed input and answers a value: the listener writes it.
 *
 * Each route group lives in `routes/<group>.ts` and is listed once in
 * `routes/index.ts`. A route of the spec's table that is not listed answers
 * 404: never a stub.
 */
import type { z } from 'zod';
import type { Config } from '../../config/schema.ts';
import type { Logger } from '../../runtime/log.ts';
import type { AnsweringAuditProtocol } from '../../actors/mail-query/protocol/answering-audit.ts';
import type { DeadLettersProtocol } from '../../actors/mail-query/protocol/dead-letters.ts';
import type { MutationAuditProtocol } from '../../actors/mail-query/protocol/mutation-audit.ts';
import type { OutboxReadsProtocol } from '../../actors/mail-query/protocol/outbox-reads.ts';
import type { RuleHistoryProtocol } from '../../actors/mail-query/protocol/rule-history.ts';
import type { SpamClassificationsProtocol } from '../../actors/mail-query/protocol/spam-classifications.ts';
import type { ActorId, Askable, Protocol } from '../../runtime/ref.ts';
import type { Principal } from '../auth/principal.ts';
import type { AdminPermissions } from '../../config/permissions.ts';
import type { Cursors } from './cursor.ts';

/** Body limits (docs/admin-api.md "The pipeline"): the refresh-token route, and every other write (the default of a POST). */
export const REFRESH_TOKEN_BODY_BYTES = 16 * 1024;
export const WRITE_BODY_BYTES = 4 * 1024;

export type AdminPermission = (typeof AdminPermissions)[number];

/** What the admin routes ask of the read-only query pool. */
export type AdminQueries = MutationAuditProtocol &
  AnsweringAuditProtocol &
  DeadLettersProtocol &
  OutboxReadsProtocol &
  RuleHistoryProtocol &
  SpamClassificationsProtocol;

/** What every route's use case may reach. */
export type AdminDeps = {
  config: Config;
  version: string;
  /** An actor by id: the scheduler, an account's sync actor. */
  actor<P extends Protocol>(id: ActorId<P>): Askable<P>;
  /** The read-only query pool (actors/mail-query): the main thread never runs SQL. */
  queryPool: Askable<AdminQueries>;
  /** Page cursors signed with this deployment's own secret. */
  cursors: Cursors;
  /** For what the operator must learn beside the answer (constant messages, no mail content). */
  log: Logger;
};

export type RouteInput<Q, B> = {
  principal: Principal;
  /** What is left of the request timeout, for asks. */
  deadlineMs: number;
  query: Q;
  body: B;
  /** The segments a `{name}` of the path template matched, percent-decoded; empty for a path without one. */
  params: Readonly<Record<string, string>>;
};

/** 200 with a JSON document, 201 with the record a POST made, or 204 with none. */
export type RouteAnswer = { status: 200 | 201; json: unknown } | { status: 204 };

/** The methods a route may take; POST and PUT read a JSON body, GET and DELETE read none. */
export type RouteMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** Whether a route of this method reads a request body. */
export function takesBody(method: RouteMethod): boolean {
  return method === 'POST' || method === 'PUT';
}

export type Route = {
  readonly method: RouteMethod;
  /**
   * The path, or a template whose `{name}` segments each match one
   * non-empty segment (`/api/admin/outbox/{id}`). A path written out wins
   * over a template it also fills. The template, never the path sent, is
   * what is logged and counted.
   */
  readonly path: string;
  /** The `{name}` segments of a template, for the reference; what they accept is the use case's to judge. */
  readonly params?: z.ZodType;
  /** The permission the route publishes; null: none (the session). */
  readonly permission: AdminPermission | null;
  /** One line for the reference. */
  readonly summary: string;
  /** GET: the query string's parameters (all strings as sent). */
  readonly query?: z.ZodType;
  /** POST and PUT: the JSON body, and the largest taken. */
  readonly body?: z.ZodType;
  readonly bodyLimit?: number;
  /**
   * POST of a route that takes no input: a request sending no body at all
   * (no bytes, whatever its Content-Type) is read as `{}`; one that sends a
   * body is read and checked as any other.
   */
  readonly bodyOptional?: boolean;
  /** The answer's document; absent for a 204. */
  readonly answer?: z.ZodType;
  /** The status of a success with a document: 200 unless the route makes a record (201). */
  readonly answerStatus?: 200 | 201;
  handle(input: RouteInput<unknown, unknown>, deps: AdminDeps): Promise<RouteAnswer>;
};

/** A route with its handler typed by its own schemas. */
export function defineRoute<Q extends z.ZodType | undefined, B extends z.ZodType | undefined>(
  route: Omit<Route, 'handle' | 'query' | 'body'> & {
    query?: Q;
    body?: B;
    handle(
      input: RouteInput<Q extends z.ZodType ? z.infer<Q> : undefined, B extends z.ZodType ? z.infer<B> : undefined>,
      deps: AdminDeps,
    ): Promise<RouteAnswer>;
  },
): Route {
  return route as Route;
}
