/**
 * The HTTP client of the administrative endpoint (node:http, http-exchange.ts). Every request
 * carries the profile's credential, has 30 seconds to be answered in full
 * (docs/cli.md "Conditions and their messages"), and every way it can fail
 * becomes one of the sentences that table lists:
 * nothing listening, another listener, another service, no answer in time,
 * an untrusted or unpinned certificate, a refused credential, a missing
 * permission (403 with its `permission`), or a 400 passed on by its detail.
 *
 * No sentence carries the credential or anything the request body held.
 */
import { PinMismatch, UNTRUSTED_CODES } from './certificate.ts';
import { CliFailure, EXIT } from './failure.ts';
import { createTransport, type Exchange } from './http-exchange.ts';

export const ANSWER_LIMIT_MS = 30_000;
export const CONNECT_LIMIT_MS = 10_000;

export type SessionReport = { service: 'mailcairn'; version: string; credential: string; permissions: string[] };

/** Checked by hand rather than with zod, which every command would then load (docs/performance.md "Client start-up"). Members beyond these are allowed. */
function isSessionReport(value: unknown): value is SessionReport {
  if (typeof value !== 'object' || value === null) return false;
  const { service, version, credential, permissions } = value as Record<string, unknown>;
  return (
    service === 'mailcairn' &&
    typeof version === 'string' &&
    typeof credential === 'string' &&
    Array.isArray(permissions) &&
    permissions.every((permission) => typeof permission === 'string')
  );
}

/** The headers presenting the credential; called once per request (a key-pair assertion is never reused). */
export type Presenter = () => Promise<Record<string, string>>;

export type AdminClientOptions = {
  endpoint: string;
  present: Presenter;
  /** The pinned certificate fingerprint of the profile, if any. */
  certificateSha256?: string | undefined;
  /** The profile name for "log in again" hints. */
  profile?: string | undefined;
  /** Aborts the request under way (Ctrl-C): answered as interrupted. */
  signal?: AbortSignal | undefined;
  timeoutMs?: number;
};

export type AdminClient = {
  readonly endpoint: string;
  session(): Promise<SessionReport>;
  get(path: string, query?: Record<string, string | undefined>): Promise<unknown>;
  /** The JSON answer (200, or 201 for a record created), or null for a 204. */
  post(path: string, body: unknown): Promise<unknown>;
  /** Replaces a record with `body`; the JSON answer. */
  put(path: string, body: unknown): Promise<unknown>;
  /** The JSON answer of an erasure. */
  delete(path: string): Promise<unknown>;
  /** A GET presenting no credential (the OAuth protected-resource metadata): the status and the text, whatever they are. */
  anonymous(path: string): Promise<{ status: number; text: string }>;
  close(): Promise<void>;
};

function codeOf(err: unknown): string {
  let current: unknown = err;
  for (let depth = 0; depth < 4 && current && typeof current === 'object'; depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    current = (current as { cause?: unknown }).cause;
  }
  return err instanceof Error ? err.name : 'error';
}

const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EHOSTDOWN', 'ENETDOWN', 'ETIMEDOUT', 'EADDRNOTAVAIL']);
const LOST = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED']);

export function unreachable(endpoint: string, code: string): CliFailure {
  return new CliFailure(
    `${endpoint} could not be reached (${code}): nothing is listening there or the way is blocked. ` +
      'An endpoint bound to a loopback address (127.0.0.1, ::1) is unreachable from other machines.',
  );
}

export function notInTime(endpoint: string): CliFailure {
  return new CliFailure(`${endpoint} did not answer in time (${ANSWER_LIMIT_MS / 1000} seconds).`);
}

export function untrusted(endpoint: string, reason: string): CliFailure {
  return new CliFailure(
    `${endpoint} presents a certificate this machine does not trust (${reason}). Check its fingerprint with the deployment's operator, then log in with --trust-untrusted-certificate to pin it.`,
  );
}

function notIdentified(endpoint: string, why: string): CliFailure {
  return new CliFailure(`${endpoint} did not identify itself as a Mailcairn deployment (${why}): another service answers on that port.`);
}

