/**
 * Tokens of an OAuth sign-in (client rules 5 and 7, Authentication 9; docs/cli.md
 * "Renewal and the end of a sign-in"):
 *
 * - A token answer must carry a Bearer access token and a refresh token; one
 *   without a refresh token is refused ("issued no refresh token"), since the
 *   sign-in would end with its first access token.
 * - The access token is renewed when it is within a minute of expiry
 *   (`refresh_token` grant, with the resource), once per command at most,
 *   before the request that needs it. The new access token and its expiry
 *   are stored; a refresh token in the renewal answer (rotation) is
 *   discarded, so the refresh token issued at sign-in is the one kept and
 *   the sign-in ends when it expires or is revoked.
 * - `invalid_grant` at renewal ends the sign-in: "The sign-in has ended",
 *   naming the stored token and its profile (every command but `login`
 *   runs under a stored sign-in: that is how "a command that had a session"
 *   is read). At `login` there is no stored token to name.
 */
import { decodeJwt } from 'jose';
import type { Presenter } from '../admin-client.ts';
import { readCredentialFile, seal, unseal, writeCredentialFile, type OAuthRenewal, type StoredProfile } from '../credential-file.ts';
import { CliFailure } from '../failure.ts';
import { errorCode, postForm, type ServerAnswer } from './http.ts';

/** Renew when the access token has this little left (client rule 7). */
export const RENEW_WITHIN_MS = 60_000;

export type TokenSet = { accessToken: string; refreshToken: string | undefined; expiresAt: number };

/** Whether an access token expiring at `expiresAt` is renewed before use at `now`. */
export function needsRenewal(expiresAt: number, now: number): boolean {
  return expiresAt - now <= RENEW_WITHIN_MS;
}

/** When an access token expires: `expires_in` of the answer, else the JWT's `exp`, else now (renewed at the next command). */
function expiryOf(answer: Record<string, unknown>, accessToken: string, now: number): number {
  const expiresIn = answer.expires_in;
  if (typeof expiresIn === 'number' && Number.isFinite(expiresIn) && expiresIn > 0) return now + expiresIn * 1000;
  try {
    const { exp } = decodeJwt(accessToken);
    if (typeof exp === 'number') return exp * 1000;
  } catch {
    // not a JWT: expiry unknown
  }
  return now;
}

/** A successful token answer (RFC 6749 5.1), or a sentence saying what was wrong with it. */
export function readTokenAnswer(answer: ServerAnswer, issuer: string, now = Date.now()): TokenSet {
  const body = answer.json;
  const accessToken = body?.access_token;
  if (answer.status !== 200 || body === null || typeof accessToken !== 'string' || accessToken === '')
    throw new CliFailure(`The authorization server ${issuer} answered the token request with no access token (status ${answer.status}).`);
  if (typeof body.token_type !== 'string' || body.token_type.toLowerCase() !== 'bearer')
    throw new CliFailure(`The authorization server ${issuer} issued a token that is not a Bearer token; the deployment accepts Bearer tokens only.`);
  const refreshToken = typeof body.refresh_token === 'string' && body.refresh_token !== '' ? body.refresh_token : undefined;
  return { accessToken, refreshToken, expiresAt: expiryOf(body, accessToken, now) };
}

/** The tokens of a completed sign-in; refused without a refresh token. */
export function requireRefreshToken(tokens: TokenSet, issuer: string, clientId: string): TokenSet & { refreshToken: string } {
  if (tokens.refreshToken === undefined) {
    throw new CliFailure(
      `The authorization server ${issuer} issued no refresh token, so the sign-in would end with its first access token; nothing was stored. ` +
        `Grant offline access (offline_access, the refresh_token grant) to client ${clientId} there, or use --mode key.`,
    );
  }
  return { ...tokens, refreshToken: tokens.refreshToken };
}

/** The failure of a token request that answered an error, at sign-in (no stored token to name). */
export function signInRefused(answer: ServerAnswer, issuer: string): CliFailure {
  const code = errorCode(answer);
  if (code === 'invalid_grant')
    return new CliFailure(
      `The sign-in has ended before it completed: ${issuer} refused the grant (invalid_grant: expired, used or revoked); nothing was stored. Log in again.`,
    );
  return new CliFailure(`The authorization server ${issuer} refused the token request (${code ?? `status ${answer.status}`}); nothing was stored.`);
}

export type OAuthProfile = StoredProfile & { oauth: OAuthRenewal; sealedAccessToken: string; sealedRefreshToken: string };

