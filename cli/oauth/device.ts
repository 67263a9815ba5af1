/**
 * Device sign-in (RFC 8628; client rule 6; docs/cli.md "Device"): the device
 * authorization request, then the verification address and the user code
 * on standard error (the complete address too when the server gives one),
 * then polling the token endpoint at the server's `interval` (5 seconds when
 * it names none): `authorization_pending` polls again, `slow_down` adds 5
 * seconds to the interval for good, `access_denied` and `expired_token` end
 * the sign-in, and so does the code's own `expires_in` passing.
 */
import type { Context } from '../context.ts';
import { CliFailure } from '../failure.ts';
import type { AuthorizationServer } from './discovery.ts';
import { errorCode, postForm } from './http.ts';
import { readTokenAnswer, signInRefused, type TokenSet } from './tokens.ts';

export const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
const DEFAULT_INTERVAL_S = 5;
const SLOW_DOWN_S = 5;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function positive(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : fallback;
}

export async function deviceSignIn(ctx: Context, server: AuthorizationServer, clientId: string, now: () => number = Date.now): Promise<TokenSet> {
  const started = await postForm(server.deviceAuthorizationEndpoint!, { client_id: clientId, scope: server.scopes.join(' '), resource: server.resource });
  const body = started.json;
  if (started.status !== 200 || body === null) {
    throw new CliFailure(
      `The authorization server ${server.issuer} refused the device sign-in (${errorCode(started) ?? `status ${started.status}`}); check that client ${clientId} may use the device grant there.`,
    );
  }
  const { device_code: deviceCode, user_code: userCode, verification_uri: verification, verification_uri_complete: complete } = body;
  if (typeof deviceCode !== 'string' || typeof userCode !== 'string' || typeof verification !== 'string')
    throw new CliFailure(`The authorization server ${server.issuer} answered the device sign-in without a code or a verification address.`);
  const deadline = now() + positive(body.expires_in, 600) * 1000;
  let intervalS = positive(body.interval, DEFAULT_INTERVAL_S);
  ctx.out.note(
    [
      `To sign in, open ${verification} on any device and enter the code ${userCode}`,
      ...(typeof complete === 'string' ? [`(or open ${complete}, which carries the code).`] : []),
      `Waiting until ${new Date(deadline).toISOString()} for the sign-in to be approved.`,
    ].join('\n'),
  );
  const pending = (): void => {
    // The code's own lifetime bounds the wait, whether or not the server says expired_token.
    if (now() >= deadline) throw new CliFailure(`The code ${userCode} expired before it was approved; nothing was stored. Log in again.`);
  };
  for (;;) {
    await sleep(intervalS * 1000);
    const answer = await postForm(server.tokenEndpoint, { grant_type: DEVICE_GRANT, device_code: deviceCode, client_id: clientId });
    if (answer.status === 200) return readTokenAnswer(answer, server.issuer);
    switch (errorCode(answer)) {
      case 'authorization_pending':
        pending();
        continue;
      case 'slow_down':
        intervalS += SLOW_DOWN_S;
        pending();
        continue;
      case 'access_denied':
        throw new CliFailure(`The sign-in was refused at ${server.issuer} (access_denied): the code was not approved; nothing was stored.`);
      case 'expired_token':
        throw new CliFailure(`The code ${userCode} expired at ${server.issuer} before it was approved (expired_token); nothing was stored. Log in again.`);
      default:
        throw signInRefused(answer, server.issuer);
    }
  }
}
