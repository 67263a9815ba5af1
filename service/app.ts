/**
 * Boot and shutdown of `mailcairnd`. Start order: configuration (strict,
 * refused as a whole), logger, startup warnings, the writer lock on the
 * database file, migrations, the supervision tree, then the listeners.
 * Stop order is the reverse: listeners close, the supervisor stops children
 * in reverse start order, the lock is released, the log is flushed.
 *
 * Only this module touches signals: the first SIGTERM/SIGINT starts the
 * graceful stop under a deadline (8 s, inside a container's usual 10 s kill
 * grace); a second signal exits at once. An uncaught error on the main thread
 * is fatal: the same stop sequence, then a non-zero exit.
 */
import type { AddressInfo } from 'node:net';
import { availableParallelism } from 'node:os';
import type { Server } from 'node:http';
import type { Config } from '../config/schema.ts';
import { loadStartupConfig } from './startup-config.ts';
import { createHealthServer, type Readiness } from '../http/health/health-server.ts';
import { REPLAY_GUARD_ID, replayClaimer } from '../actors/replay-guard/protocol.ts';
import { MIME_PARSE_TASK } from '../actors/mime-parse/protocol.ts';
import { MAIL_QUERY_TASK } from '../actors/mail-query/protocol.ts';
import { close, listen } from '../http/listen.ts';
import { AppError } from '../runtime/errors.ts';
import { createLogger, type Logger } from '../runtime/log.ts';
import { migrate } from '../runtime/store/migrate.ts';
import { openSlice } from '../runtime/store/open-slice.ts';
import { acquireWriterLock, type WriterLock } from '../runtime/store/writer-lock.ts';
import { storeSlice } from '../config/store-slice.ts';
import { MAIL_QUERY_POOL, MIME_PARSE_POOL, systemChildren } from './system-children.ts';
import { createPool } from '../runtime/pool/pool.ts';
import { reconcileAccounts } from '../runtime/store/accounts.ts';
import { deploymentSecret } from '../runtime/store/deployment-secrets.ts';
import type { ChildSpecInput } from '../runtime/supervisor/child-spec.ts';
import { Supervisor } from '../runtime/supervisor/supervisor.ts';
import { version as buildVersion } from '../runtime/version.ts';

export const SHUTDOWN_DEADLINE_MS = 8_000;

export type Service = {
  readonly config: Config;
  readonly log: Logger;
  readonly supervisor: Supervisor;
  readonly health: AddressInfo | null;
  /** The MCP listener's address while `McpEndpoint:Enabled`. */
  readonly mcp: AddressInfo | null;
  /** The administrative listener's address while `AdminEndpoint:Enabled`. */
  readonly admin: AddressInfo | null;
  readiness(): Readiness;
  stop(): Promise<void>;
};

export type StartOptions = {
  configFile?: string;
  env?: NodeJS.ProcessEnv;
  log?: Logger;
  /** Where actor threads' log lines go instead of fd 1 (tests pass their capture with `log`). */
  hostLogSink?: (line: string) => void;
  /** Children started after the system's own (embedding Mailcairn, and tests of the stop sequence). */
  extraChildren?: readonly ChildSpecInput[];
  /** The version reported everywhere (session route, log lines) instead of the build's: lets a test run a service of another release line in-process. */
  version?: string;
};

