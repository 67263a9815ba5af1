/**
 * The administrative listener (`AdminEndpoint`, clear text at
 * BindAddress:Port; admin-surface.md, docs/admin-api.md). Routes live only
 * under `/api/admin`; everything else, `/mcp` first of all, is an empty 404
 * before any credential is looked at. The OAuth protected-resource metadata
 * document is served as on the MCP listener when an entry carries OAuth.
 *
 * Pipeline of a request under `/api/admin` (no origin stage: no CORS here):
 *   request timeout (504) → limiter, one bucket for the whole surface (429)
 *   → authenticate('admin') (401 empty with the challenge; 403 for a token
 *   lacking scope) → route lookup (404; 405 with Allow) → route filter on the
 *   published permission (403 problem document, counted by recordRefusal)
 *   → body (writes: application/json, else 400; past the route's limit, 413)
 *   → use case, which checks again (same 403 shape) → answer.
 *
 * The limiter stands before the credential check (admin-surface
 * "Authentication" 3: the credential is judged behind the rate limiter):
 * the surface has one bucket, so nothing about the caller is needed to pick
 * it, and a throttled guesser costs no judgement.
 *
 * Logged: the route template, the refusal (principal.ts), failures by code.
 * Never a body, a credential or a refresh token.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Config } from '../../config/schema.ts';
import { AppError } from '../../runtime/errors.ts';
import type { Logger } from '../../runtime/log.ts';
import type { Askable } from '../../runtime/ref.ts';
import type { Authenticate } from '../auth/authenticate.ts';
import { answerTokenRefusal } from '../auth/oauth/challenge.ts';
import { METADATA_PREFIX, metadataUrlOf, serveMetadata } from '../auth/oauth/metadata.ts';
import { holds, recordRefusal, type Principal } from '../auth/principal.ts';
import { answerTooMany, createRateLimiter, describeLimits, partitionFor } from '../limits/rate-limiter.ts';
import { withRequestTimeout } from '../limits/request-timeout.ts';
import { answerEmpty, answerUnauthenticated, pathOf } from '../pipeline.ts';
import { effectiveOrigin } from '../proxy.ts';
import { answerForbidden, answerInvalid, answerJson, answerTooLarge } from './problem.ts';
import { adminUseCases, InvalidRequest, type AdminUseCases } from './use-cases.ts';

export const ADMIN_PREFIX = '/api/admin';

/** Body limits (admin-surface "Body limits"): the refresh-token route, and every other write. */
export const REFRESH_TOKEN_BODY_BYTES = 16 * 1024;
export const WRITE_BODY_BYTES = 4 * 1024;

export type AdminListenerDeps = {
  config: Config;
  log: Logger;
  version: string;
  /** An actor by id (the scheduler answers the status; an account's sync actor stores its refresh token). */
  actor(id: string): Askable;
  /** The authentication stage of this surface: `createAuthenticator('admin', …)`. */
  authenticate: Authenticate;
};

type RouteContext = { req: IncomingMessage; res: ServerResponse; principal: Principal; deadlineMs: number; useCases: AdminUseCases };

type Route = {
  readonly method: 'GET' | 'POST';
  /** The path, which is also the template logged and counted. */
  readonly path: string;
  /** The permission the route publishes; null: none (the session). */
  readonly permission: string | null;
  /** Writes only: the largest body taken. */
  readonly bodyLimit?: number;
  handle(ctx: RouteContext, body: unknown): Promise<void>;
};

/** The routes this build serves. A route of the spec's table that is not here answers 404: never a stub. */
const ROUTES: readonly Route[] = [
  {
    method: 'GET',
    path: `${ADMIN_PREFIX}/session`,
    permission: null,
    async handle({ res, principal, useCases }) {
      answerJson(res, 200, useCases.session(principal));
    },
  },
  {
    method: 'GET',
    path: `${ADMIN_PREFIX}/mailbox/synchronization`,
    permission: 'service.admin.read',
    async handle({ res, principal, deadlineMs, useCases }) {
      answerJson(res, 200, await useCases.synchronization(principal, deadlineMs));
    },
  },
  {
    method: 'POST',
    path: `${ADMIN_PREFIX}/mailbox/refresh-token`,
    permission: 'service.admin.credentials.write',
    bodyLimit: REFRESH_TOKEN_BODY_BYTES,
    async handle({ res, principal, deadlineMs, useCases }, body) {
      await useCases.storeRefreshToken(principal, refreshTokenGrant(body), deadlineMs);
      // No body: nothing stored can be read back.
      answerEmpty(res, 204);
    },
  },
];

