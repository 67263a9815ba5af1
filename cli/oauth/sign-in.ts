/**
 * The OAuth half of `mailcairn login` (docs/cli.md "Signing in with OAuth"):
 * discovery, the interactive or device grant, and the tokens it yields, as
 * the presenter login verifies against the session route and the fields it
 * stores once the deployment admitted them. Nothing is written here.
 */
import type { Presenter } from '../admin-client.ts';
import { createAdminClient } from '../admin-client.ts';
import type { Context } from '../context.ts';
import type { StoredProfile } from '../credential-file.ts';
import { usage } from '../failure.ts';
import { optionalText, type Options } from '../options.ts';
import { discover, type SignInMode } from './discovery.ts';
import { deviceSignIn } from './device.ts';
import { interactiveSignIn } from './interactive.ts';
import { DEFAULT_REDIRECT_URI, parseRedirectUri } from './loopback.ts';
import { requireRefreshToken, storedTokens } from './tokens.ts';

export type OAuthSignIn = {
  /** Presents the access token just issued (no renewal during login). */
  present: Presenter;
  /** The profile's OAuth fields, sealed for `binding`. */
  stored(dir: string, binding: { profile: string; endpoint: string }): Partial<StoredProfile>;
};

/** The command line of an OAuth mode, checked before anything is sent. */
export function oauthOptions(mode: SignInMode, options: Options): { clientId: string; issuer: string | undefined; redirectUri: string | undefined } {
  const clientId = optionalText(options, 'client-id');
  if (clientId === undefined)
    throw usage(`--mode ${mode} needs --client-id: the identifier of the public client (no secret) registered for this client at the authorization server.`);
  const redirectUri = optionalText(options, 'redirect-uri');
  if (redirectUri !== undefined && mode === 'device') throw usage('--redirect-uri belongs to --mode interactive; the device mode has no redirect.');
  if (redirectUri !== undefined) parseRedirectUri(redirectUri);
  if (optionalText(options, 'private-key') !== undefined) throw usage('--private-key belongs to --mode keypair.');
  return { clientId, issuer: optionalText(options, 'issuer'), redirectUri };
}

export async function oauthSignIn(
  ctx: Context,
  mode: SignInMode,
  target: { endpoint: string; pin: string | undefined; name: string },
  options: ReturnType<typeof oauthOptions>,
): Promise<OAuthSignIn> {
  const client = createAdminClient({ endpoint: target.endpoint, present: async () => ({}), certificateSha256: target.pin, profile: target.name });
  let server;
  try {
    server = await discover(client, target.endpoint, mode, options.issuer);
  } finally {
    await client.close();
  }
  const issued =
    mode === 'interactive'
      ? await interactiveSignIn(ctx, server, options.clientId, parseRedirectUri(options.redirectUri ?? DEFAULT_REDIRECT_URI))
      : await deviceSignIn(ctx, server, options.clientId);
  const tokens = requireRefreshToken(issued, server.issuer, options.clientId);
  return {
    present: async () => ({ authorization: `Bearer ${tokens.accessToken}` }),
    stored: (dir, binding) =>
      storedTokens(dir, binding, tokens, {
        issuer: server.issuer,
        tokenEndpoint: server.tokenEndpoint,
        clientId: options.clientId,
        resource: server.resource,
        scopes: [...server.scopes],
      }),
  };
}
