/**
 * XOAUTH2 access tokens for an account: the refresh token an operator placed
 * through the admin route is stored sealed (key ring, purpose
 * `token-sealing`, the account id as associated data) in
 * `mailbox_refresh_tokens`; this redeems it at the provider's token endpoint
 * and keeps the access token in memory until a minute before it expires. A
 * provider that rotates the refresh token has the new one sealed and stored
 * (this actor is that table's writer). What the endpoint's answer means is
 * decided in token-answer.ts; a refused credential or a misconfiguration
 * parks redemption here until a new refresh token is stored or the actor
 * restarts. Nothing here logs a token.
 */
import { readSecret } from '../../runtime/secret-ref.ts';
import { undici } from '../../runtime/http-retry/undici.ts';
import { AppError } from '../../runtime/errors.ts';
import { loadKeyRing } from '../../runtime/keyring/load.ts';
import { seal, unseal } from '../../runtime/keyring/keyring.ts';
import type { Database } from '../../runtime/store/open.ts';
import { one, run } from '../../runtime/store/rows.ts';
import type { ImapSyncConfig } from './protocol.ts';
import { classifyTokenAnswer, classifyTokenTransportFailure, type TokenAnswer, type TokenFailure, tokenFailureError } from './token-answer.ts';

type Cached = { token: string; expiresAt: number };
const RENEW_BEFORE_MS = 60_000;

export function storeRefreshToken(db: Database, config: ImapSyncConfig, refreshToken: string, now: number): void {
  const ring = loadKeyRing(config.keyRingRef ? readSecret(config.keyRingRef, process.env, 'DataEncryption:KeyRing') : undefined);
  const sealed = seal(ring, 'token-sealing', refreshToken, config.account);
  run(
    db.prepare(
      `INSERT INTO mailbox_refresh_tokens (account_id, key_id, sealed, stored_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (account_id) DO UPDATE SET key_id = excluded.key_id, sealed = excluded.sealed, stored_at = excluded.stored_at`,
    ),
    [config.account, ring.activeKeyId, sealed, now],
  );
}

export class AccessTokens {
  private cached: Cached | null = null;
  /** A refusal or misconfiguration seen: no redemption until a new refresh token is stored or the actor restarts (a configuration change). */
  private parked: TokenFailure | null = null;
  /** An outage's Retry-After: no redemption before this instant. */
  private notBefore = 0;
  private readonly db: Database;
  private readonly config: ImapSyncConfig;

  constructor(db: Database, config: ImapSyncConfig) {
    this.db = db;
    this.config = config;
  }

  /** Whether `current` would answer the access token already held rather than redeem. */
  wouldReuse(now = Date.now()): boolean {
    return this.cached !== null && this.cached.expiresAt - RENEW_BEFORE_MS > now;
  }

  async current(now = Date.now()): Promise<string> {
    if (this.cached && this.wouldReuse(now)) return this.cached.token;
    // Parked: the endpoint refused the credential or showed the settings wrong; asking again would only hammer it.
    if (this.parked !== null) throw tokenFailureError(this.parked, { parked: true });
    if (now < this.notBefore) throw new AppError('E_OAUTH_UNAVAILABLE', { details: { cause: 'retry-after' } });
    this.cached = await this.redeem(now);
    return this.cached.token;
  }

  /** The server refused the token we had: forget it so the next login redeems afresh. */
  forget(): void {
    this.cached = null;
  }

  /** An operator stored a new refresh token: whatever the old one earned (a cached token, a parking) is gone. */
  grantReplaced(): void {
    this.cached = null;
    this.parked = null;
    this.notBefore = 0;
  }

  private async redeem(now: number): Promise<Cached> {
    const oauth = this.config.imap.oauth;
    if (!oauth) throw new AppError('E_IMAP_AUTH', { details: { cause: 'no-oauth-configured' } });
    const row = one<{ sealed: string }>(this.db.prepare('SELECT sealed FROM mailbox_refresh_tokens WHERE account_id = ?'), [this.config.account]);
    if (!row) throw new AppError('E_OAUTH_REFRESH_MISSING');
    const ring = loadKeyRing(this.config.keyRingRef ? readSecret(this.config.keyRingRef, process.env, 'DataEncryption:KeyRing') : undefined);
    const refreshToken = unseal(ring, 'token-sealing', row.sealed, this.config.account).toString('utf8');
    const form = new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken });
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
    if (oauth.clientSecretRef) {
      // HTTP Basic: the client authentication every token endpoint must accept (RFC 6749 §2.3.1).
      const secret = readSecret(oauth.clientSecretRef, process.env, `Accounts:${this.config.account}:Imap:OAuth:ClientSecret`);
      headers.authorization = `Basic ${Buffer.from(`${formEncode(oauth.clientId)}:${formEncode(secret)}`).toString('base64')}`;
    } else {
      form.set('client_id', oauth.clientId); // a public client names itself
    }
    if (oauth.scopes.length > 0) form.set('scope', oauth.scopes.join(' '));
    let answer: TokenAnswer;
    try {
      const { request } = await undici();
      const res = await request(oauth.tokenEndpoint, {
        method: 'POST',
        headers,
        body: form.toString(),
        headersTimeout: this.config.connectTimeoutMs,
        bodyTimeout: this.config.connectTimeoutMs,
      });
      const text = await res.body.text();
      const retryAfter = res.headers['retry-after'];
      answer = { status: res.statusCode, body: parseJson(text), retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter };
    } catch (err) {
      throw this.failed(classifyTokenTransportFailure(err), now);
    }
    const verdict = classifyTokenAnswer(answer, now);
    if (verdict.kind !== 'granted') throw this.failed(verdict, now);
    if (verdict.refreshToken !== null && verdict.refreshToken !== refreshToken) {
      storeRefreshToken(this.db, this.config, verdict.refreshToken, now);
    }
    return { token: verdict.accessToken, expiresAt: now + lifetimeMs(verdict.expiresIn) };
  }

  /**
   * Remembers what a failed redemption means for the next ones: a refused
   * credential or a misconfiguration parks the account (asking again cannot
   * succeed; docs/sync.md), an outage with Retry-After holds the next ask
   * until then. Returns the error to throw.
   */
  private failed(failure: TokenFailure, now: number): AppError {
    if (failure.kind === 'outage') {
      this.notBefore = failure.retryAfterMs === null ? 0 : now + failure.retryAfterMs;
    } else {
      this.parked = failure;
    }
    return tokenFailureError(failure);
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * `expires_in` in milliseconds. RFC 6749 makes it a JSON number, but some providers send it as a
 * string ("3599"): read as absent, such a token would be kept for an hour whatever its real
 * lifetime, and the next login after it expired would be refused (E_IMAP_AUTH) instead of renewed.
 * Absent or unusable: an hour, the common default.
 */
function lifetimeMs(expiresIn: unknown): number {
  const seconds = typeof expiresIn === 'number' ? expiresIn : typeof expiresIn === 'string' && /^\s*\d+\s*$/.test(expiresIn) ? Number(expiresIn) : NaN;
  return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : 3_600_000;
}

/** application/x-www-form-urlencoded, as RFC 6749 §2.3.1 asks for the Basic user and password. */
function formEncode(value: string): string {
  return new URLSearchParams({ v: value }).toString().slice(2);
}