export function isOAuthProfile(profile: StoredProfile): profile is OAuthProfile {
  return (
    (profile.mode === 'interactive' || profile.mode === 'device') &&
    profile.oauth !== undefined &&
    profile.sealedAccessToken !== undefined &&
    profile.sealedRefreshToken !== undefined
  );
}

/** The stored form of a completed sign-in: both tokens sealed to the profile and endpoint, the renewal values in clear. */
export function storedTokens(
  dir: string,
  binding: { profile: string; endpoint: string },
  tokens: TokenSet & { refreshToken: string },
  renewal: { issuer: string; tokenEndpoint: string; clientId: string; resource: string; scopes: string[] },
): Pick<OAuthProfile, 'sealedAccessToken' | 'sealedRefreshToken' | 'oauth'> {
  return {
    sealedAccessToken: seal(dir, tokens.accessToken, binding),
    sealedRefreshToken: seal(dir, tokens.refreshToken, binding),
    oauth: { ...renewal, accessTokenExpiresAt: new Date(tokens.expiresAt).toISOString() },
  };
}

function signInEnded(name: string, profile: OAuthProfile): CliFailure {
  return new CliFailure(
    `The sign-in has ended: ${profile.oauth.issuer} refused the refresh token stored in profile ${name} (invalid_grant: it expired or was revoked). ` +
      `Log in again: mailcairn login --endpoint ${name} --mode ${profile.mode} --client-id ${profile.oauth.clientId}.`,
  );
}

/** A new access token from the stored refresh token; a refresh token in the answer is not kept. */
async function renew(name: string, profile: OAuthProfile, refreshToken: string): Promise<TokenSet> {
  const { oauth } = profile;
  const answer = await postForm(oauth.tokenEndpoint, {
    grant_type: 'refresh_token',
    refresh_token: refreshToken,
    client_id: oauth.clientId,
    resource: oauth.resource,
  });
  if (answer.status !== 200) {
    const code = errorCode(answer);
    if (code === 'invalid_grant') throw signInEnded(name, profile);
    throw new CliFailure(
      `${oauth.issuer} refused to renew the access token of profile ${name} (${code ?? `status ${answer.status}`}); try again, or log in again.`,
    );
  }
  return readTokenAnswer(answer, oauth.issuer);
}

/** Stores a renewed access token, unless the profile was signed in again meanwhile (its refresh token is no longer this one). */
function storeRenewal(dir: string, name: string, sealedRefreshToken: string, tokens: TokenSet): void {
  const document = readCredentialFile(dir);
  const current = Object.hasOwn(document.profiles, name) ? document.profiles[name] : undefined;
  if (current === undefined || !isOAuthProfile(current) || current.sealedRefreshToken !== sealedRefreshToken) return;
  current.sealedAccessToken = seal(dir, tokens.accessToken, { profile: name, endpoint: current.endpoint });
  current.oauth = { ...current.oauth, accessTokenExpiresAt: new Date(tokens.expiresAt).toISOString() };
  writeCredentialFile(dir, document);
}

/** The Bearer presenter of a stored OAuth sign-in, renewing the access token within a minute of its expiry. */
export function oauthPresenter(dir: string, name: string, profile: StoredProfile, now: () => number = Date.now): Presenter {
  if (!isOAuthProfile(profile)) throw new CliFailure(`Profile ${name} holds no OAuth sign-in; log in again.`);
  const binding = { profile: name, endpoint: profile.endpoint };
  let accessToken = unseal(dir, profile.sealedAccessToken, binding);
  let expiresAt = Date.parse(profile.oauth.accessTokenExpiresAt);
  let renewing: Promise<void> | null = null;
  // A token renewed by this command is used until it actually expires: one whose whole life is under a minute is not renewed per request.
  let renewedHere = false;
  const due = (): boolean => Number.isNaN(expiresAt) || (renewedHere ? expiresAt <= now() : needsRenewal(expiresAt, now()));
  return async () => {
    if (due()) {
      renewing ??= (async () => {
        const tokens = await renew(name, profile, unseal(dir, profile.sealedRefreshToken, binding));
        storeRenewal(dir, name, profile.sealedRefreshToken, tokens);
        accessToken = tokens.accessToken;
        expiresAt = tokens.expiresAt;
        renewedHere = true;
      })().finally(() => {
        renewing = null;
      });
      await renewing;
    }
    return { authorization: `Bearer ${accessToken}` };
  };
}
