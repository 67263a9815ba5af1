/**
 * A real OAuth 2 authorization server for tests: `oidc-provider` in-process on 127.0.0.1 (an
 * ephemeral port), with its own in-memory store. Two clients:
 *
 * - the mail client (`mailcairn`, confidential, `client_secret_basic`, authorization_code +
 *   refresh_token) whose refresh tokens the service redeems at `tokenEndpoint`;
 * - the resource server (`dovecot`, `client_secret_basic`, no grants) that introspects the access
 *   tokens Dovecot receives over XOAUTH2 at `introspectionEndpoint`; `introspectionUrl` carries its
 *   credentials as URL userinfo, the way Dovecot's oauth2 passdb sends HTTP Basic.
 *
 * `mintRefreshToken(user)` drives the authorization-code flow the way a browser would (authorize,
 * the interaction, consent, the code at the token endpoint, with PKCE), answering the login and
 * consent prompts through the provider's interaction API; nothing about the tokens is faked.
 * Refresh-token rotation is a switch (`setRotation`), read at each redemption.
 *
 * For the service as a protected resource (http/auth/oauth/), the provider can also:
 * - issue JWT access tokens for one resource indicator (RFC 8707, the `resourceIndicators` feature
 *   with `accessTokenFormat: 'jwt'`): `mintAccessToken(user, {scopes, claims})` walks the same
 *   authorization-code flow with `resource`, so `sub` is the user and `scope` what was granted;
 *   `claims` are set on the payload by the provider's own `formats.customizers.jwt` hook before it
 *   signs (a chosen `nbf`, `aud`, `iss`...);
 * - live under an issuer with a path (`issuerPath`), mounted there, with a choice of which of the
 *   three discovery addresses answer (`discoveryAt`), the aliases routed to the provider's own
 *   discovery document the way a reverse proxy in front of it would;
 * - rotate its signing key (`rotateSigningKey`): the provider is restarted on the same port with
 *   the same storage, signing with a new key and publishing the old one beside it;
 * - let a test answer some requests itself before the provider sees them (`intercept`).
 *
 * For the operator client's OAuth sign-in (test/cli/oauth-*.test.ts), with `publicClient`:
 * - a public client (`token_endpoint_auth_method: none`, PKCE S256 required by the provider for
 *   public clients) with loopback redirect URIs, the device grant (the `deviceFlow` feature, on
 *   unless `deviceFlow: false`) and, unless `refreshToken: false`, the refresh_token grant, so
 *   `offline_access` yields a refresh token;
 * - `browse(address)`: a scripted user agent following redirects from an authorization address
 *   (cookies kept), answering the login and consent interaction for `user` (or refusing it:
 *   `deny`), and following the last redirect to wherever it points (the client's loopback catcher);
 * - `approveDevice(userCode)`: the verification pages of the device flow walked the same way
 *   (the user code entered, confirmed or aborted, the interaction answered);
 * - `deviceInterval`: the `interval` the device authorization answer names (the provider names
 *   none, which means 5 s), and `deviceCodeTtl`; an expired device code stays stored a while so
 *   the provider answers `expired_token` for it rather than `invalid_grant`;
 * - `issued()` also holds every token value the token endpoint answered (JWT access tokens are not
 *   their `jti`) and every device code; `presentedRefreshTokens()` the refresh tokens redeemed, in
 *   order.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import Provider, { type Adapter, type AdapterPayload, type Configuration, errors as providerErrors } from 'oidc-provider';
import { request } from 'undici';

export type OAuthProviderOptions = {
  /** Subjects that exist (the `sub` of their tokens is the user name). */
  users: string[];
  /** Rotate refresh tokens at each redemption (switchable later with `setRotation`). */
  rotateRefreshTokens?: boolean;
  /** Access token lifetime in seconds. */
  accessTokenTtl?: number;
  /** Path of the issuer (`/tenant/a`, no trailing slash); the provider is mounted there. */
  issuerPath?: string;
  /**
   * Which discovery addresses answer (docs/security.md "OAuth access tokens"):
   * `authorizationServer` `/.well-known/oauth-authorization-server{path}`,
   * `openidInserted` `/.well-known/openid-configuration{path}`,
   * `openidAppended` `{issuer}/.well-known/openid-configuration` (the
   * provider's own). Each answers with the provider's document when on and 404
   * when off; for an issuer without a path the last two are one address,
   * answering when either is on. Not given: whatever the provider itself
   * serves (for an issuer without a path, the first two; with a path, the
   * third).
   */
  discoveryAt?: { authorizationServer?: boolean; openidInserted?: boolean; openidAppended?: boolean };
  /** A resource server whose access tokens are JWTs with `aud` = `indicator`. */
  resource?: { indicator: string; scopes: string[]; alg?: 'RS256' | 'RS384' | 'RS512' | 'PS256' | 'PS384' | 'PS512' | 'ES256' | 'ES384' | 'ES512' };
  /** Sees each request first; returns true when it answered it. */
  intercept?: (req: IncomingMessage, res: ServerResponse) => boolean;
  /** A public client for the operator client's sign-in. */
  publicClient?: {
    /** Default `mailcairn-cli`. */
    id?: string;
    redirectUris: string[];
    /** The refresh_token grant (default on): without it the provider drops `offline_access`. */
    refreshToken?: boolean;
  };
  /** The device flow (RFC 8628); default on when `publicClient` is given. */
  deviceFlow?: boolean;
  /** Seconds, written as `interval` in device authorization answers. */
  deviceInterval?: number;
  /** Device code lifetime in seconds (default 600). */
  deviceCodeTtl?: number;
};

