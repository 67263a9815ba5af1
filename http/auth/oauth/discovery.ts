/**
 * Finding an authorization server's metadata document (docs/security.md
 * "OAuth access tokens"): the addresses are tried in this order
 *   1. `{issuer_origin}/.well-known/oauth-authorization-server{issuer_path}`
 *   2. `{issuer_origin}/.well-known/openid-configuration{issuer_path}`
 *   3. `{issuer}/.well-known/openid-configuration` (dropped when the issuer has no path)
 * and the first that answers with a document whose `issuer` is the
 * configured issuer, character for character, wins. A configured
 * `MetadataAddress` replaces the list (the issuer is still checked).
 *
 * Documents are cached (`ttlMs`, default an hour). A stale document keeps
 * being served while a refetch runs in the background, so an authorization
 * server's brief outage does not refuse tokens it already signed. A failed
 * discovery is retried with exponential backoff per server, and until then
 * answered at once without touching the network: a flood of tokens naming a
 * dead server costs nothing but the refusal. Nothing here throws.
 *
 * Importable from `http/auth/**` only.
 */
import { isLoopbackHost } from '../../../config/ip-address.ts';
import { type Clock, mathRandom, type Random, systemClock } from '../../../runtime/clock.ts';
import type { Logger } from '../../../runtime/log.ts';
import { type ServerRef, serverKey } from './entries.ts';
import { type FetchJson, fetchJson } from './fetch-json.ts';

/** What the service uses of a server's metadata document. */
export type ServerMetadata = { issuer: string; jwksUri: string; foundAt: string };
export type DiscoveryOutcome = { kind: 'found'; metadata: ServerMetadata } | { kind: 'failed' };

export type Discovery = {
  metadata(server: ServerRef): Promise<DiscoveryOutcome>;
};

export type Backoff = { baseMs: number; maxMs: number; jitter: number };

export type DiscoveryOptions = {
  fetch?: FetchJson;
  clock?: Clock;
  random?: Random;
  log?: Logger;
  /** How long a found document is used before it is read again (default 1 h). */
  ttlMs?: number;
  /** Delay before retrying a failed discovery (default 1 s doubling to 5 min, ±20 %). */
  backoff?: Backoff;
};

const DEFAULT_BACKOFF: Backoff = { baseMs: 1_000, maxMs: 5 * 60_000, jitter: 0.2 };

/** The delay after the `failures`-th failure in a row (pure; `random` in [0, 1)). */
export function retryDelayMs(failures: number, backoff: Backoff, random: number): number {
  const raw = Math.min(backoff.maxMs, backoff.baseMs * 2 ** Math.max(0, failures - 1));
  return Math.round(raw * (1 - backoff.jitter + 2 * backoff.jitter * random));
}

/** The addresses discovery tries for `issuer`, in order. */
export function discoveryAddresses(issuer: string): string[] {
  const url = new URL(issuer);
  // RFC 8414 section 3.1 and OpenID Discovery section 4: a terminating slash is
  // removed before anything is inserted or appended; '/' alone is no path.
  const path = url.pathname.replace(/\/+$/, '');
  const origin = url.origin;
  const addresses = [`${origin}/.well-known/oauth-authorization-server${path}`, `${origin}/.well-known/openid-configuration${path}`];
  if (path !== '') addresses.push(`${origin}${path}/.well-known/openid-configuration`);
  return addresses;
}

/** Whether `value` may be a key set address: https, or http to a loopback host (as the config allows issuers). */
function usableAddress(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  try {
    const url = new URL(value);
    if (url.username !== '' || url.password !== '') return false;
    return url.protocol === 'https:' || (url.protocol === 'http:' && isLoopbackHost(url.hostname));
  } catch {
    return false;
  }
}

type Attempt = { url: string; reason: string; status?: number };

type State = {
  doc?: ServerMetadata;
  fetchedAt: number;
  failures: number;
  retryAt: number;
  inflight?: Promise<void>;
};

