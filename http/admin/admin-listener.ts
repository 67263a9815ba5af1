/**
 * The administrative listener (`AdminEndpoint`, clear text at
 * BindAddress:Port; docs/admin-api.md). Routes live only
 * under `/api/admin`; everything else, `/mcp` first of all, is an empty 404
 * before any credential is looked at. The OAuth protected-resource metadata
 * document is served as on the MCP listener when an entry carries OAuth.
 *
 * Pipeline of a request under `/api/admin` (no origin stage: no CORS here):
 *   request timeout (504) → limiter, one bucket for the whole surface (429)
 *   → authenticate('admin') (401 empty with the challenge; 403 for a token
 *   lacking scope) → route lookup (a path written out, else a template
 *   such as `/api/admin/outbox/{id}`; 404; 405 with Allow) → route filter on the
 *   published permission (403 problem document, counted by recordRefusal)
 *   → body (POST and PUT: application/json, else 400; past the route's limit, 413;
 *   a route taking no input also takes no body at all, read as `{}`)
 *   → use case, which checks again (same 403 shape) → answer. A use case's
 *   failure is answered with its status in the error table, through
 *   problem.ts `failureAnswerOf` (an actor's time-out is 504, its absence 503).
 *
 * The limiter stands before the credential check (docs/admin-api.md "The
 * pipeline": the credential is judged behind the rate limiter):
 * the surface has one bucket, so nothing about the caller is needed to pick
 * it, and a throttled guesser costs no judgement.
 *
 * Logged: the route template, the refusal (principal.ts), failures by class
 * and code (the logger reduces every error: runtime/log.ts).
 * Never a body, a credential or a refresh token.
 */
import { askingWithin } from '../../runtime/telemetry/tracing.ts';
import type { Context } from '@opentelemetry/api';
import type { IncomingMessage, Server } from 'node:http';
import type { Config } from '../../config/schema.ts';
import { AppError, Codes } from '../../runtime/errors.ts';
import type { Logger } from '../../runtime/log.ts';
import type { ActorId, Askable, Protocol } from '../../runtime/ref.ts';
import type { Authenticate } from '../auth/authenticate.ts';
import { METADATA_PREFIX, metadataUrlOf, serveMetadata } from '../auth/oauth/metadata.ts';
import { holds, recordRefusal } from '../auth/principal.ts';
import { isRecorded, traceIdOf } from '../../runtime/telemetry/tracing.ts';
import { createRateLimiter, describeLimits, partitionFor } from '../limits/rate-limiter.ts';
import {
  admit,
  admitCredential,
  ANSWERED,
  answerEmpty,
  answerUnauthenticated,
  clearTextServer,
  MAX_JSON_DEPTH,
  readJson,
  surfaceHandler,
  type ExchangeResponse,
  type SurfaceHandler,
} from '../pipeline.ts';
import { effectiveOrigin } from '../proxy.ts';
import { hostGuardOf } from '../host-guard.ts';
import { createCursors } from './cursor.ts';
import { sentenceOf } from './invalid-input.ts';
import { answerForbidden, answerInvalid, answerJson, answerProblem, answerTooLarge, failureAnswerOf } from './problem.ts';
import { takesBody, WRITE_BODY_BYTES, type AdminDeps, type AdminQueries, type Route } from './route.ts';
import { ROUTES } from './routes/index.ts';
import { ADMIN_PREFIX } from './routes/prefix.ts';

export { ADMIN_PREFIX };

export type AdminListenerDeps = {
  config: Config;
  log: Logger;
  version: string;
  /** An actor by id (the scheduler answers the status; an account's sync actor does its account's work). */
  actor<P extends Protocol>(id: ActorId<P>): Askable<P>;
  /** The read-only query pool. */
  queryPool: Askable<AdminQueries>;
  /** The deployment's cursor-signing secret (runtime/store/deployment-secrets.ts). */
  cursorKey: Buffer;
  /** The authentication stage of this surface: `createAuthenticator('admin', …)`. */
  authenticate: Authenticate;
  /** The routes served; the build's table unless a test narrows it. */
  routes?: readonly Route[];
};

export function createAdminListener(deps: AdminListenerDeps): Server {
  return clearTextServer(createAdminSurface(deps));
}

