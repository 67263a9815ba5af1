/**
 * A deployment whose administrative surface accepts OAuth access tokens, for
 * the client's interactive and device sign-in tests (test/cli/oauth-*.test.ts):
 *
 * - a TLS-terminating proxy in front of the administrative listener (the
 *   service refuses tokens that crossed clear text), sending
 *   `X-Forwarded-Proto`/`-Host` from 127.0.0.1, which `ReverseProxy`
 *   trusts; its certificate is one this machine does not trust, so the
 *   client pins it with `--trust-untrusted-certificate`;
 * - one or more real `oidc-provider` servers (test/harness/oauth-provider.ts)
 *   issuing JWT access tokens for the resource `https://127.0.0.1:<proxy>/api/admin`,
 *   with the public client `mailcairn-cli` whose loopback redirect is a
 *   reserved port;
 * - the service itself in-process (startCliService) with an `OAuth` entry
 *   naming those servers.
 *
 * And the scripted person: `signInInteractive` reads the authorization
 * address the client prints and walks it with the provider's user agent to
 * the client's loopback catcher; `signInDevice` reads the user code and
 * approves (or refuses) it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Test } from 'tap';
import { createCa, issue } from '../harness/test-ca.ts';
import { startOAuthProvider, type Browsed, type OAuthProvider, type OAuthProviderOptions } from '../harness/oauth-provider.ts';
import { until } from '../helpers/log-capture.ts';
import { cli, forwardingProxy, reservePort, startCliService, tempDir, type CliHome, type CliResult, type CliService } from './harness.ts';

export const SUBJECT = 'operator-7f3a';
export const ADMIN_SCOPE = 'mailcairn.admin';

export type OAuthDeployment = {
  service: CliService;
  /** `https://127.0.0.1:<proxy port>`: what the client logs in to. */
  endpoint: string;
  resource: string;
  providers: OAuthProvider[];
  /** The loopback redirect registered for the public client. */
  redirectUri: string;
  /** Every token, device code and key handed out so far (for leak scans). */
  secrets(): string[];
};

export type OAuthDeploymentOptions = {
  /** How many authorization servers the entry names (default 1). */
  servers?: number;
  /** Options of every provider (beside the resource, users and public client made here). */
  provider?: Partial<OAuthProviderOptions>;
  /** Default [ADMIN_SCOPE]. */
  requiredScopes?: string[];
  /** Default ['offline_access']. */
  advertisedScopes?: string[];
  /** The public client may use the refresh_token grant (default true). */
  refreshTokenGrant?: boolean;
};

export async function startOAuthDeployment(t: Test, options: OAuthDeploymentOptions = {}): Promise<OAuthDeployment> {
  const ca = createCa(tempDir(t), 'OAuth Test Root');
  const leaf = issue(ca, { name: 'admin-proxy', ips: ['127.0.0.1'], eku: ['serverAuth'] });
  // The service's port is known only once it runs: the proxy starts pointing nowhere.
  const proxy = await forwardingProxy(t, 'http://127.0.0.1:9', { tls: { cert: leaf.cert, key: leaf.key }, forwarded: true });
  const resource = `${proxy.url}/api/admin`;
  const redirectUri = `http://127.0.0.1:${await reservePort()}/`;
  const requiredScopes = options.requiredScopes ?? [ADMIN_SCOPE];
  const providers: OAuthProvider[] = [];
  for (let i = 0; i < (options.servers ?? 1); i++) {
    const provider = await startOAuthProvider({
      users: [SUBJECT],
      rotateRefreshTokens: false,
      deviceInterval: 1,
      resource: { indicator: resource, scopes: requiredScopes },
      publicClient: { redirectUris: [redirectUri], refreshToken: options.refreshTokenGrant ?? true },
      ...options.provider,
    });
    t.teardown(() => provider.stop());
    providers.push(provider);
  }
  const service = await startCliService(t, {
    adminEntries: [
      {
        OAuth: {
          Resource: resource,
          RequiredScopes: requiredScopes,
          AdvertisedScopes: options.advertisedScopes ?? ['offline_access'],
          AuthorizationServers: providers.map((p, i) => ({ Name: `idp-${i}`, Issuer: p.issuer, AuthorizedSubjects: [SUBJECT] })),
        },
      },
    ],
    sections: { ReverseProxy: { TrustedProxies: ['127.0.0.1/32'] } },
  });
  proxy.setTarget(service.admin);
  return {
    service,
    endpoint: proxy.url,
    resource,
    providers,
    redirectUri,
    secrets: () => [
      ...service.secrets,
      ...providers.flatMap((p) => {
        const issued = p.issued();
        return [...issued.accessTokens, ...issued.refreshTokens, ...issued.deviceCodes];
      }),
    ],
  };
}

/** `login` arguments of an OAuth mode against the deployment. */
export function oauthLogin(d: OAuthDeployment, mode: 'interactive' | 'device', extra: string[] = []): string[] {
  return [
    'login',
    '--endpoint',
    d.endpoint,
    '--mode',
    mode,
    '--client-id',
    'mailcairn-cli',
    '--trust-untrusted-certificate',
    ...(mode === 'interactive' ? ['--redirect-uri', d.redirectUri] : []),
    ...extra,
  ];
}

/** Where the client runs: no browser is opened. */
export const NO_BROWSER = { BROWSER: 'none' };

const AUTHORIZE = /^(http:\/\/127\.0\.0\.1:\d+\/auth\?\S+)$/m;
const USER_CODE = /enter the code (\S+)/;

/** Runs `login --mode interactive`, and plays the person: `walk` takes the printed address to the provider (default: browse it as is). */
export async function signInInteractive(
  home: CliHome,
  d: OAuthDeployment,
  walk: (address: string) => Promise<Browsed> = (address) => d.providers[0]!.browse(address),
  extra: string[] = [],
): Promise<{ result: CliResult; page: Browsed | undefined }> {
  let page: Browsed | undefined;
  let walked: Promise<void> = Promise.resolve();
  const result = await cli(home, oauthLogin(d, 'interactive', extra), {
    env: NO_BROWSER,
    started: (_child, output) => {
      walked = until(() => AUTHORIZE.test(output.stderr()), 30_000, 'the authorization address').then(async () => {
        page = await walk(AUTHORIZE.exec(output.stderr())![1]!);
      });
      walked.catch(() => {});
    },
  });
  await walked.catch(() => {});
  return { result, page };
}

/** Runs `login --mode device`, and plays the person: `approve` gets the user code printed (default: approve it at the first provider). */
export async function signInDevice(
  home: CliHome,
  d: OAuthDeployment,
  approve: ((userCode: string) => Promise<unknown>) | null = (code) => d.providers[0]!.approveDevice(code),
  extra: string[] = [],
): Promise<CliResult> {
  let approved: Promise<unknown> = Promise.resolve();
  const result = await cli(home, oauthLogin(d, 'device', extra), {
    env: NO_BROWSER,
    timeoutMs: 90_000,
    started: (_child, output) => {
      if (approve === null) return;
      approved = until(() => USER_CODE.test(output.stderr()), 30_000, 'the user code').then(() => approve(USER_CODE.exec(output.stderr())![1]!));
      approved.catch(() => {});
    },
  });
  await approved.catch(() => {});
  return result;
}

/** The credential file and its key, as text, for leak scans. */
export function credentialFiles(home: CliHome): string {
  return ['credentials.json', 'credentials.key'].map((f) => readFileSync(join(home.dir, f), 'utf8')).join('\n');
}
