/**
 * The resolved posture of a configuration: what the process will serve and
 * run, as lines, and the startup warnings (docs/configuration.md
 * "Startup warnings").
 * Only an enabled endpoint produces those warnings. Besides them, each
 * setting the configuration writes that this build does not serve
 * (`config/not-served.ts`) gets one warning saying it has no effect. No line
 * carries a secret: a reference appears by its scheme only.
 *
 * Used by `mailcairnd` at startup (log the warnings) and by `check-config`.
 */
import { trustsEveryone } from './checks/reverse-proxy.ts';
import { writtenWithoutEffect } from './not-served.ts';
import { endpointLines } from './posture-endpoints.ts';
import { workLines } from './posture-work.ts';
import type { Config } from './schema.ts';

export type Warning = { readonly code: string; readonly setting: string; readonly message: string };

function endpointWarnings(config: Config): Warning[] {
  const warnings: Warning[] = [];
  const mcp = config.McpEndpoint;
  if (mcp.Enabled) {
    if (mcp.Authentication.length === 0) {
      warnings.push({
        code: 'mcp-no-authentication',
        setting: 'McpEndpoint:Authentication',
        message: 'no credential is required: anything that can reach the endpoint reads the synchronized mailboxes',
      });
      if (mcp.Cors.AllowedOrigins.includes('*')) {
        warnings.push({
          code: 'mcp-dns-rebinding',
          setting: 'McpEndpoint:Cors:AllowedOrigins',
          message:
            'no credential is required and every origin is served: a web page can reach the endpoint by DNS rebinding; list the origins or require a credential',
        });
      }
    }
    if (!mcp.RateLimiting.Enabled) {
      warnings.push({ code: 'mcp-rate-limiting-off', setting: 'McpEndpoint:RateLimiting:Enabled', message: 'rate limits are off: no request is limited' });
    }
    if (!mcp.RequestTimeout.Enabled) {
      warnings.push({ code: 'mcp-request-timeout-off', setting: 'McpEndpoint:RequestTimeout:Enabled', message: 'requests are not bounded in time' });
    }
  }
  const admin = config.AdminEndpoint;
  if (admin.Enabled) {
    if (admin.Authentication.length === 0) {
      warnings.push({
        code: 'admin-no-authentication',
        setting: 'AdminEndpoint:Authentication',
        message: 'no authentication method is configured: anything that can reach the address can administer the deployment',
      });
    }
    if (admin.Https.Endpoints.length === 0) {
      warnings.push({ code: 'admin-clear-text', setting: 'AdminEndpoint:Https:Endpoints', message: 'the administrative endpoint is served in clear text' });
    }
    if (!admin.RateLimiting.Enabled) {
      warnings.push({ code: 'admin-rate-limiting-off', setting: 'AdminEndpoint:RateLimiting:Enabled', message: 'rate limits are off: no request is limited' });
    }
    if (!admin.RequestTimeout.Enabled) {
      warnings.push({ code: 'admin-request-timeout-off', setting: 'AdminEndpoint:RequestTimeout:Enabled', message: 'requests are not bounded in time' });
    }
  }
  if ((mcp.Enabled || admin.Enabled) && trustsEveryone(config.ReverseProxy.TrustedProxies)) {
    warnings.push({
      code: 'proxy-trusts-everyone',
      setting: 'ReverseProxy:TrustedProxies',
      message: 'forwarded headers are believed from any peer, which also disables the refusal of tokens sent over plain HTTP; list the proxies',
    });
  }
  return warnings;
}

function notServedWarnings(written: unknown): Warning[] {
  return writtenWithoutEffect(written).map((row) => ({
    code: 'not-served',
    setting: row.setting,
    message: `has no effect in this release: ${row.consequence}`,
  }));
}

/**
 * `written` is the configuration as written (file plus overrides, before
 * defaults; `loadConfigAsWritten` gives it): without it, no setting counts as
 * written and no not-served warning is given.
 */
export function describePosture(config: Config, options: { now?: number; written?: unknown } = {}): { lines: string[]; warnings: Warning[] } {
  const now = options.now ?? Date.now();
  return { lines: [...endpointLines(config, now), ...workLines(config)], warnings: [...endpointWarnings(config), ...notServedWarnings(options.written ?? {})] };
}
