/**
 * The authentication stage of a surface: which configured entry, if any,
 * admits the request. It tells the credential's shape apart (docs/security.md
 * "Credential entries") and asks the one judge for it: API key
 * (`api-key.ts`), client assertion (`client-assertion.ts`) or access token
 * (`oauth/access-token.ts`). It answers nothing itself: the limiter runs
 * next (a refused credential spends the shared anonymous partition), then
 * authorization answers the 401 or 403.
 *
 * Logged here, by entry name and position only, never a credential,
 * material or reference target: an expired key (warning), vanished material
 * (error), key-pair issues (warning), the cause of a refused token (info).
 *
 * Key material comes from memory (`runtime/secret-cache.ts`): a request
 * awaits the cache's `fresh`, which resolves once each key file was checked
 * (an asynchronous stat, shared by concurrent requests, and a read only when
 * the file changed) after the request arrived, then judges synchronously
 * against what it holds. No synchronous file I/O on the request path; a
 * rewritten or deleted key file takes effect on the next request.
 */
import type { IncomingMessage } from 'node:http';
import { createSecretCache, type SecretCache } from '../../runtime/secret-cache.ts';
import type { CredentialEntry } from '../../config/schema/credential-entry.ts';
import type { Logger } from '../../runtime/log.ts';
import type { EffectiveOrigin } from '../proxy.ts';
import { apiKeyHeaderOf, bearerOf, judgeApiKey } from './api-key.ts';
import { ASSERTION_AUDIENCES, judgeAssertion, type ClaimJti } from './client-assertion.ts';
import { credentialShape } from './credential-shape.ts';
import { judgeAccessToken, type TokenJudgement } from './oauth/access-token.ts';
import type { KeySets } from './oauth/key-sets.ts';
import { serversOf } from './oauth/entries.ts';
import { anonymousPrincipal, resolveGrants, surfaceSection, type Principal, type Surface } from './principal.ts';

export type Judgement =
  | { kind: 'admitted'; principal: Principal; partition: { kind: 'api-key'; name: string } | { kind: 'other' } }
  /** Nothing admitted the request: 401 once the limiter let it through. */
  | { kind: 'refused' }
  /** A token: 403 with the insufficient_scope challenge, or a plain 403 for another subject. */
  | { kind: 'forbidden'; refusal: Exclude<TokenJudgement, { kind: 'admitted' | 'refused' }> };

export type Authenticate = (req: IncomingMessage, origin: EffectiveOrigin) => Promise<Judgement>;

export type AuthenticateDeps = {
  log: Logger;
  env: NodeJS.ProcessEnv;
  /** Stores an assertion's jti until it expires; false when it was served before (the replay guard). */
  claimJti: ClaimJti;
  keySets: KeySets;
  now?: () => number;
  /** Where key material is read from; one cache of this surface's references by default. */
  secrets?: SecretCache;
};

export function createAuthenticator(surface: Surface, entries: readonly CredentialEntry[], deps: AuthenticateDeps): Authenticate {
  const section = surfaceSection(surface);
  if (entries.length === 0) {
    const principal = anonymousPrincipal(surface);
    return async () => ({ kind: 'admitted', principal, partition: { kind: 'other' } });
  }
  const grants = resolveGrants(surface, entries, deps.log);
  const now = deps.now ?? Date.now;
  const secrets = deps.secrets ?? createSecretCache({ env: deps.env, setting: `${section}:Authentication` });
  const read = (ref: string): string => secrets.read(ref);
  const apiKeys = entries.map((e) => e.ApiKey);
  const publicKeys = entries.map((e) => e.PublicKey);
  const apiKeyRefs = apiKeys.flatMap((e) => (e === undefined ? [] : [e.SecretReference]));
  const publicKeyRefs = publicKeys.flatMap((e) => (e === undefined ? [] : [e.SecretReference]));
  secrets.refresh([...apiKeyRefs, ...publicKeyRefs]);
  const issuers = serversOf(entries).map((s) => s.Issuer);
  const caller = (entryIndex: number, identity: string): Principal => ({ kind: 'caller', identity, permissions: grants[entryIndex]! });
  const log = deps.log.child({ surface });

  const byApiKey = async (presented: string): Promise<Judgement> => {
    await secrets.fresh(apiKeyRefs);
    const judged = judgeApiKey(presented, apiKeys, now(), read);
    for (const cause of judged.causes) {
      if (cause.cause === 'expired')
        log.warn({ event: 'auth.key-expired', entry: cause.name, setting: `${section}:Authentication:${cause.entryIndex}` }, 'auth.key-expired');
      else if (cause.cause === 'material-unreadable')
        log.error(
          { event: 'auth.material-unreadable', entry: cause.name, setting: `${section}:Authentication:${cause.entryIndex}:ApiKey` },
          'auth.material-unreadable',
        );
    }
    if (judged.kind !== 'admitted') return { kind: 'refused' };
    return { kind: 'admitted', principal: caller(judged.entryIndex, judged.name), partition: { kind: 'api-key', name: judged.name } };
  };

  return async (req, origin) => {
    const bearer = bearerOf(req);
    const headerKey = surface === 'admin' ? apiKeyHeaderOf(req) : null;
    if (bearer !== null && headerKey !== null) return { kind: 'refused' }; // two credentials: ambiguous, judge neither
    if (headerKey !== null) return byApiKey(headerKey);
    if (bearer === null) return { kind: 'refused' };
    switch (credentialShape(bearer, issuers)) {
      case 'api-key':
        return byApiKey(bearer);
      case 'assertion': {
        await secrets.fresh(publicKeyRefs);
        const judged = await judgeAssertion(bearer, publicKeys, ASSERTION_AUDIENCES[section], now(), read, deps.claimJti);
        for (const index of judged.unreadable)
          log.error({ event: 'auth.material-unreadable', setting: `${section}:Authentication:${index}:PublicKey` }, 'auth.material-unreadable');
        if (judged.kind === 'admitted') return { kind: 'admitted', principal: caller(judged.entryIndex, judged.name), partition: { kind: 'other' } };
        log.warn({ event: 'auth.assertion-refused', cause: judged.cause, ...(judged.name ? { entry: judged.name } : {}) }, 'auth.assertion-refused');
        return { kind: 'refused' };
      }
      case 'access-token': {
        const judged = await judgeAccessToken(bearer, entries, { overTls: origin.scheme === 'https', now: now(), keySets: deps.keySets });
        if (judged.kind === 'admitted')
          return { kind: 'admitted', principal: caller(judged.entryIndex, `${judged.issuer} ${judged.subject}`), partition: { kind: 'other' } };
        log.info({ event: 'auth.token-refused', cause: judged.cause, ...(judged.server ? { server: judged.server } : {}) }, 'auth.token-refused');
        return judged.kind === 'refused' ? { kind: 'refused' } : { kind: 'forbidden', refusal: judged };
      }
    }
  };
}
