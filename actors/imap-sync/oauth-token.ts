/**
 * XOAUTH2 access tokens for an account: the refresh token an operator placed
 * through the admin route is stored sealed (key ring, purpose
 * `token-sealing`, the account id as associated data) in
 * `mailbox_refresh_tokens`; this redeems it at the provider's token endpoint
 * and keeps the access token in memory until a minute before it expires. A
 * provider that rotates the refresh token has the new one sealed and stored
 * (this actor is that table's writer). Nothing here logs a token.
 */
import { request } from 'undici';
import { readSecret } from '../../runtime/secret-ref.ts';
import { AppError } from '../../runtime/errors.ts';
import { loadKeyRing } from '../../runtime/keyring/load.ts';
import { seal, unseal } from '../../runtime/keyring/keyring.ts';
import type { Database } from '../../runtime/store/open.ts';
import { one, run } from '../../runtime/store/rows.ts';
import type { ImapSyncConfig } from './protocol.ts';

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
    this.cached = await this.redeem(now);
    return this.cached.token;
  }

  /** The server refused the token we had: forget it so the next login redeems afresh. */
  forget(): void {
    this.cached = null;
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
    let status: number;
    let body: Record<string, unknown>;
    try {
      const res = await request(oauth.tokenEndpoint, {
        method: 'POST',
        headers,
        body: form.toString(),
        headersTimeout: this.config.connectTimeoutMs,
        bodyTimeout: this.config.connectTimeoutMs,
      });
      status = res.statusCode;
      body = (await res.body.json().catch(() => ({}))) as Record<string, unknown>;
    } catch (err) {
      throw new AppError('E_IMAP_UNRESPONSIVE', { details: { cause: 'token-endpoint' }, cause: err });
    }
    if (status === 400 || status === 401) throw new AppError('E_OAUTH_REFRESH_REFUSED', { details: { status } });
    if (status >= 500 || typeof body.access_token !== 'string') throw new AppError('E_IMAP_UNRESPONSIVE', { details: { cause: 'token-endpoint', status } });
    if (typeof body.refresh_token === 'string' && body.refresh_token !== refreshToken) {
      storeRefreshToken(this.db, this.config, body.refresh_token, now);
    }
    return { token: body.access_token, expiresAt: now + lifetimeMs(body.expires_in) };
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