export type BrowseOptions = {
  /** Who signs in (default: the first user). */
  user?: string;
  /** Refuse at the interaction: the provider answers `access_denied`. */
  deny?: boolean;
};

export type Browsed = { status: number; url: string; body: string };

export type MintOptions = {
  /** Resource scopes asked for and granted (default: all of `resource.scopes`). */
  scopes?: string[];
  /** Payload claims set (or, with `undefined`, removed) by the provider before it signs. */
  claims?: Record<string, unknown>;
};

export type OAuthProvider = {
  issuer: string;
  tokenEndpoint: string;
  introspectionEndpoint: string;
  /** The introspection endpoint with the resource server's credentials as userinfo (for Dovecot). */
  introspectionUrl: string;
  revocationEndpoint: string;
  client: { id: string; secret: string };
  resourceServer: { id: string; secret: string };
  scopes: string[];
  /** The provider serving now (a key rotation replaces it). */
  readonly provider: Provider;
  /** Where the provider publishes its key set. */
  jwksUri: string;
  setRotation(on: boolean): void;
  /** A JWT access token for `resource.indicator`, from a completed authorization-code flow for `user`. */
  mintAccessToken(user: string, options?: MintOptions): Promise<string>;
  /** Sign with a new key from now on (the provider restarts in place); the old key stays published. Returns the new `kid`. */
  rotateSigningKey(): Promise<string>;
  /** The private signing keys, newest first (for tests that forge with a real key). */
  signingKeys(): JWK[];
  /** Paths (with query) of every request the server received, in order. */
  requests(): string[];
  /** A refresh token for `user`, from a completed authorization-code flow. */
  mintRefreshToken(user: string): Promise<string>;
  /** Revoke a token at the revocation endpoint (a refresh token revokes its whole grant); as the public client `clientId` when named. */
  revoke(token: string, clientId?: string): Promise<void>;
  /** Introspect a token as the resource server would. */
  introspect(token: string): Promise<Record<string, unknown>>;
  /** Every token value the provider handed out (access and refresh), for leak scans. */
  issued(): { accessTokens: string[]; refreshTokens: string[]; deviceCodes: string[] };
  /** Token endpoint requests seen, by grant type. */
  tokenRequests(): Record<string, number>;
  /** Errors the provider raised while serving (server_error events and the like). */
  errors(): string[];
  /** The public client's identifier (with `publicClient`). */
  publicClientId: string;
  /** Walks from `address` as a browser would, answering the interaction, to the last page (the client's loopback catcher). */
  browse(address: string, options?: BrowseOptions): Promise<Browsed>;
  /** Enters and confirms (or, with `deny`, aborts) a device user code, answering the interaction. */
  approveDevice(userCode: string, options?: BrowseOptions): Promise<Browsed>;
  /** The refresh tokens presented at the token endpoint, in order (successful or not). */
  presentedRefreshTokens(): string[];
  stop(): Promise<void>;
};

