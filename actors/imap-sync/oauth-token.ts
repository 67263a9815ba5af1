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
import { readSecret } from '../../config/secret-ref.ts';
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

  async current(now = Date.now()): Promise<string> {
    if (this.cached && this.cached.expiresAt - RENEW_BEFORE_MS > now) return this.cached.token;
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
    const form = new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken, client_id: oauth.clientId });
    if (oauth.clientSecretRef) form.set('client_secret', readSecret(oauth.clientSecretRef, process.env, `Accounts:${this.config.account}:Imap:OAuth:ClientSecret`));
    if (oauth.scopes.length > 0) form.set('scope', oauth.scopes.join(' '));
    let status: number;
    let body: Record<string, unknown>;
    try {
      const res = await request(oauth.tokenEndpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
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
    const lifetime = typeof body.expires_in === 'number' ? body.expires_in * 1000 : 3_600_000;
    return { token: body.access_token, expiresAt: now + lifetime };
  }
}