/** A failure before any answer, by what the socket or parser reported. */
export function networkFailure(err: unknown, endpoint: string, interrupted: boolean): CliFailure {
  if (err instanceof CliFailure) return err;
  if (interrupted) return new CliFailure('Interrupted.', EXIT.interrupted);
  if (err instanceof PinMismatch) {
    return new CliFailure(
      `${endpoint} presents a certificate this profile has not pinned (SHA-256 ${err.presented}). If the deployment's certificate was replaced, check the new fingerprint, then log in again with --trust-untrusted-certificate.`,
    );
  }
  const code = codeOf(err);
  if (code === 'TimeoutError' || code === 'AbortError' || code === 'ABORT_ERR') return notInTime(endpoint);
  if (UNTRUSTED_CODES.has(code)) return untrusted(endpoint, code);
  if (UNREACHABLE.has(code)) return unreachable(endpoint, code);
  if (code.startsWith('HPE_')) return notIdentified(endpoint, 'it does not speak HTTP');
  if (code.startsWith('ERR_SSL_') || code === 'EPROTO') return notIdentified(endpoint, 'no TLS was served there');
  if (LOST.has(code)) return new CliFailure(`The connection to ${endpoint} was lost before it answered (${code}).`);
  return new CliFailure(`The request to ${endpoint} failed (${code}).`);
}

function problemOf(text: string): { detail?: string; permission?: string } {
  try {
    const value: unknown = JSON.parse(text);
    if (value && typeof value === 'object') {
      const { detail, permission } = value as Record<string, unknown>;
      return { ...(typeof detail === 'string' ? { detail } : {}), ...(typeof permission === 'string' ? { permission } : {}) };
    }
  } catch {
    // not a problem document
  }
  return {};
}