export function createDiscovery(options: DiscoveryOptions = {}): Discovery {
  const fetch = options.fetch ?? fetchJson();
  const clock = options.clock ?? systemClock;
  const random = options.random ?? mathRandom;
  const ttlMs = options.ttlMs ?? 60 * 60_000;
  const backoff = options.backoff ?? DEFAULT_BACKOFF;
  const states = new Map<string, State>();

  async function read(server: ServerRef): Promise<{ doc?: ServerMetadata; attempts: Attempt[] }> {
    const addresses = server.MetadataAddress !== undefined ? [server.MetadataAddress] : discoveryAddresses(server.Issuer);
    const attempts: Attempt[] = [];
    for (const url of addresses) {
      const got = await fetch(url);
      if (got.kind === 'failed') {
        attempts.push({ url, reason: got.reason, ...(got.status !== undefined ? { status: got.status } : {}) });
        continue;
      }
      const json = got.json as { issuer?: unknown; jwks_uri?: unknown } | null;
      if (json === null || typeof json !== 'object' || Array.isArray(json)) {
        attempts.push({ url, reason: 'not-an-object' });
        continue;
      }
      // Exact string equality (RFC 8414 section 3.3): a document of another
      // issuer at one of these addresses is passed over, not trusted.
      if (json.issuer !== server.Issuer) {
        attempts.push({ url, reason: 'other-issuer' });
        continue;
      }
      if (!usableAddress(json.jwks_uri)) {
        attempts.push({ url, reason: 'no-usable-jwks_uri' });
        continue;
      }
      return { doc: { issuer: json.issuer, jwksUri: json.jwks_uri, foundAt: url }, attempts };
    }
    return { attempts };
  }

  function load(server: ServerRef, state: State): Promise<void> {
    const run = (async () => {
      const { doc, attempts } = await read(server);
      const now = clock.now();
      if (doc !== undefined) {
        if (state.doc === undefined || state.doc.jwksUri !== doc.jwksUri || state.doc.foundAt !== doc.foundAt) {
          options.log?.info(
            { event: 'oauth.discovered', server: server.Name, issuer: server.Issuer, url: doc.foundAt, jwksUri: doc.jwksUri },
            'oauth.discovered',
          );
        }
        state.doc = doc;
        state.fetchedAt = now;
        state.failures = 0;
        state.retryAt = 0;
        return;
      }
      state.failures += 1;
      const delayMs = retryDelayMs(state.failures, backoff, random.next());
      state.retryAt = now + delayMs;
      options.log?.warn(
        {
          event: 'oauth.discovery-failed',
          server: server.Name,
          issuer: server.Issuer,
          attempts,
          failures: state.failures,
          retryInMs: delayMs,
          stale: state.doc !== undefined,
        },
        'oauth.discovery-failed',
      );
    })()
      .catch((err: unknown) => {
        // Not expected (fetch never throws); kept so a bug here is a refusal, not a crash.
        state.failures += 1;
        state.retryAt = clock.now() + retryDelayMs(state.failures, backoff, random.next());
        options.log?.error({ err, event: 'oauth.discovery-failed', server: server.Name }, 'oauth.discovery-failed');
      })
      .finally(() => {
        state.inflight = undefined;
      });
    state.inflight = run;
    return run;
  }

  return {
    async metadata(server) {
      const key = serverKey(server);
      let state = states.get(key);
      if (state === undefined) {
        state = { fetchedAt: 0, failures: 0, retryAt: 0 };
        states.set(key, state);
      }
      const now = clock.now();
      if (state.doc !== undefined) {
        if (now - state.fetchedAt >= ttlMs && state.inflight === undefined && now >= state.retryAt) void load(server, state);
        return { kind: 'found', metadata: state.doc };
      }
      if (state.inflight === undefined) {
        if (now < state.retryAt) return { kind: 'failed' };
        void load(server, state);
      }
      await state.inflight;
      return state.doc !== undefined ? { kind: 'found', metadata: state.doc } : { kind: 'failed' };
    },
  };
}
