/**
 * Configuration pieces every bench daemon shares, so a scenario states only
 * what is its own (accounts, intervals, logging). The daemon itself is
 * started by daemon.ts.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** An agent's API key, read from a secret reference (`file:…`), never expiring. */
export function apiKeyEntry(name: string, secretReference: string): Record<string, unknown> {
  return { ApiKey: { Name: name, SecretReference: secretReference, Lifetime: 'NoLimit' } };
}

/**
 * The MCP endpoint on loopback. The rate limiter stays in the path (its cost
 * is part of a call) but never refuses: the default anonymous budget (60
 * calls a minute) would end a run in its first second. Without
 * `authentication` the endpoint is unauthenticated (loopback only).
 */
export function benchMcpEndpoint(port: number, authentication?: readonly unknown[]): Record<string, unknown> {
  return {
    Enabled: true,
    BindAddress: '127.0.0.1',
    Port: port,
    ...(authentication ? { Authentication: authentication } : {}),
    RateLimiting: { TokenCapacity: 1_000_000, TokensPerReplenishmentPeriod: 1_000_000 },
  };
}

/**
 * Writes `<dir>/mailcairn.json`: `sections`, with the database in `dir` and
 * the health listener off (its fixed default port, 8081, would clash
 * between daemons; the MCP listener answers `/readyz` too). Returns the
 * configuration's path and the database's.
 */
export function writeBenchConfig(dir: string, sections: Record<string, unknown>): { config: string; database: string } {
  const config = join(dir, 'mailcairn.json');
  const database = join(dir, 'mailcairn.db');
  writeFileSync(config, JSON.stringify({ HealthEndpoints: { Enabled: false }, Storage: { Database: database }, ...sections }));
  return { config, database };
}
