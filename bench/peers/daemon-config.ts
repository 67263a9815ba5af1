/**
 * Configuration pieces every bench daemon shares, so a scenario states only
 * what is its own (accounts, intervals, logging).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { trackPid, watchdog } from '../../test/harness/processes.ts';

const daemonBin = fileURLToPath(new URL('../../bin/mailcairnd.js', import.meta.url));

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

/** A daemon the bench started: its PID is tracked and a watchdog ends it should the bench itself die. */
export type BenchDaemon = { child: ChildProcess; pid: number; exited: Promise<unknown>; disarm: () => void };

/** Starts the compiled daemon on `config`, its output appended to `logFile`. */
export function spawnBenchDaemon(config: string, logFile: string): BenchDaemon {
  const logFd = openSync(logFile, 'a');
  const child = spawn(process.execPath, [daemonBin, '--config', config], { stdio: ['ignore', logFd, logFd] });
  closeSync(logFd);
  const pid = child.pid!;
  trackPid(pid);
  const disarm = watchdog(pid, config);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  return { child, pid, exited, disarm };
}