/** What the administrative surface answers, for every listener that serves it (clear text, or a TLS socket of its profiles). */
export function createAdminSurface(deps: AdminListenerDeps): SurfaceHandler {
  const { config, log } = deps;
  const endpoint = config.AdminEndpoint;
  const limiter = createRateLimiter(endpoint.RateLimiting, { surface: 'admin' });
  log.info({ event: 'limits.in-force', section: 'AdminEndpoint', ...describeLimits(endpoint.RateLimiting, 'admin') }, 'limits.in-force');
  const metadataUrl = metadataUrlOf(endpoint.Authentication);
  const routes = deps.routes ?? ROUTES;
  const routeDeps: AdminDeps = { config, version: deps.version, actor: deps.actor, queryPool: deps.queryPool, cursors: createCursors(deps.cursorKey), log };

  const limits = { limiter, timeout: endpoint.RequestTimeout };

  const admin = async (req: IncomingMessage, res: ExchangeResponse, match: RoutesAt, trace: Context): Promise<void> => {
    const admitted = await admit(req, res, limits, partitionFor('admin', { kind: 'other' }));
    if (admitted === null) return;
    // A moment short of the request timeout, so the use case's failure is answered rather than a bare 504.
    const { deadlineMs } = admitted;

    const judgement = await deps.authenticate(req, effectiveOrigin(req, config.ReverseProxy));
    if (admitted.timedOut()) return; // answered 504 already
    const principal = admitCredential(req, res, judgement, metadataUrl);
    if (principal === null) return;

    const { routes: atPath, params } = match;
    const route = atPath.find((r) => r.method === req.method);
    if (route === undefined) {
      req.resume();
      if (atPath.length === 0) return answerEmpty(res, Codes.E_HTTP_NO_ROUTE.status);
      return answerEmpty(res, Codes.E_HTTP_METHOD_NOT_ALLOWED.status, { Allow: atPath.map((r) => r.method).join(', ') });
    }

    // The route filter: the permission the route publishes, before any body is read.
    if (route.permission !== null && !holds(principal, route.permission)) {
      req.resume();
      recordRefusal(log, { surface: 'admin', target: `${route.method} ${route.path}`, permission: route.permission, principal });
      return answerForbidden(res, route.permission);
    }

    let body: unknown;
    if (takesBody(route.method) && route.bodyOptional === true && sendsNoBody(req)) {
      req.resume();
      body = {};
    } else if (takesBody(route.method)) {
      const limit = route.bodyLimit ?? WRITE_BODY_BYTES;
      if (!isJson(req)) {
        req.resume();
        return answerInvalid(res, 'Send the body as application/json.');
      }
      const read = await readJson(req, res, limit);
      if (read.kind === 'gone' || admitted.timedOut()) return;
      if (read.kind === 'too-large') return answerTooLarge(res, limit);
      if (read.kind === 'malformed') return answerInvalid(res, 'Send a body that is well-formed JSON.');
      if (read.kind === 'too-deep') return answerInvalid(res, `Send a body nested at most ${MAX_JSON_DEPTH} levels deep.`);
      body = read.value;
      if (route.body !== undefined) {
        const parsed = route.body.safeParse(body);
        if (!parsed.success) return answerInvalid(res, sentenceOf(parsed.error, 'body'));
        body = parsed.data;
      }
    } else {
      req.resume();
    }
    const queryParams = queryOf(req.url);
    if (queryParams === null) return answerInvalid(res, 'Name each query parameter once.');
    let query: unknown;
    if (route.query !== undefined) {
      const parsed = route.query.safeParse(queryParams);
      if (!parsed.success) return answerInvalid(res, sentenceOf(parsed.error, 'query'));
      query = parsed.data;
    } else if (Object.keys(queryParams).length > 0) {
      return answerInvalid(res, 'Leave out the query string; this route takes none.');
    }

    try {
      // Its asks are part of the request's trace, named: the active context does not follow awaits (runtime/telemetry/sync-context.ts).
      const answer = await route.handle({ principal, deadlineMs, query, body, params }, withinTrace(routeDeps, trace));
      if (admitted.timedOut()) return;
      if (answer.status === 204) answerEmpty(res, 204);
      else answerJson(res, answer.status, answer.json);
    } catch (err) {
      if (admitted.timedOut()) return;
      // Anything but an AppError is a defect: the pipeline logs it by type and answers the empty 500.
      if (!(err instanceof AppError)) throw err;
      const target = `${route.method} ${route.path}`;
      const answer = failureAnswerOf(err);
      switch (answer.kind) {
        case 'forbidden':
          recordRefusal(log, { surface: 'admin', target, permission: answer.problem.permission, principal });
          return answerProblem(res, answer.problem);
        case 'unauthenticated':
          return answerUnauthenticated(res, metadataUrl);
        case 'problem':
          return answerProblem(res, answer.problem);
        case 'empty':
          logFailure(log, route, err, answer.status, traceIdOf(trace));
          return answerEmpty(res, answer.status);
      }
    }
  };

  return surfaceHandler({
    surface: 'admin',
    hosts: hostGuardOf(config, 'AdminEndpoint', log),
    route(req, res, path) {
      // Served only at the configured document's own path (serveMetadata compares it): that path is the template.
      if (path.startsWith(METADATA_PREFIX) && serveMetadata(req, res, effectiveOrigin(req, config.ReverseProxy), endpoint.Authentication))
        return { template: path, handler: ANSWERED };
      // `/mcp` and everything else: nothing is served here, and no credential is looked at.
      if (path !== ADMIN_PREFIX && !path.startsWith(`${ADMIN_PREFIX}/`)) return null;
      // Under the prefix the credential is judged before the 404, so a path no route fills is handled, with no template.
      const match = routesAt(routes, path);
      return { template: match.routes[0]?.path ?? null, handler: (req, res, trace) => admin(req, res, match, trace) };
    },
    failed(err, { route, traceId }) {
      // Only a known route's template reaches the log; any other path is the caller's text.
      log.error({ err, event: 'http.failed', route: route ?? ADMIN_PREFIX, ...(traceId ? { traceId } : {}) }, 'http.failed');
    },
  });
}