export async function startService(options: StartOptions = {}): Promise<Service> {
  const version = options.version ?? buildVersion;
  // Every refusal check-config also makes (credential material included), before anything is opened.
  const { config, posture } = loadStartupConfig({ ...(options.configFile ? { file: options.configFile } : {}), env: options.env ?? process.env });
  const log = options.log ?? createLogger({ level: config.Logging.Level, format: config.Logging.Format });
  log.info({ event: 'service.starting', version, node: process.version }, 'service.starting');
  for (const warning of posture.warnings) {
    log.warn({ event: 'config.warning', code: warning.code, setting: warning.setting }, warning.message);
  }

  const lock: WriterLock = acquireWriterLock(config.Storage.Database);
  let migrated = false;
  let cursorKey: Buffer;
  try {
    const db = openSlice(storeSlice(config));
    try {
      const result = migrate(db);
      log.info({ event: 'store.migrated', version: result.version, applied: result.applied }, 'store.migrated');
      const accounts = reconcileAccounts(
        db,
        config.Accounts.map((a) => a.Id),
      );
      if (accounts.withdrawn.length > 0) log.info({ event: 'store.accounts-withdrawn', count: accounts.withdrawn.length }, 'store.accounts-withdrawn');
      cursorKey = deploymentSecret(db, 'cursor-signing');
    } finally {
      db.close();
    }
    migrated = true;
  } catch (err) {
    lock.release();
    throw err;
  }

  const supervisor = new Supervisor({ log, hostLogLevel: config.Logging.Level, ...(options.hostLogSink ? { hostLogSink: options.hostLogSink } : {}) });
  const parsePool = createPool({
    id: MIME_PARSE_POOL,
    entry: MIME_PARSE_TASK,
    // Started on demand: sync threads parse small messages in place, so the pool sees large ones and re-derivation.
    minThreads: 0,
    // Every core: parsing overlaps the sync threads' waits on the network and the disk.
    maxThreads: availableParallelism(),
    maxQueue: 4_096,
  });
  supervisor.router.registerPool(parsePool);
  // Read-only queries of the agent surface: the main thread never runs SQL.
  const queryPool = createPool({
    id: MAIL_QUERY_POOL,
    entry: MAIL_QUERY_TASK,
    minThreads: config.McpEndpoint.Enabled || config.AdminEndpoint.Enabled ? 1 : 0,
    maxThreads: availableParallelism(),
    maxQueue: 1_024,
    // Not parked between tasks: each thread loads its in-memory vector index in the background, in
    // slices between searches (actors/mail-query/vector-index.ts), which a parked thread never runs.
    atomics: 'disabled',
  });
  supervisor.router.registerPool(queryPool);
  // Decoding the attachment a download link names: the parse pool's task on a thread of its own,
  // started on demand, so that a download never queues behind an initial mirror's parse batches.
  const extractPool = createPool({
    id: `${MIME_PARSE_POOL}-downloads`,
    entry: MIME_PARSE_TASK,
    minThreads: 0,
    maxThreads: 1,
    maxQueue: 64,
  });
  const closePools = async (): Promise<void> => {
    await Promise.all([parsePool.close(), queryPool.close(), extractPool.close()]);
  };
  let stopping = false;
  const readiness = (): Readiness => {
    const health = supervisor.health();
    const supervisorState = stopping ? 'stopping' : health.healthy ? 'healthy' : 'degraded';
    return {
      ready: migrated && !stopping && health.healthy,
      checks: { database: migrated ? 'migrated' : 'unavailable', supervisor: supervisorState, givenUpActors: health.givenUp.length },
    };
  };

  const openListener = async (server: Server, section: string, bind: string, port: number): Promise<AddressInfo> => {
    const address = await listen(server, section, bind, port);
    log.info({ event: 'listener.open', section, bind: address.address, port: address.port }, 'listener.open');
    return address;
  };
  // One authentication stage per surface; discovery and key sets are read now, so the first token after boot does not wait.
  // The listeners' modules (the MCP SDK, authentication, their schemas) load only when an endpoint is enabled:
  // a start that serves no agent does not pay for them (docs/performance.md).
  const authenticatorFor = async (surface: 'mcp' | 'admin', entries: Config['McpEndpoint']['Authentication']) => {
    const [{ createKeySets }, { serversOf }, { createAuthenticator }] = await Promise.all([
      import('../http/auth/oauth/key-sets.ts'),
      import('../http/auth/oauth/entries.ts'),
      import('../http/auth/authenticate.ts'),
    ]);
    const keySets = createKeySets({ log });
    keySets.warm(serversOf(entries));
    return createAuthenticator(surface, entries, { log, env: options.env ?? process.env, claimJti: replayClaimer(supervisor.ref(REPLAY_GUARD_ID)), keySets });
  };

  let healthServer: Server | null = null;
  let healthAddress: AddressInfo | null = null;
  let mcpServer: Server | null = null;
  let mcpAddress: AddressInfo | null = null;
  let adminServer: Server | null = null;
  let adminAddress: AddressInfo | null = null;
  try {
    await supervisor.start([...systemChildren(config), ...(options.extraChildren ?? [])]);
    if (config.HealthEndpoints.Enabled) {
      healthServer = createHealthServer(readiness);
      healthAddress = await openListener(healthServer, 'HealthEndpoints', config.HealthEndpoints.BindAddress, config.HealthEndpoints.Port);
    }
    const mcp = config.McpEndpoint;
    if (mcp.Enabled) {
      const { createMcpListener } = await import('../http/mcp/mcp-listener.ts');
      mcpServer = createMcpListener({
        config,
        store: storeSlice(config),
        log,
        version,
        readiness,
        queryPool,
        parsePool: extractPool,
        actor: (id) => supervisor.ref(id),
        authenticate: await authenticatorFor('mcp', mcp.Authentication),
      });
      mcpAddress = await openListener(mcpServer, 'McpEndpoint', mcp.BindAddress, mcp.Port);
    }
    const admin = config.AdminEndpoint;
    if (admin.Enabled) {
      const { createAdminListener } = await import('../http/admin/admin-listener.ts');
      adminServer = createAdminListener({
        config,
        log,
        version,
        actor: (id) => supervisor.ref(id),
        queryPool,
        cursorKey,
        authenticate: await authenticatorFor('admin', admin.Authentication),
      });
      adminAddress = await openListener(adminServer, 'AdminEndpoint', admin.BindAddress, admin.Port);
    }
  } catch (err) {
    if (healthServer) await close(healthServer);
    if (mcpServer) await close(mcpServer);
    if (adminServer) await close(adminServer);
    await supervisor.stop(SHUTDOWN_DEADLINE_MS);
    await closePools();
    lock.release();
    throw err;
  }
  log.info({ event: 'service.ready', version }, 'service.ready');

  let stopped: Promise<void> | null = null;
  return {
    config,
    log,
    supervisor,
    health: healthAddress,
    mcp: mcpAddress,
    admin: adminAddress,
    readiness,
    stop: () => {
      stopped ??= (async () => {
        stopping = true;
        log.info({ event: 'service.stopping' }, 'service.stopping');
        if (adminServer) await close(adminServer);
        if (mcpServer) await close(mcpServer);
        if (healthServer) await close(healthServer);
        await supervisor.stop(SHUTDOWN_DEADLINE_MS - 1_000);
        await closePools();
        lock.release();
        log.info({ event: 'service.stopped' }, 'service.stopped');
      })();
      return stopped;
    },
  };
}

