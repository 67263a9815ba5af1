/**
 * OAuth discovery (client rule 7; docs/cli.md "Signing in with OAuth"):
 *
 * 1. The deployment's protected-resource metadata (RFC 9728) at
 *    `<endpoint>/.well-known/oauth-protected-resource/api/admin`, fetched
 *    like every request to the deployment (pinned certificate included), with
 *    no credential. It names the authorization servers, the resource and the
 *    scopes. None there: "publishes no OAuth metadata".
 * 2. One authorization server: the only one listed, or `--issuer` naming one
 *    of several ("accepts tokens from several authorization servers").
 * 3. Its metadata: RFC 8414 (`/.well-known/oauth-authorization-server{path}`),
 *    then OpenID discovery (`/.well-known/openid-configuration{path}`, then
 *    `{issuer}/.well-known/openid-configuration`); the first document whose
 *    `issuer` is the one asked for (RFC 8414 3.3) is taken.
 * 4. Scopes: every scope the deployment lists, `offline_access` included; a
 *    deployment that does not list `offline_access` cannot give a sign-in a
 *    refresh token, so the client refuses before anything is asked.
 */
import type { AdminClient } from '../admin-client.ts';
import { CliFailure, usage } from '../failure.ts';
import { getJson, requireSafeAddress } from './http.ts';

export const METADATA_PATH = '/.well-known/oauth-protected-resource/api/admin';
export const OFFLINE_ACCESS = 'offline_access';

export type SignInMode = 'interactive' | 'device';

export type AuthorizationServer = {
  readonly issuer: string;
  readonly authorizationEndpoint: string | undefined;
  readonly tokenEndpoint: string;
  readonly deviceAuthorizationEndpoint: string | undefined;
  /** The resource indicator (RFC 8707) asked for: the deployment's `resource`. */
  readonly resource: string;
  readonly scopes: readonly string[];
};

const KEY_HINT = 'use --mode key (an API key on standard input) or --mode keypair';

function strings(value: unknown): string[] | null {
  return Array.isArray(value) && value.every((v) => typeof v === 'string') ? value : null;
}

/** The protected-resource metadata of the deployment: its servers, resource and scopes. */
async function resourceMetadata(client: AdminClient, endpoint: string): Promise<{ servers: string[]; resource: string; scopes: string[] }> {
  const answer = await client.anonymous(METADATA_PATH);
  let document: Record<string, unknown> | null = null;
  if (answer.status === 200) {
    try {
      const value: unknown = JSON.parse(answer.text);
      if (value !== null && typeof value === 'object' && !Array.isArray(value)) document = value as Record<string, unknown>;
    } catch {
      document = null;
    }
  }
  const servers = strings(document?.authorization_servers);
  const resource = document?.resource;
  if (document === null || servers === null || servers.length === 0 || typeof resource !== 'string') {
    throw new CliFailure(
      `${endpoint} publishes no OAuth metadata at ${METADATA_PATH} (no OAuth entry in AdminEndpoint:Authentication, or its Resource names another address than this one); ${KEY_HINT}, or log in with the address the entry's Resource names.`,
    );
  }
  return { servers, resource, scopes: strings(document.scopes_supported) ?? [] };
}

function chooseIssuer(servers: string[], issuerOption: string | undefined, endpoint: string): string {
  if (issuerOption !== undefined) {
    if (servers.includes(issuerOption)) return issuerOption;
    throw usage(`--issuer ${issuerOption} is not one of the authorization servers ${endpoint} accepts tokens from: ${servers.join(', ')}.`);
  }
  if (servers.length === 1) return servers[0]!;
  throw usage(`${endpoint} accepts tokens from several authorization servers (${servers.join(', ')}); name the one to sign in with: --issuer <issuer>.`);
}

/** The metadata addresses of an issuer, in the order they are tried. */
export function metadataAddresses(issuer: string): string[] {
  const url = new URL(issuer);
  const path = url.pathname === '/' ? '' : url.pathname.replace(/\/$/, '');
  const addresses = [
    `${url.origin}/.well-known/oauth-authorization-server${path}`,
    `${url.origin}/.well-known/openid-configuration${path}`,
    `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`,
  ];
  return [...new Set(addresses)];
}

async function serverMetadata(issuer: string): Promise<Record<string, unknown>> {
  requireSafeAddress(issuer, 'issuer address', issuer);
  for (const address of metadataAddresses(issuer)) {
    const answer = await getJson(address);
    if (answer.status === 200 && answer.json !== null && answer.json.issuer === issuer) return answer.json;
  }
  throw new CliFailure(
    `The authorization server ${issuer} publishes no OAuth metadata (RFC 8414 or OpenID discovery) naming itself; ${KEY_HINT}, or ask its operator to publish it.`,
  );
}

export async function discover(client: AdminClient, endpoint: string, mode: SignInMode, issuerOption: string | undefined): Promise<AuthorizationServer> {
  const { servers, resource, scopes } = await resourceMetadata(client, endpoint);
  const issuer = chooseIssuer(servers, issuerOption, endpoint);
  if (!scopes.includes(OFFLINE_ACCESS)) {
    throw new CliFailure(
      `${endpoint} does not advertise ${OFFLINE_ACCESS}, so ${issuer} would have issued no refresh token and the sign-in could not outlive its first access token; ` +
        `add ${OFFLINE_ACCESS} to AdvertisedScopes of the OAuth entry and grant it to the client at the authorization server, or ${KEY_HINT}.`,
    );
  }
  const document = await serverMetadata(issuer);
  const tokenEndpoint = requireSafeAddress(document.token_endpoint, 'token endpoint', issuer);
  const authorizationEndpoint = mode === 'interactive' ? requireSafeAddress(document.authorization_endpoint, 'authorization endpoint', issuer) : undefined;
  let deviceAuthorizationEndpoint: string | undefined;
  if (mode === 'device') {
    if (document.device_authorization_endpoint === undefined)
      throw new CliFailure(
        `The authorization server ${issuer} has no device authorization endpoint (RFC 8628); sign in with --mode interactive, or ${KEY_HINT}.`,
      );
    deviceAuthorizationEndpoint = requireSafeAddress(document.device_authorization_endpoint, 'device authorization endpoint', issuer);
  }
  if (mode === 'interactive') {
    const methods = strings(document.code_challenge_methods_supported);
    // RFC 8414: absent means the server does not say; only a list without S256 is a refusal.
    if (methods !== null && !methods.includes('S256'))
      throw new CliFailure(
        `The authorization server ${issuer} does not support PKCE with S256, which interactive sign-in requires; use --mode device, or ${KEY_HINT}.`,
      );
  }
  return {
    issuer,
    authorizationEndpoint,
    tokenEndpoint,
    deviceAuthorizationEndpoint,
    resource,
    scopes,
  };
}
