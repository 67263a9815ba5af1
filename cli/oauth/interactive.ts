/**
 * Interactive sign-in (client rule 6; docs/cli.md "Interactive"): the
 * authorization-code grant from a public client with PKCE (S256, RFC 7636),
 * a random `state`, the resource indicator (RFC 8707), and the loopback
 * redirect caught by loopback.ts. The address is printed to standard error
 * and opened in a browser where one exists; the wait for the redirect is
 * bounded (SIGN_IN_WAIT_MS).
 *
 * `prompt=consent` is always sent: OpenID Connect Core 11 has a provider
 * ignore `offline_access` without it (oidc-provider does), the sign-in needs
 * the refresh token, and a plain OAuth server ignores a parameter it does
 * not know (RFC 6749 3.1). The cost is a consent page at every sign-in.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Context } from '../context.ts';
import { CliFailure } from '../failure.ts';
import { openBrowser } from './browser.ts';
import type { AuthorizationServer } from './discovery.ts';
import { postForm } from './http.ts';
import { catchRedirect, type RedirectAddress } from './loopback.ts';
import { readTokenAnswer, signInRefused, type TokenSet } from './tokens.ts';

/** How long the client waits for the browser's redirect. */
export const SIGN_IN_WAIT_MS = 5 * 60_000;

export type Pkce = { verifier: string; challenge: string };

export function newPkce(): Pkce {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export function authorizationAddress(server: AuthorizationServer, clientId: string, redirect: RedirectAddress, pkce: Pkce, state: string): string {
  const url = new URL(server.authorizationEndpoint!);
  const params: Record<string, string> = {
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirect.uri,
    scope: server.scopes.join(' '),
    state,
    code_challenge: pkce.challenge,
    code_challenge_method: 'S256',
    resource: server.resource,
    prompt: 'consent',
  };
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  return url.href;
}

export async function interactiveSignIn(ctx: Context, server: AuthorizationServer, clientId: string, redirect: RedirectAddress): Promise<TokenSet> {
  const pkce = newPkce();
  const state = randomBytes(16).toString('base64url');
  const catcher = await catchRedirect(redirect, state, server.issuer);
  let timer: NodeJS.Timeout | undefined;
  let code: string;
  try {
    const address = authorizationAddress(server, clientId, redirect, pkce, state);
    ctx.out.note(
      `Sign in at ${server.issuer} in a browser; if none opened, open this address:\n${address}\n` +
        `Waiting up to ${SIGN_IN_WAIT_MS / 60_000} minutes for the browser to come back to ${redirect.uri}.`,
    );
    openBrowser(address, ctx.env);
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new CliFailure(`No sign-in came back to ${redirect.uri} within ${SIGN_IN_WAIT_MS / 60_000} minutes; nothing was stored. Log in again.`)),
        SIGN_IN_WAIT_MS,
      );
    });
    code = await Promise.race([catcher.code, expired]);
  } finally {
    clearTimeout(timer);
    await catcher.close();
  }
  const answer = await postForm(server.tokenEndpoint, {
    grant_type: 'authorization_code',
    code,
    redirect_uri: redirect.uri,
    client_id: clientId,
    code_verifier: pkce.verifier,
    resource: server.resource,
  });
  if (answer.status !== 200) throw signInRefused(answer, server.issuer);
  return readTokenAnswer(answer, server.issuer);
}