const REDIRECT_URI = 'https://mailcairn.test/callback';

type Stored = { payload: AdapterPayload; expiresAt: number };

/** How long an expired device code stays stored: the provider answers `expired_token` only for a code it still finds. */
const DEVICE_CODE_GRACE_S = 600;
const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

/**
 * The provider's storage, private to one provider (its own quick-start adapter is a module-wide
 * store and warns on every start): every model in one map, with the grant, uid and user-code
 * indexes the Adapter contract asks for, so revoking a grant reaches its tokens.
 */
function memoryStorage(): (name: string) => Adapter {
  const rows = new Map<string, Stored>();
  const grants = new Map<string, Set<string>>();
  const uids = new Map<string, string>();
  const userCodes = new Map<string, string>();
  const live = (key: string): AdapterPayload | undefined => {
    const row = rows.get(key);
    if (!row) return undefined;
    if (row.expiresAt <= Date.now()) {
      rows.delete(key);
      return undefined;
    }
    return row.payload;
  };
  return (name) => {
    const key = (id: string) => `${name}:${id}`;
    return {
      async upsert(id, payload, expiresIn) {
        const kept = expiresIn ? expiresIn + (name === 'DeviceCode' ? DEVICE_CODE_GRACE_S : 0) : 0;
        rows.set(key(id), { payload: { ...payload }, expiresAt: kept ? Date.now() + kept * 1000 : Infinity });
        if (payload.grantId) {
          const members = grants.get(payload.grantId) ?? new Set<string>();
          members.add(key(id));
          grants.set(payload.grantId, members);
        }
        if (payload.uid) uids.set(payload.uid, id);
        if (payload.userCode) userCodes.set(payload.userCode, id);
      },
      async find(id) {
        return live(key(id));
      },
      async findByUid(uid) {
        const id = uids.get(uid);
        return id === undefined ? undefined : live(key(id));
      },
      async findByUserCode(userCode) {
        const id = userCodes.get(userCode);
        return id === undefined ? undefined : live(key(id));
      },
      async consume(id) {
        const row = rows.get(key(id));
        if (row) row.payload.consumed = Math.floor(Date.now() / 1000);
      },
      async destroy(id) {
        rows.delete(key(id));
      },
      async revokeByGrantId(grantId) {
        for (const member of grants.get(grantId) ?? []) rows.delete(member);
        grants.delete(grantId);
      },
    };
  };
}
const SCOPES = ['openid', 'offline_access'];