/** `{account, refreshToken}`, both non-empty text, nothing else; else the sentence of the 400. */
function refreshTokenGrant(body: unknown): { account: string; refreshToken: string } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new InvalidRequest('Send a JSON object with the members account and refreshToken.');
  }
  const record = body as Record<string, unknown>;
  const extra = Object.keys(record).filter((k) => k !== 'account' && k !== 'refreshToken');
  if (extra.length > 0) throw new InvalidRequest('Send only the members account and refreshToken.');
  const { account, refreshToken } = record;
  if (typeof account !== 'string' || account.trim() === '') throw new InvalidRequest('Name the account in the member account (a configured Accounts:Id).');
  if (typeof refreshToken !== 'string' || refreshToken.trim() === '') throw new InvalidRequest('Put the mailbox refresh token in the member refreshToken (non-empty text).');
  return { account, refreshToken };
}

export function createAdminListener(deps: AdminListenerDeps): Server {
  const { config, log } = deps;
  const endpoint = config.AdminEndpoint;
  const limiter = createRateLimiter(endpoint.RateLimiting, { surface: 'admin' });
  log.info({ event: 'limits.in-force', section: 'AdminEndpoint', ...describeLimits(endpoint.RateLimiting, 'admin') }, 'limits.in-force');
  const metadataUrl = metadataUrlOf(endpoint.Authentication);
  const useCases = adminUseCases({ config, version: deps.version, actor: deps.actor });

  const admin = async (req: IncomingMessage, res: ServerResponse, path: string): Promise<void> => {
    let release = (): void => {};
    const deadline = withRequestTimeout(res, endpoint.RequestTimeout, () => {
      release();
      res.writeHead = (() => res) as typeof res.writeHead;
    });
    const lease = await limiter.acquire(partitionFor('admin', { kind: 'other' }), { signal: deadline.signal });
    if (!lease.ok) {
      req.resume();
      return answerTooMany(res, lease.retryAfterSeconds);
    }
    release = lease.release;
    res.once('close', release);
    // Asks end a moment before the request timeout, so the use case's failure is answered rather than a bare 504.
    const deadlineMs = deadline.deadline === null ? 60 * 60_000 : Math.max(1_000, deadline.deadline - Date.now() - 250);

    const judgement = await deps.authenticate(req, effectiveOrigin(req, config.ReverseProxy));
    if (deadline.timedOut()) return; // answered 504 already
    if (judgement.kind !== 'admitted') {
      req.resume();
      if (judgement.kind === 'refused') return answerUnauthenticated(res, metadataUrl);
      return answerTokenRefusal(res, judgement.refusal, metadataUrl);
    }
    const principal = judgement.principal;

    const atPath = ROUTES.filter((r) => r.path === path);
    const route = atPath.find((r) => r.method === req.method);
    if (route === undefined) {
      req.resume();
      if (atPath.length === 0) return answerEmpty(res, 404);
      return answerEmpty(res, 405, { Allow: atPath.map((r) => r.method).join(', ') });
    }

    // The route filter: the permission the route publishes, before any body is read.
    if (route.permission !== null && !holds(principal, route.permission)) {
      req.resume();
      recordRefusal(log, { surface: 'admin', target: `${route.method} ${route.path}`, permission: route.permission, principal });
      return answerForbidden(res, route.permission);
    }

    let body: unknown;
    if (route.bodyLimit !== undefined) {
      const read = await readJsonBody(req, route.bodyLimit);
      if (deadline.timedOut()) return;
      if (read.kind === 'too-large') return answerTooLarge(res, route.bodyLimit);
      if (read.kind === 'not-json') return answerInvalid(res, 'Send the body as application/json.');
      if (read.kind === 'malformed') return answerInvalid(res, 'Send a body that is well-formed JSON.');
      body = read.value;
    } else {
      req.resume();
    }

    try {
      await route.handle({ req, res, principal, deadlineMs, useCases }, body);
    } catch (err) {
      if (deadline.timedOut()) return;
      if (err instanceof InvalidRequest) return answerInvalid(res, err.message);
      if (err instanceof AppError && err.code === 'E_APP_REFUSED') {
        const permission = err.details?.permission;
        if (typeof permission !== 'string') return answerUnauthenticated(res, metadataUrl);
        recordRefusal(log, { surface: 'admin', target: `${route.method} ${route.path}`, permission, principal });
        return answerForbidden(res, permission);
      }
      if (err instanceof AppError && err.code === 'E_KEYRING_MISSING') {
        log.error({ event: 'admin.keyring-missing', route: `${route.method} ${route.path}`, setting: 'DataEncryption:KeyRing' }, 'admin.keyring-missing');
        return answerEmpty(res, 500);
      }
      if (err instanceof AppError && (err.code === 'E_ACTOR_DOWN' || err.code === 'E_ACTOR_STOPPING' || err.code === 'E_ACTOR_MAILBOX_FULL')) {
        log.warn({ event: 'admin.unavailable', route: `${route.method} ${route.path}`, code: err.code }, 'admin.unavailable');
        return answerEmpty(res, 503);
      }
      throw err;
    }
  };

  return createServer((req, res) => {
    const path = pathOf(req.url);
    if (path.startsWith(METADATA_PREFIX) && serveMetadata(req, res, effectiveOrigin(req, config.ReverseProxy), endpoint.Authentication)) return;
    if (path !== ADMIN_PREFIX && !path.startsWith(`${ADMIN_PREFIX}/`)) {
      // `/mcp` and everything else: nothing is served here, and no credential is looked at.
      req.resume();
      return answerEmpty(res, 404);
    }
    admin(req, res, path).catch((err: unknown) => {
      // Only a known route's template reaches the log; any other path is the caller's text.
      const template = ROUTES.find((r) => r.path === path)?.path ?? ADMIN_PREFIX;
      log.error({ err: describe(err), event: 'http.failed', route: template }, 'http.failed');
      if (!res.headersSent) answerEmpty(res, 500);
      else res.destroy();
    });
  });
}