function header(headers: Exchange['headers'], name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

export function createAdminClient(options: AdminClientOptions): AdminClient {
  const { endpoint } = options;
  const timeoutMs = options.timeoutMs ?? ANSWER_LIMIT_MS;
  const transport = createTransport({ certificateSha256: options.certificateSha256, connectLimitMs: CONNECT_LIMIT_MS });
  const again = `log in again (mailcairn login --endpoint ${options.profile ?? endpoint})`;

  const exchange = async (
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    path: string,
    query?: Record<string, string | undefined>,
    body?: unknown,
    present: AdminClientOptions['present'] = options.present,
  ): Promise<Exchange> => {
    const url = new URL(`${endpoint}${path}`);
    for (const [name, value] of Object.entries(query ?? {})) if (value !== undefined) url.searchParams.set(name, value);
    // The whole answer's limit: from before the credential is presented to the answer's last byte.
    const limit = AbortSignal.timeout(timeoutMs);
    const signal = options.signal ? AbortSignal.any([limit, options.signal]) : limit;
    try {
      const headers = { accept: 'application/json', ...(await present()), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) };
      return await transport.send(method, url, headers, body !== undefined ? JSON.stringify(body) : undefined, signal);
    } catch (err) {
      const interrupted = options.signal?.aborted === true;
      if (limit.aborted && !interrupted) throw notInTime(endpoint);
      throw networkFailure(err, endpoint, interrupted);
    }
  };

  const refused = { refusal: true };
  /** A refusal or failure answered with a status, as the client conditions word it. */
  const refusal = (answer: Exchange, route: string): CliFailure => {
    const problem = problemOf(answer.text);
    switch (answer.status) {
      case 400:
      case 413:
        return new CliFailure(`The deployment refused the request: ${problem.detail ?? `status ${answer.status}, with no reason given`}`, EXIT.failed, refused);
      case 401:
        return new CliFailure(
          `The deployment refused the credential of this profile (it is unknown there, expired or revoked); ${again}.`,
          EXIT.failed,
          refused,
        );
      case 403: {
        const permission = problem.permission ?? 'named in its answer';
        return new CliFailure(
          `The deployment refused the operation: the credential does not hold the permission ${permission}. ` +
            `Add ${permission} to the Permissions of this credential's entry (AdminEndpoint:Authentication), or log in with a credential that holds it.`,
          EXIT.failed,
          refused,
        );
      }
      case 404:
        // A route naming a record in its path answers a problem document when it holds none by that name; a path no route serves answers an empty 404.
        if (problem.detail !== undefined) return new CliFailure(`Not found: ${problem.detail}`, EXIT.failed, { refusal: true, status: 404 });
        return new CliFailure(`${endpoint} does not serve ${route}: this build of the deployment has no such route.`);
      case 405:
        return new CliFailure(`${endpoint} does not serve ${route}: this build of the deployment has no such route.`);
      case 429: {
        const after = header(answer.headers, 'retry-after');
        return new CliFailure(`The deployment is limiting requests (429); try again${after ? ` in ${after} seconds` : ' shortly'}.`);
      }
      case 500:
        return new CliFailure('The deployment failed the request (500); its log says why.');
      case 503:
        return new CliFailure('The deployment cannot do this now (503): the part that does the work is not running; its log says why.');
      case 504:
        return new CliFailure('The deployment abandoned the request at its own time limit (504).');
      default:
        // Another refusal with its sentence (a collected contact amended in place: the status is the deployment's to choose).
        if (answer.status >= 400 && answer.status < 500 && problem.detail !== undefined) {
          return new CliFailure(`The deployment refused the request: ${problem.detail}`, EXIT.failed, refused);
        }
        return new CliFailure(`${endpoint} answered ${route} with status ${answer.status}.`);
    }
  };

  const json = (answer: Exchange, route: string): unknown => {
    try {
      return JSON.parse(answer.text);
    } catch {
      throw new CliFailure(`${endpoint} answered ${route} with a document this client cannot read.`);
    }
  };

  return {
    endpoint,
    async session() {
      const route = 'GET /api/admin/session';
      const answer = await exchange('GET', '/api/admin/session');
      if (answer.status === 404) {
        throw new CliFailure(
          `${endpoint} serves no administrative endpoint: the listener there serves something else (the MCP endpoint answers this way). Name the address of AdminEndpoint (its BindAddress and Port).`,
        );
      }
      if (answer.status === 401) {
        // Only Mailcairn challenges with this realm; any other 401 is some other service's.
        if (/realm="mailcairn"/.test(header(answer.headers, 'www-authenticate') ?? '')) throw refusal(answer, route);
        throw notIdentified(endpoint, 'it challenged for another realm');
      }
      if (answer.status === 403 && answer.text === '') {
        // The session route needs no permission: an empty 403 is the credential judged valid but admitting no one (an OAuth subject no server authorizes; docs/security.md).
        throw new CliFailure(
          `The deployment refused the credential of this profile: the token is valid, but its subject is not among the AuthorizedSubjects of the server that issued it; add it there, or ${again}.`,
          EXIT.failed,
          refused,
        );
      }
      if (answer.status >= 300 && answer.status < 400) {
        const location = header(answer.headers, 'location');
        throw new CliFailure(`${endpoint} redirects elsewhere (${answer.status}${location ? ` to ${location}` : ''}); log in with the address it names.`);
      }
      if (answer.status === 429 || answer.status === 500 || answer.status === 503 || answer.status === 504) throw refusal(answer, route);
      if (answer.status !== 200) throw notIdentified(endpoint, `status ${answer.status}`);
      let value: unknown;
      try {
        value = JSON.parse(answer.text);
      } catch {
        throw notIdentified(endpoint, 'its answer is not JSON');
      }
      if (!isSessionReport(value)) throw notIdentified(endpoint, 'its answer is not a session report');
      return value;
    },
    async get(path, query) {
      const route = `GET ${path}`;
      const answer = await exchange('GET', path, query);
      if (answer.status !== 200) throw refusal(answer, route);
      return json(answer, route);
    },
    async post(path, body) {
      const route = `POST ${path}`;
      const answer = await exchange('POST', path, undefined, body);
      if (answer.status === 204) return null;
      // 201: a record created (a contact).
      if (answer.status !== 200 && answer.status !== 201) throw refusal(answer, route);
      return json(answer, route);
    },
    async put(path, body) {
      const route = `PUT ${path}`;
      const answer = await exchange('PUT', path, undefined, body);
      if (answer.status !== 200) throw refusal(answer, route);
      return json(answer, route);
    },
    async delete(path) {
      const route = `DELETE ${path}`;
      const answer = await exchange('DELETE', path);
      if (answer.status !== 200) throw refusal(answer, route);
      return json(answer, route);
    },
    async anonymous(path) {
      const answer = await exchange('GET', path, undefined, undefined, async () => ({}));
      return { status: answer.status, text: answer.text };
    },
    async close() {
      transport.close();
    },
  };
}