export async function startOAuthProvider(options: OAuthProviderOptions): Promise<OAuthProvider> {
  const users = new Set(options.users);
  let rotate = options.rotateRefreshTokens ?? true;
  const client = { id: 'mailcairn', secret: `mc-secret-${randomBytes(16).toString('hex')}` };
  const publicClient = options.publicClient;
  const publicClientId = publicClient?.id ?? 'mailcairn-cli';
  const deviceFlow = options.deviceFlow ?? publicClient !== undefined;
  // Who the next interaction signs in without a login_hint, and whether it refuses (set by browse and approveDevice, which run one at a time).
  let decision: { user: string; deny: boolean } = { user: options.users[0] ?? '', deny: false };
  const resourceServer = { id: 'dovecot', secret: `rs-secret-${randomBytes(16).toString('hex')}` };
  const newKey = async (alg: string, kid: string): Promise<JWK> => {
    const { privateKey } = await generateKeyPair(alg, { extractable: true });
    return { ...(await exportJWK(privateKey)), kid, alg, use: 'sig' };
  };
  // Newest first: the provider signs with the first key of an algorithm.
  const keys: JWK[] = [await newKey('RS256', 'test-rs256')];
  const resourceAlg = options.resource?.alg ?? 'RS256';
  if (resourceAlg !== 'RS256') keys.unshift(await newKey(resourceAlg, `test-${resourceAlg.toLowerCase()}`));
  let rotations = 0;
  const mount = options.issuerPath ?? '';
  if (mount !== '' && (!mount.startsWith('/') || mount.endsWith('/'))) throw new Error('issuerPath starts with a slash and does not end with one');

  // Listen first: the issuer names the port.
  const server: Server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const issuer = `http://127.0.0.1:${port}${mount}`;
  const storage = memoryStorage();
  const cookieKeys = [randomBytes(32).toString('hex')];
  // Claims the next JWT access token gets (set by mintAccessToken, which runs one at a time).
  let pendingClaims: Record<string, unknown> | undefined;

  type ResourceIndicators = NonNullable<NonNullable<Configuration['features']>['resourceIndicators']>;
  const resource = options.resource;
  const resourceIndicators: ResourceIndicators | undefined = resource && {
    enabled: true,
    defaultResource: (_ctx, _client, oneOf) => oneOf,
    useGrantedResource: () => true,
    getResourceServerInfo: (_ctx, indicator) => {
      if (indicator !== resource.indicator) throw new providerErrors.InvalidTarget();
      return { scope: resource.scopes.join(' '), audience: indicator, accessTokenFormat: 'jwt', jwt: { sign: { alg: resourceAlg } } };
    },
  };

  const configure = (): Configuration => ({
    clients: [
      {
        client_id: client.id,
        client_secret: client.secret,
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        redirect_uris: [REDIRECT_URI],
        token_endpoint_auth_method: 'client_secret_basic',
      },
      ...(publicClient
        ? [
            {
              client_id: publicClientId,
              application_type: 'native' as const,
              token_endpoint_auth_method: 'none' as const,
              grant_types: ['authorization_code', ...(publicClient.refreshToken === false ? [] : ['refresh_token']), ...(deviceFlow ? [DEVICE_GRANT] : [])],
              response_types: ['code' as const],
              redirect_uris: publicClient.redirectUris,
            },
          ]
        : []),
      {
        client_id: resourceServer.id,
        client_secret: resourceServer.secret,
        grant_types: [],
        response_types: [],
        redirect_uris: [],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    adapter: storage,
    jwks: { keys: keys.map((k) => ({ ...k })) },
    cookies: { keys: cookieKeys },
    scopes: SCOPES,
    claims: { openid: ['sub'] },
    findAccount: (_ctx, sub) => (users.has(sub) ? { accountId: sub, claims: () => ({ sub }) } : undefined),
    // The provider's default, under the mount.
    interactions: { url: (_ctx, interaction) => `${mount}/interaction/${interaction.uid}` },
    features: {
      devInteractions: { enabled: false },
      introspection: {
        enabled: true,
        // The resource server may introspect any token; a client only its own.
        allowedPolicy: (_ctx, caller, token) => caller.clientId === resourceServer.id || caller.clientId === token.clientId,
      },
      revocation: {
        enabled: true,
        allowedPolicy: (_ctx, caller, token) => caller.clientId === token.clientId,
      },
      // Left at the provider's defaults when no resource is asked for.
      ...(resourceIndicators ? { resourceIndicators } : {}),
      ...(deviceFlow
        ? {
            deviceFlow: {
              enabled: true,
              // Plain pages carrying the provider's own forms (its defaults warn that they should be replaced).
              userCodeInputSource: async (ctx: { body: unknown }, form: string) => {
                ctx.body = `<!doctype html><html><body>${form}</body></html>`;
              },
              userCodeConfirmSource: async (ctx: { body: unknown }, form: string) => {
                ctx.body = `<!doctype html><html><body>${form}</body></html>`;
              },
              successSource: async (ctx: { body: unknown }) => {
                ctx.body = '<!doctype html><html><body>Signed in.</body></html>';
              },
            },
          }
        : {}),
    },
    formats: {
      customizers: {
        jwt: (_ctx, _token, jwt) => {
          if (pendingClaims !== undefined) Object.assign(jwt.payload, pendingClaims);
        },
      },
    },
    rotateRefreshToken: () => rotate,
    ttl: {
      AccessToken: options.accessTokenTtl ?? 600,
      AuthorizationCode: 60,
      DeviceCode: options.deviceCodeTtl ?? 600,
      Grant: 86_400,
      IdToken: 600,
      Interaction: 600,
      RefreshToken: 86_400,
      Session: 86_400,
    },
    renderError: (ctx, out) => {
      ctx.type = 'json';
      ctx.body = out;
    },
  });

  const accessTokens = new Set<string>();
  const refreshTokens = new Set<string>();
  const deviceCodes = new Set<string>();
  const presented: string[] = [];
  const grantsSeen: Record<string, number> = {};
  const errors: string[] = [];
  const wire = (provider: Provider): Provider => {
    provider.on('access_token.issued', (token) => {
      if (token.jti) accessTokens.add(token.jti);
    });
    provider.on('access_token.saved', (token) => {
      if (token.jti) accessTokens.add(token.jti);
    });
    provider.on('refresh_token.saved', (token) => {
      if (token.jti) refreshTokens.add(token.jti);
    });
    provider.on('grant.success', (ctx) => {
      const type = String(ctx.oidc.params?.grant_type ?? 'unknown');
      grantsSeen[type] = (grantsSeen[type] ?? 0) + 1;
      // The values answered (a JWT access token is not its jti); the body is serialized after this event.
      const body = ctx.body as Record<string, unknown> | undefined;
      if (typeof body?.access_token === 'string') accessTokens.add(body.access_token);
      if (typeof body?.refresh_token === 'string') refreshTokens.add(body.refresh_token);
    });
    for (const event of ['grant.success', 'grant.error'] as const) {
      provider.on(event as 'grant.success', (ctx) => {
        const token = ctx.oidc.params?.refresh_token;
        if (ctx.oidc.params?.grant_type === 'refresh_token' && typeof token === 'string') presented.push(token);
      });
    }
    provider.on('device_authorization.success', (_ctx, body) => {
      const answer = body as Record<string, unknown>;
      if (typeof answer.device_code === 'string') deviceCodes.add(answer.device_code);
      if (options.deviceInterval !== undefined) answer.interval = options.deviceInterval;
    });
    for (const event of ['server_error', 'grant.error', 'introspection.error', 'revocation.error', 'authorization.error'] as const) {
      provider.on(event as 'server_error', (_ctx: unknown, err: Error) => {
        errors.push(
          `${event}: ${err.message}${(err as { error_description?: string }).error_description ? ` (${(err as { error_description?: string }).error_description})` : ''}`,
        );
      });
    }
    return provider;
  };
  let provider = wire(new Provider(issuer, configure()));
  let callback = provider.callback();

  // The login and consent prompts, answered at once for the user named in the authorization request's `login_hint`.
  const interaction = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    try {
      const details = await provider.interactionDetails(req, res);
      if (typeof details.params.login_hint !== 'string' && decision.deny) {
        await provider.interactionFinished(req, res, { error: 'access_denied', error_description: 'refused by the test' }, { mergeWithLastSubmission: false });
        return;
      }
      const hint = typeof details.params.login_hint === 'string' ? details.params.login_hint : decision.user;
      if (!users.has(hint)) throw new Error(`unknown user ${hint}`);
      const grant = new provider.Grant({ accountId: hint, clientId: String(details.params.client_id) });
      const asked = String(details.params.scope ?? '')
        .split(' ')
        .filter(Boolean);
      grant.addOIDCScope(asked.filter((s) => SCOPES.includes(s)).join(' '));
      if (typeof details.params.resource === 'string') grant.addResourceScope(details.params.resource, asked.filter((s) => !SCOPES.includes(s)).join(' '));
      const grantId = await grant.save();
      await provider.interactionFinished(req, res, { login: { accountId: hint }, consent: { grantId } }, { mergeWithLastSubmission: false });
    } catch (err) {
      errors.push(`interaction: ${(err as Error).message}`);
      res.statusCode = 500;
      res.end();
    }
  };
  const seen: string[] = [];
  // Discovery addresses: each answers with the provider's own document, or 404 (when `discoveryAt` is given).
  const own = `${mount}/.well-known/openid-configuration`;
  const discovery = new Map<string, boolean>();
  if (options.discoveryAt) {
    const { authorizationServer = false, openidInserted = false, openidAppended = false } = options.discoveryAt;
    discovery.set(`/.well-known/oauth-authorization-server${mount}`, authorizationServer);
    discovery.set(`/.well-known/openid-configuration${mount}`, openidInserted || (mount === '' && openidAppended));
    discovery.set(own, openidAppended || (mount === '' && openidInserted));
  }
  const notFound = (res: ServerResponse): void => {
    res.statusCode = 404;
    res.setHeader('content-type', 'application/json');
    res.end('{"error":"not_found"}');
  };
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    seen.push(req.url ?? '');
    if (options.intercept?.(req, res)) return;
    const url = req.url ?? '/';
    const path = url.split('?')[0]!;
    // What a proxy in front of the provider would map to its own document.
    const answers = discovery.get(path);
    if (answers === false) return notFound(res);
    if (answers === true) req.url = own;
    if (mount !== '') {
      const target = req.url ?? '/';
      if (target !== mount && !target.startsWith(`${mount}/`) && !target.startsWith(`${mount}?`)) return notFound(res);
      // Mounted the way oidc-provider documents for a path prefix: the provider sees its own
      // routes, and finds the prefix by comparing originalUrl with url.
      (req as IncomingMessage & { originalUrl?: string }).originalUrl = target;
      req.url = target.slice(mount.length) || '/';
    }
    if (req.url?.startsWith('/interaction/')) void interaction(req, res);
    else callback(req, res);
  });

  const tokenEndpoint = `${issuer}/token`;
  const introspectionEndpoint = `${issuer}/token/introspection`;
  const revocationEndpoint = `${issuer}/token/revocation`;

  /** A browser's walk from the authorization request to the redirect carrying the code. */
  const authorizationCode = async (user: string, challenge: string, state: string, extra: Record<string, string> = {}): Promise<string> => {
    const jar = new Map<string, string>();
    let url = `${issuer}/auth?${new URLSearchParams({
      client_id: client.id,
      response_type: 'code',
      redirect_uri: REDIRECT_URI,
      scope: SCOPES.join(' '),
      prompt: 'consent',
      login_hint: user,
      state,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      ...extra,
    })}`;
    for (let hop = 0; hop < 10; hop++) {
      const res = await request(url, { method: 'GET', headers: { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') } });
      await res.body.text();
      const setCookie = res.headers['set-cookie'];
      for (const line of Array.isArray(setCookie) ? setCookie : setCookie ? [setCookie] : []) {
        const [pair] = line.split(';');
        const eq = pair!.indexOf('=');
        const name = pair!.slice(0, eq).trim();
        const value = pair!.slice(eq + 1).trim();
        if (/expires=Thu, 01 Jan 1970/i.test(line) || value === '') jar.delete(name);
        else jar.set(name, value);
      }
      const location = res.headers.location;
      if (res.statusCode < 300 || res.statusCode >= 400 || typeof location !== 'string') {
        throw new Error(`authorization flow stopped with HTTP ${res.statusCode} at ${new URL(url).pathname}: ${errors.at(-1) ?? ''}`);
      }
      const next = new URL(location, url);
      if (next.href.startsWith(REDIRECT_URI)) {
        const code = next.searchParams.get('code');
        if (next.searchParams.get('state') !== state || !code) {
          throw new Error(`authorization refused: ${next.searchParams.get('error')} ${next.searchParams.get('error_description') ?? ''}`);
        }
        return code;
      }
      url = next.href;
    }
    throw new Error('authorization flow did not reach the redirect URI');
  };

  /** A browser: cookies kept (by name, as the walk above does), redirects followed wherever they point. */
  const userAgent = () => {
    const jar = new Map<string, string>();
    return async (start: string, form?: Record<string, string>): Promise<Browsed> => {
      let url = start;
      let body = form === undefined ? undefined : new URLSearchParams(form).toString();
      for (let hop = 0; hop < 15; hop++) {
        const headers: Record<string, string> = { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') };
        if (body !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded';
        const res = await request(url, { method: body === undefined ? 'GET' : 'POST', headers, ...(body !== undefined ? { body } : {}) });
        const text = await res.body.text();
        const setCookie = res.headers['set-cookie'];
        for (const line of Array.isArray(setCookie) ? setCookie : setCookie ? [setCookie] : []) {
          const [pair] = line.split(';');
          const eq = pair!.indexOf('=');
          const value = pair!.slice(eq + 1).trim();
          if (/expires=Thu, 01 Jan 1970/i.test(line) || value === '') jar.delete(pair!.slice(0, eq).trim());
          else jar.set(pair!.slice(0, eq).trim(), value);
        }
        const location = res.headers.location;
        if (res.statusCode >= 300 && res.statusCode < 400 && typeof location === 'string') {
          url = new URL(location, url).href;
          body = undefined;
          continue;
        }
        return { status: res.statusCode, url, body: text };
      }
      throw new Error(`the user agent was redirected more than 15 times from ${new URL(start).pathname}`);
    };
  };
  let browsing: Promise<unknown> = Promise.resolve();
  const asUser = <T>(choice: BrowseOptions, walk: () => Promise<T>): Promise<T> => {
    const run = browsing.then(async () => {
      decision = { user: choice.user ?? options.users[0] ?? '', deny: choice.deny ?? false };
      return walk();
    });
    browsing = run.catch(() => undefined);
    return run;
  };
  const xsrfOf = (page: Browsed): string => {
    const found = /name="xsrf" value="([^"]+)"/.exec(page.body)?.[1];
    if (found === undefined) throw new Error(`no device form at ${new URL(page.url).pathname} (HTTP ${page.status}): ${errors.at(-1) ?? ''}`);
    return found;
  };

  let minting: Promise<unknown> = Promise.resolve();
  const form = async (
    endpoint: string,
    body: Record<string, string>,
    basic?: { id: string; secret: string },
  ): Promise<{ status: number; json: Record<string, unknown> }> => {
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
    if (basic) headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(basic.id)}:${encodeURIComponent(basic.secret)}`).toString('base64')}`;
    const res = await request(endpoint, { method: 'POST', headers, body: new URLSearchParams(body).toString() });
    const text = await res.body.text();
    return { status: res.statusCode, json: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
  };

  return {
    issuer,
    tokenEndpoint,
    introspectionEndpoint,
    introspectionUrl: `http://${encodeURIComponent(resourceServer.id)}:${encodeURIComponent(resourceServer.secret)}@127.0.0.1:${port}/token/introspection`,
    revocationEndpoint,
    client,
    resourceServer,
    scopes: [...SCOPES],
    get provider() {
      return provider;
    },
    jwksUri: `${issuer}/jwks`,
    setRotation(on) {
      rotate = on;
    },
    mintAccessToken(user, mint = {}) {
      const run = minting.then(async () => {
        if (!options.resource) throw new Error('the provider was started without a resource');
        const scopes = mint.scopes ?? options.resource.scopes;
        const verifier = randomBytes(32).toString('base64url');
        const challenge = createHash('sha256').update(verifier).digest('base64url');
        const code = await authorizationCode(user, challenge, randomBytes(8).toString('hex'), {
          scope: ['openid', ...scopes].join(' '),
          resource: options.resource.indicator,
        });
        pendingClaims = mint.claims;
        try {
          const { status, json } = await form(
            tokenEndpoint,
            {
              grant_type: 'authorization_code',
              code,
              redirect_uri: REDIRECT_URI,
              code_verifier: verifier,
              resource: options.resource.indicator,
            },
            client,
          );
          if (status !== 200 || typeof json.access_token !== 'string')
            throw new Error(`no access token: HTTP ${status} ${JSON.stringify(json)} ${errors.at(-1) ?? ''}`);
          return json.access_token;
        } finally {
          pendingClaims = undefined;
        }
      });
      minting = run.catch(() => undefined);
      return run;
    },
    async rotateSigningKey() {
      rotations += 1;
      const kid = `rotated-${rotations}`;
      keys.unshift(await newKey(resourceAlg, kid));
      provider = wire(new Provider(issuer, configure()));
      callback = provider.callback();
      return kid;
    },
    signingKeys: () => keys.map((k) => ({ ...k })),
    requests: () => [...seen],
    async mintRefreshToken(user) {
      const verifier = randomBytes(32).toString('base64url');
      const challenge = createHash('sha256').update(verifier).digest('base64url');
      const code = await authorizationCode(user, challenge, randomBytes(8).toString('hex'));
      const { status, json } = await form(
        tokenEndpoint,
        {
          grant_type: 'authorization_code',
          code,
          redirect_uri: REDIRECT_URI,
          code_verifier: verifier,
        },
        client,
      );
      if (status !== 200 || typeof json.refresh_token !== 'string') throw new Error(`no refresh token: HTTP ${status} ${JSON.stringify(json.error ?? '')}`);
      return json.refresh_token;
    },
    async revoke(token, publicId) {
      const { status } =
        publicId === undefined ? await form(revocationEndpoint, { token }, client) : await form(revocationEndpoint, { token, client_id: publicId });
      if (status !== 200) throw new Error(`revocation answered HTTP ${status}`);
    },
    async introspect(token) {
      const { status, json } = await form(introspectionEndpoint, { token }, resourceServer);
      if (status !== 200) throw new Error(`introspection answered HTTP ${status}`);
      return json;
    },
    issued: () => ({ accessTokens: [...accessTokens], refreshTokens: [...refreshTokens], deviceCodes: [...deviceCodes] }),
    publicClientId,
    browse: (address, choice = {}) => asUser(choice, () => userAgent()(address)),
    approveDevice: (userCode, choice = {}) =>
      asUser(choice, async () => {
        const go = userAgent();
        const verification = `${issuer}/device`;
        const entry = await go(verification);
        const confirm = await go(verification, { xsrf: xsrfOf(entry), user_code: userCode });
        return go(verification, { xsrf: xsrfOf(confirm), user_code: userCode, ...(choice.deny ? { abort: 'yes' } : { confirm: 'yes' }) });
      }),
    presentedRefreshTokens: () => [...presented],
    tokenRequests: () => ({ ...grantsSeen }),
    errors: () => [...errors],
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