/** `mailcairnd` itself: start, then own the signals until stopped. */
export async function runDaemon(options: StartOptions): Promise<void> {
  let service: Service;
  try {
    service = await startService(options);
  } catch (err) {
    reportStartFailure(err);
    process.exitCode = err instanceof AppError && err.code === 'E_CONFIG_INVALID' ? 78 : 1;
    return;
  }
  const { log } = service;
  let signalled = false;
  const shutdown = (exitCode: number): void => {
    const force = setTimeout(() => {
      log.error({ event: 'service.stop-overran', deadlineMs: SHUTDOWN_DEADLINE_MS }, 'service.stop-overran');
      process.exit(1);
    }, SHUTDOWN_DEADLINE_MS);
    force.unref();
    service.stop().then(
      () => process.exit(exitCode),
      (err: unknown) => {
        log.error({ err, event: 'service.stop-failed' }, 'service.stop-failed');
        process.exit(1);
      },
    );
  };
  const onSignal = (signal: NodeJS.Signals): void => {
    if (signalled) {
      log.warn({ event: 'service.exit-now', signal }, 'service.exit-now');
      process.exit(130);
    }
    signalled = true;
    log.info({ event: 'service.signal', signal }, 'service.signal');
    shutdown(0);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  const onFatal = (err: unknown): void => {
    log.fatal({ err, event: 'service.fatal' }, 'service.fatal');
    if (signalled) process.exit(1);
    signalled = true;
    shutdown(1);
  };
  process.on('uncaughtException', onFatal);
  process.on('unhandledRejection', onFatal);
}

function reportStartFailure(err: unknown): void {
  if (err instanceof AppError) {
    process.stderr.write(`mailcairnd: refused to start (${err.code})\n${err.message}\n`);
  } else {
    process.stderr.write(`mailcairnd: failed to start\n${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  }
}
