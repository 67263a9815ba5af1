/** Requests to the administrative listener as an operator's client sends them, and the answers read back. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';

export type AdminAnswer = { status: number; body: string; type: string | undefined; json(): any };

export async function adminCall(url: string, options: { method?: 'GET' | 'POST'; apiKey?: string; json?: unknown; body?: string } = {}): Promise<AdminAnswer> {
  const headers: Record<string, string> = {};
  if (options.apiKey) headers['x-api-key'] = options.apiKey;
  const body = options.json !== undefined ? JSON.stringify(options.json) : options.body;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await request(url, { method: options.method ?? (body === undefined ? 'GET' : 'POST'), headers, ...(body !== undefined ? { body } : {}) });
  const text = await res.body.text();
  const type = res.headers['content-type'];
  return { status: res.statusCode, body: text, type: Array.isArray(type) ? type.join(', ') : type, json: () => JSON.parse(text) };
}

/** A query string from the defined members of `params`. */
export function query(params: Record<string, string | number | undefined>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined) search.set(name, String(value));
  const text = search.toString();
  return text === '' ? '' : `?${text}`;
}

export type AdminKeys = { operator: string; reader: string; nothing: string };

/**
 * An `AdminEndpoint` section on `port` with three API-key entries, their
 * keys written under `dir` (mode 0600): `operator` (no Permissions list: the
 * whole surface), `reader` (service.admin.read only) and `nothing` ([]).
 * The bucket is wide enough that a test's own requests never meet it.
 */
export function adminEndpointSection(dir: string, port: number, keys: AdminKeys, tokenCapacity = 1_000): Record<string, unknown> {
  const file = (name: string, secret: string): string => {
    writeFileSync(join(dir, name), secret, { mode: 0o600 });
    return `file:${join(dir, name)}`;
  };
  return {
    Enabled: true,
    BindAddress: '127.0.0.1',
    Port: port,
    Authentication: [
      { ApiKey: { Name: 'operator', SecretReference: file('operator.key', keys.operator), Lifetime: 'NoLimit' } },
      { ApiKey: { Name: 'reader', SecretReference: file('reader.key', keys.reader), Lifetime: 'NoLimit' }, Permissions: ['service.admin.read'] },
      { ApiKey: { Name: 'nothing', SecretReference: file('nothing.key', keys.nothing), Lifetime: 'NoLimit' }, Permissions: [] },
    ],
    RateLimiting: { TokenCapacity: tokenCapacity, TokensPerReplenishmentPeriod: tokenCapacity, ReplenishmentPeriod: '00:01:00' },
  };
}