/**
 * The routes served at `path`, and what its `{name}` segments matched: the
 * routes whose path is written as it, else those of the first template it
 * fills (each `{name}` one non-empty segment, percent-decoded; a segment
 * that does not decode is passed as sent). No route: an empty list.
 */
export type RoutesAt = { routes: Route[]; params: Record<string, string> };

export function routesAt(routes: readonly Route[], path: string): RoutesAt {
  const exact = routes.filter((r) => r.path === path);
  if (exact.length > 0) return { routes: exact, params: {} };
  const segments = path.split('/');
  for (const candidate of routes) {
    if (!candidate.path.includes('{')) continue;
    const template = candidate.path.split('/');
    if (template.length !== segments.length) continue;
    const params: Record<string, string> = {};
    const fits = template.every((part, i) => {
      const segment = segments[i]!;
      const name = /^\{([A-Za-z]+)\}$/.exec(part)?.[1];
      if (name === undefined) return part === segment;
      if (segment === '') return false;
      params[name] = decoded(segment);
      return true;
    });
    if (fits) return { routes: routes.filter((r) => r.path === candidate.path), params };
  }
  return { routes: [], params: {} };
}

function decoded(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** The query string as one value per name; null when a name repeats (ambiguous, so refused). */
function queryOf(url: string | undefined): Record<string, string> | null {
  const at = url?.indexOf('?') ?? -1;
  if (url === undefined || at < 0) return {};
  const params = new URLSearchParams(url.slice(at + 1));
  const out: Record<string, string> = {};
  for (const [name, value] of params) {
    if (Object.hasOwn(out, name)) return null;
    out[name] = value;
  }
  return out;
}

/**
 * A route's failure answered with an empty 5xx, logged once by code: the
 * setting to write where one is missing; 503 and 504 (the part doing the
 * work is not running, or did not answer in time) at warn, since asking
 * again may succeed; any other at error with its constant message and the
 * trace id of the exchange's span (when traced), which the exported span shares.
 */
function logFailure(log: Logger, route: Route, err: AppError, status: number, traceId: string | undefined): void {
  const target = `${route.method} ${route.path}`;
  if (err.code === 'E_KEYRING_MISSING') {
    log.error({ event: 'admin.keyring-missing', route: target, setting: 'DataEncryption:KeyRing' }, 'admin.keyring-missing');
  } else if (status === 503 || status === 504) {
    log.warn({ event: 'admin.unavailable', route: target, code: err.code }, 'admin.unavailable');
  } else {
    log.error({ err, event: 'http.failed', route: route.path, ...(traceId ? { traceId } : {}) }, 'http.failed');
  }
}

/** A request declaring no body: a zero Content-Length, or neither a length nor chunks (RFC 9112 6.3). */
function sendsNoBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  if (length !== undefined) return length.trim() === '0';
  return req.headers['transfer-encoding'] === undefined;
}

/** Whether the body is declared application/json (parameters such as charset allowed). */
function isJson(req: IncomingMessage): boolean {
  return (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase() === 'application/json';
}

/** `deps` whose asks are part of `trace` (runtime/telemetry/tracing.ts `askingWithin`); `deps` itself when `trace` records nothing. */
function withinTrace(deps: AdminDeps, trace: Context): AdminDeps {
  if (!isRecorded(trace)) return deps;
  return { ...deps, queryPool: askingWithin(deps.queryPool, trace), actor: (id) => askingWithin(deps.actor(id), trace) };
}