/** A failure for the log: an AppError by code and constant message; anything else by its name (a message might quote input). */
function describe(err: unknown): Record<string, unknown> {
  if (err instanceof AppError) return { code: err.code, message: err.message };
  return { type: err instanceof Error ? err.name : typeof err, ...(err instanceof Error && err.stack ? { stack: err.stack.split('\n').slice(1, 6).join('\n') } : {}) };
}

type Body = { kind: 'ok'; value: unknown } | { kind: 'too-large' } | { kind: 'not-json' } | { kind: 'malformed' };

/** A JSON body of at most `limit` bytes; the media type must be application/json (parameters such as charset allowed). */
async function readJsonBody(req: IncomingMessage, limit: number): Promise<Body> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json') {
    req.resume();
    return { kind: 'not-json' };
  }
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    return { kind: 'too-large' };
  }
  // Listeners, not `for await`: leaving an async iterator early destroys the request, and with it the socket the 413 goes out on.
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (body: Body): void => {
      if (settled) return;
      settled = true;
      chunks.length = 0;
      resolve(body);
    };
    req.on('data', (chunk: Buffer) => {
      if (settled) return; // past the limit: drained, not kept
      size += chunk.length;
      if (size > limit) return settle({ kind: 'too-large' });
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (settled) return;
      let value: unknown;
      try {
        value = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        return settle({ kind: 'malformed' });
      }
      settle({ kind: 'ok', value });
    });
    // The client went away mid-body: the request timeout's signal ends the rest; nothing is answered to nobody.
    req.on('error', () => settle({ kind: 'malformed' }));
    req.on('close', () => settle({ kind: 'malformed' }));
  });
}

