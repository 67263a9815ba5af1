/**
 * One key set per authorization server (docs/security.md "OAuth access
 * tokens": servers are isolated), read from the `jwks_uri` of the server's
 * metadata document (`discovery.ts`). A token is only ever checked against the
 * set of the server its `iss` names, so one server's keys never vouch for
 * another's tokens.
 *
 * Sets are cached (`maxAgeMs`, default 10 min; a stale set keeps serving
 * while a background read runs). A token whose `kid` the set does not hold
 * asks for a re-read (`refresh`), at most once per `minRefreshIntervalMs`
 * (default 30 s) per server: a rotated signing key is picked up on its first
 * token, and a stream of tokens with made-up key ids cannot turn into a
 * stream of requests to the server. A failed read is retried with backoff
 * and the last good set stays in use. Nothing here throws.
 *
 * Importable from `http/auth/**` only.
 */
import { createLocalJWKSet, type JSONWebKeySet } from 'jose';
import { type Clock, mathRandom, type Random, systemClock } from '../../../runtime/clock.ts';
import type { Logger } from '../../../runtime/log.ts';
import { type Backoff, createDiscovery, type Discovery, retryDelayMs } from './discovery.ts';
import { type ServerRef, serverKey } from './entries.ts';
import { type FetchJson, fetchJson } from './fetch-json.ts';

/** A server's keys as jose resolves them: by `kid`, key type and curve, for an allow-listed `alg`. */
export type KeySet = ReturnType<typeof createLocalJWKSet>;
export type KeySetOutcome = { kind: 'found'; keys: KeySet } | { kind: 'failed' };

export type KeySets = {
  /** The server's current set (read on first use). */
  keys(server: ServerRef): Promise<KeySetOutcome>;
  /** Re-read after an unknown key id; null when the set was read too recently to read it again. */
  refresh(server: ServerRef): Promise<KeySetOutcome | null>;
  /** Start discovery and the key set reads of `servers` without waiting (at startup). */
  warm(servers: readonly ServerRef[]): void;
};

export type KeySetsOptions = {
  discovery?: Discovery;
  fetch?: FetchJson;
  clock?: Clock;
  random?: Random;
  log?: Logger;
  /** How long a set is used before it is read again (default 10 min). */
  maxAgeMs?: number;
  /** Least time between two reads of one server's set asked by unknown key ids (default 30 s). */
  minRefreshIntervalMs?: number;
  /** Delay before retrying a failed read (default 1 s doubling to 5 min, ±20 %). */
  backoff?: Backoff;
};

type State = {
  keys?: KeySet;
  kids: string[];
  fetchedAt: number;
  attemptedAt: number;
  failures: number;
  retryAt: number;
  inflight?: Promise<void>;
};

function keyIds(json: unknown): string[] {
  const keys = (json as { keys?: unknown } | null)?.keys;
  return Array.isArray(keys) ? keys.map((k) => (typeof (k as { kid?: unknown })?.kid === 'string' ? (k as { kid: string }).kid : '')) : [];
}

export function createKeySets(options: KeySetsOptions = {}): KeySets {
  const clock = options.clock ?? systemClock;
  const random = options.random ?? mathRandom;
  const fetch = options.fetch ?? fetchJson();
  const discovery = options.discovery ?? createDiscovery({ fetch, clock, random, ...(options.log ? { log: options.log } : {}) });
  const maxAgeMs = options.maxAgeMs ?? 10 * 60_000;
  const minRefreshIntervalMs = options.minRefreshIntervalMs ?? 30_000;
  const backoff = options.backoff ?? { baseMs: 1_000, maxMs: 5 * 60_000, jitter: 0.2 };
  const states = new Map<string, State>();

  const stateOf = (server: ServerRef): State => {
    const key = serverKey(server);
    let state = states.get(key);
    if (state === undefined) {
      state = { kids: [], fetchedAt: 0, attemptedAt: Number.NEGATIVE_INFINITY, failures: 0, retryAt: 0 };
      states.set(key, state);
    }
    return state;
  };

  async function read(server: ServerRef, state: State): Promise<void> {
    const fail = (reason: string, extra: Record<string, unknown> = {}): void => {
      state.failures += 1;
      const delayMs = retryDelayMs(state.failures, backoff, random.next());
      state.retryAt = clock.now() + delayMs;
      options.log?.warn(
        {
          event: 'oauth.keys-failed',
          server: server.Name,
          issuer: server.Issuer,
          reason,
          ...extra,
          failures: state.failures,
          retryInMs: delayMs,
          stale: state.keys !== undefined,
        },
        'oauth.keys-failed',
      );
    };
    const found = await discovery.metadata(server);
    if (found.kind === 'failed') return fail('discovery');
    const got = await fetch(found.metadata.jwksUri);
    if (got.kind === 'failed') return fail(got.reason, { url: found.metadata.jwksUri, ...(got.status !== undefined ? { status: got.status } : {}) });
    let keys: KeySet;
    try {
      keys = createLocalJWKSet(got.json as JSONWebKeySet);
    } catch {
      return fail('not-a-key-set', { url: found.metadata.jwksUri });
    }
    const kids = keyIds(got.json);
    if (state.keys === undefined || kids.join('\u0000') !== state.kids.join('\u0000')) {
      options.log?.info({ event: 'oauth.keys-loaded', server: server.Name, issuer: server.Issuer, kids }, 'oauth.keys-loaded');
    }
    state.keys = keys;
    state.kids = kids;
    state.fetchedAt = clock.now();
    state.failures = 0;
    state.retryAt = 0;
  }

  function load(server: ServerRef, state: State): Promise<void> {
    state.attemptedAt = clock.now();
    const run = read(server, state)
      .catch((err: unknown) => {
        state.failures += 1;
        state.retryAt = clock.now() + retryDelayMs(state.failures, backoff, random.next());
        options.log?.error({ err, event: 'oauth.keys-failed', server: server.Name }, 'oauth.keys-failed');
      })
      .finally(() => {
        state.inflight = undefined;
      });
    state.inflight = run;
    return run;
  }

  const outcome = (state: State): KeySetOutcome => (state.keys !== undefined ? { kind: 'found', keys: state.keys } : { kind: 'failed' });

  return {
    async keys(server) {
      const state = stateOf(server);
      const now = clock.now();
      if (state.keys !== undefined) {
        if (now - state.fetchedAt >= maxAgeMs && state.inflight === undefined && now >= state.retryAt) void load(server, state);
        return outcome(state);
      }
      if (state.inflight === undefined) {
        if (now < state.retryAt) return { kind: 'failed' };
        void load(server, state);
      }
      await state.inflight;
      return outcome(state);
    },
    async refresh(server) {
      const state = stateOf(server);
      if (state.inflight !== undefined) {
        await state.inflight;
        return outcome(state);
      }
      const now = clock.now();
      if (now - state.attemptedAt < minRefreshIntervalMs || now < state.retryAt) return null;
      await load(server, state);
      return outcome(state);
    },
    warm(servers) {
      for (const server of servers) {
        const state = stateOf(server);
        if (state.keys === undefined && state.inflight === undefined) void load(server, state);
      }
    },
  };
}
