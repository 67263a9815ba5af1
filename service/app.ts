/**
 * Boot and shutdown of `mailcairnd`, the one place that writes their order.
 * Start: configuration (strict, refused as a whole), logger, startup
 * warnings, the OpenTelemetry SDK when `Telemetry` asks for it (loaded then
 * and only then), the writer lock on the database file, migrations, the worker
 * pools and the supervision tree, then the listeners (health, MCP, admin).
 * Each step that opens something pushes its closer on a teardown stack, so a
 * stop, a start that failed and a stop asked for while starting all close
 * the same things in the reverse order: listeners, the supervisor's children
 * in reverse start order, the pools, the lock; then the log is flushed.
 *
 * Readiness answers ready only once every configured listener accepts
 * connections; `mailcairnd` owns its signals before startup begins
 * (stop-signals.ts), so ready also means a SIGTERM now drains.
 *
 * Only this module acts on signals: the first SIGTERM/SIGINT starts the
 * graceful stop under a deadline (8 s, inside a container's usual 10 s kill
 * grace), at once if the service is up, at the next start-up step if it is
 * starting; a second signal exits at once. An uncaught error on the main
 * thread is fatal: the same stop sequence, then a non-zero exit.
 */
import type { AddressInfo } from 'node:net';
import { availableParallelism } from 'node:os';
import type { Config } from '../config/schema.ts';
import { passagesPerMessage as embeddedPassagesPerMessage } from '../config/schema/embeddings.ts';
import { loadStartupConfig } from './startup-config.ts';
import type { Readiness } from '../http/health/health-server.ts';
import { type OpenedListener, openListeners, type ScrapeListener } from './listeners.ts';
import { MIME_PARSE_TASK } from '../actors/mime-parse/protocol.ts';
import { MAIL_QUERY_TASK } from '../actors/mail-query/protocol.ts';
import { StoreGaugesReply } from '../actors/mail-query/protocol/store-gauges.ts';
import { AppError } from '../runtime/errors.ts';
import { createLogger, type Logger } from '../runtime/log.ts';
import { reduceError } from '../runtime/log-error.ts';
import { watchStorage } from '../runtime/storage-full.ts';
import { migrate } from '../runtime/store/migrate.ts';
import { openSlice } from '../runtime/store/open-slice.ts';
import { storeLocation } from '../runtime/store/location.ts';
import { observeStoreGauges } from '../runtime/telemetry/store-gauges.ts';
import { acquireWriterLock } from '../runtime/store/writer-lock.ts';
import { storeSlice } from '../config/store-slice.ts';
import { type ConfigSource, MAIL_QUERY_POOL, MIME_PARSE_POOL, systemChildren } from './system-children.ts';
import { configFileOf } from '../config/load.ts';
import { createPool, type PoolRef } from '../runtime/pool/pool.ts';
import { reconcileAccounts } from '../runtime/store/accounts.ts';
import { deploymentSecret } from '../runtime/store/deployment-secrets.ts';
import type { ChildSpecInput } from '../runtime/supervisor/child-spec.ts';
import { Supervisor } from '../runtime/supervisor/supervisor.ts';
import { version as buildVersion } from '../runtime/version.ts';
import type { InstalledTelemetry } from '../runtime/telemetry/sdk.ts';
import type { TelemetrySettings } from '../runtime/telemetry/settings.ts';
import { EXIT_NOW_CODE, type HeldSignals, type StopSignal } from './stop-signals.ts';
import { type ServiceManagerNotifier, serviceManagerNotifier } from './systemd-notify.ts';
import { Teardown } from './teardown.ts';

export const SHUTDOWN_DEADLINE_MS = 8_000;

export type Service = {
  readonly config: Config;
  readonly log: Logger;
  readonly supervisor: Supervisor;
  /** The health listener's address while `HealthEndpoints:Enabled` (its first TLS socket under HttpsOnly). */
  readonly health: AddressInfo | null;
  /** The MCP listener's address while `McpEndpoint:Enabled` (its first TLS socket under a TLS transport). */
  readonly mcp: AddressInfo | null;
  /** The administrative listener's address while `AdminEndpoint:Enabled` (its first TLS socket with profiles). */
  readonly admin: AddressInfo | null;
  /** Every socket opened, redirect listeners included, in the order opened. */
  readonly listeners: readonly OpenedListener[];
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
  /**
   * A stop asked for while starting: startup takes no further step once it
   * is aborted and returns a service that was never ready, for `stop()`.
   */
  stopRequested?: AbortSignal;
};

/** The configuration file startup read and the overrides of `MailRules` it applied: the rule listing compares the file with them. */
function configSourceOf(options: StartOptions): ConfigSource {
  const env = options.env ?? process.env;
  const { file, explicit } = configFileOf({ ...(options.configFile ? { file: options.configFile } : {}), env });
  const overrides = Object.fromEntries(
    Object.entries(env).filter((entry): entry is [string, string] => entry[0].toLowerCase().startsWith('mailcairn__mailrules__') && entry[1] !== undefined),
  );
  return { file, explicit, overrides };
}

export async function startService(options: StartOptions = {}): Promise<Service> {
  const version = options.version ?? buildVersion;
  const stopAsked = (): boolean => options.stopRequested?.aborted === true;
  // Every refusal check-config also makes (credential material included), before anything is opened.
  const {
    config,
    posture,
    telemetry: telemetrySettings,
  } = loadStartupConfig({ ...(options.configFile ? { file: options.configFile } : {}), env: options.env ?? process.env });
  const log = options.log ?? createLogger({ level: config.Logging.Level, format: config.Logging.Format });
  log.info({ event: 'service.starting', version, node: process.version }, 'service.starting');
  for (const warning of posture.warnings) {
    log.warn({ event: 'config.warning', code: warning.code, setting: warning.setting }, warning.message);
  }

  const teardown = new Teardown();
  const supervisor = new Supervisor({
    log,
    hostLogLevel: config.Logging.Level,
    telemetry: telemetrySettings,
    ...(options.hostLogSink ? { hostLogSink: options.hostLogSink } : {}),
  });
  let migrated = false;
  let listening = false;
  let stopping = false;
  const opened: OpenedListener[] = [];
  const serving = (surface: OpenedListener['surface']): AddressInfo | null =>
    opened.find((l) => l.surface === surface && l.role !== 'redirect')?.address ?? null;
  // A full disk under the store shows here; reads go on, so the service stays ready (docs/operations.md "A full disk").
  const storage = watchStorage();
  teardown.push(() => storage.close());
  const readiness = (): Readiness => {
    const health = supervisor.health();
    const supervisorState = stopping ? 'stopping' : health.healthy ? 'healthy' : 'degraded';
    return {
      ready: migrated && listening && !stopping && health.healthy,
      checks: {
        database: migrated ? 'migrated' : 'unavailable',
        supervisor: supervisorState,
        givenUpActors: health.givenUp.length,
        listeners: stopping ? 'closing' : listening ? 'open' : 'opening',
        storage: storage.condition(),
      },
    };
  };
  let stopped: Promise<void> | null = null;
  const service: Service = {
    config,
    log,
    supervisor,
    get health() {
      return serving('HealthEndpoints');
    },
    get mcp() {
      return serving('McpEndpoint');
    },
    get admin() {
      return serving('AdminEndpoint');
    },
    listeners: opened,
    readiness,
    stop: () => {
      stopped ??= (async () => {
        stopping = true;
        log.info({ event: 'service.stopping' }, 'service.stopping');
        await teardown.run();
        log.info({ event: 'service.stopped' }, 'service.stopped');
      })();
      return stopped;
    },
  };
  // The steps, in order. Between them: a stop asked for while starting takes effect at the next step.
  try {
    if (stopAsked()) return service;
    // Before the store: what records from here on (the store gauges included) finds the real providers.
    const telemetry = telemetrySettings === null ? null : await installTelemetry(telemetrySettings, log, version, teardown);
    if (stopAsked()) return service;
    const cursorKey = prepareStore(config, log, teardown);
    migrated = true;
    if (stopAsked()) return service;
    const pools = createPools(config, log, supervisor, teardown);
    observeStore(config, log, pools.query, teardown);
    // Pushed before the start: children started before a failing one are stopped too.
    teardown.push(() => supervisor.stop(SHUTDOWN_DEADLINE_MS - 1_000));
    await supervisor.start([...systemChildren(config, configSourceOf(options)), ...(options.extraChildren ?? [])]);
    if (stopAsked()) return service;
    await openListeners(
      {
        config,
        log,
        version,
        env: options.env ?? process.env,
        supervisor,
        readiness,
        pools,
        cursorKey,
        teardown,
        telemetry: scrapeOf(telemetrySettings, telemetry),
      },
      opened,
      stopAsked,
    );
  } catch (err) {
    // A failed start is not a stop: no stopping lines, the error is the caller's to report.
    stopping = true;
    await teardown.run();
    throw err;
  }
  if (stopAsked()) return service;
  listening = true;
  log.info({ event: 'service.ready', version }, 'service.ready');
  return service;
}

/**
 * The OpenTelemetry SDK (runtime/telemetry/sdk.ts), imported here and only
 * here, only when telemetry is on. Its shutdown runs last of all: the final
 * export sees what the stop itself recorded.
 */
async function installTelemetry(settings: TelemetrySettings, log: Logger, version: string, teardown: Teardown): Promise<InstalledTelemetry> {
  const sdk = await import('../runtime/telemetry/sdk.ts');
  const installed = await sdk.installTelemetry(settings, { log, version });
  teardown.push(() => installed.shutdown());
  return installed;
}

function scrapeOf(settings: TelemetrySettings | null, installed: InstalledTelemetry | null): ScrapeListener | null {
  const prometheus = settings?.metrics.prometheus ?? null;
  return prometheus === null || installed?.scrape == null ? null : { ...prometheus, handler: installed.scrape };
}

/** The writer lock (held until the stop), migrations and the configured accounts; returns the cursor-signing key. */
function prepareStore(config: Config, log: Logger, teardown: Teardown): Buffer {
  const lock = acquireWriterLock(config.Storage.Database);
  teardown.push(() => lock.release());
  const db = openSlice(storeSlice(config));
  try {
    const result = migrate(db);
    log.info({ event: 'store.migrated', version: result.version, applied: result.applied }, 'store.migrated');
    const accounts = reconcileAccounts(
      db,
      config.Accounts.map((a) => a.Id),
    );
    if (accounts.withdrawn.length > 0) log.info({ event: 'store.accounts-withdrawn', count: accounts.withdrawn.length }, 'store.accounts-withdrawn');
    return deploymentSecret(db, 'cursor-signing');
  } finally {
    db.close();
  }
}

/** Time a metrics collection waits for the store's figures before it leaves them out. */
const STORE_GAUGES_DEADLINE_MS = 10_000;
/** Young generation of each query pool thread, MiB (V8's default grows to 32 resident). */
const QUERY_YOUNG_GENERATION_MB = 16;

/**
 * The gauges read from the store at each metrics collection, by the query
 * pool (the main thread runs no SQL), so after the pools rather than beside
 * the boot-time connection; a no-op while telemetry is off.
 */
function observeStore(config: Config, log: Logger, query: PoolRef, teardown: Teardown): void {
  const where = storeLocation(config.Storage.Database);
  const scope = { accounts: config.Accounts.map((a) => ({ id: a.Id, folders: a.Folders.map((f) => f.Alias) })) };
  const passagesPerMessage = embeddedPassagesPerMessage(config.Embeddings);
  const gauges = observeStoreGauges({
    read: (now) =>
      query.ask(
        { type: 'mail-query.store-gauges', scope, spendPeriodMs: config.Embeddings.Period, now, passagesPerMessage },
        { reply: StoreGaugesReply, deadlineMs: STORE_GAUGES_DEADLINE_MS },
      ),
    file: where.kind === 'file' ? where.path : null,
    log,
  });
  teardown.push(() => gauges.close());
}

type Pools = { query: PoolRef; downloads: PoolRef };

/** The worker pools: parsing (the actors'), read-only queries and attachment downloads (the listeners'). */
function createPools(config: Config, log: Logger, supervisor: Supervisor, teardown: Teardown): Pools {
  const parse = createPool({
    id: MIME_PARSE_POOL,
    entry: MIME_PARSE_TASK,
    // Started on demand: sync threads parse small messages in place, so the pool sees large ones and re-derivation.
    minThreads: 0,
    // Every core: parsing overlaps the sync threads' waits on the network and the disk.
    maxThreads: availableParallelism(),
    maxQueue: 4_096,
    logLevel: config.Logging.Level,
    log,
  });
  // Read-only queries of the agent surface: the main thread never runs SQL.
  const query = createPool({
    id: MAIL_QUERY_POOL,
    entry: MAIL_QUERY_TASK,
    // Each pool thread opens its one read-only connection from it.
    config: storeSlice(config),
    // With a listener on, the first request's thread is kept (it holds the vector index, loaded from the
    // first semantic search on); none is started before that request: a one-shot mirror never asks.
    minThreads: config.McpEndpoint.Enabled || config.AdminEndpoint.Enabled ? 1 : 0,
    startOnFirstAsk: true,
    // A query's garbage is small and short-lived (rows, one answer): V8's default young generation
    // (up to 32 MiB resident per thread) mostly holds what a smaller one collects as soon.
    resourceLimits: { maxYoungGenerationSizeMb: QUERY_YOUNG_GENERATION_MB },
    maxThreads: availableParallelism(),
    maxQueue: 1_024,
    logLevel: config.Logging.Level,
    log,
    // Not parked between tasks: each thread loads its in-memory vector index in the background, in
    // slices between searches (actors/mail-query/vector-index.ts), which a parked thread never runs.
    atomics: 'disabled',
  });
  // Decoding the attachment a download link names: the parse pool's task on a thread of its own,
  // started on demand, so that a download never queues behind an initial mirror's parse batches.
  const downloads = createPool({
    id: `${MIME_PARSE_POOL}-downloads`,
    entry: MIME_PARSE_TASK,
    minThreads: 0,
    maxThreads: 1,
    maxQueue: 64,
    logLevel: config.Logging.Level,
    log,
  });
  teardown.push(() => Promise.all([parse.close(), query.close(), downloads.close()]).then(() => undefined));
  supervisor.router.registerPool(parse);
  supervisor.router.registerPool(query);
  return { query, downloads };
}

/**
 * `mailcairnd` itself: claim the signals, start, then own them until stopped.
 * A signal that arrived before (held since the first line, stop-signals.ts)
 * or while starting stops the service gracefully and exits 0 like any other.
 */
export async function runDaemon(options: StartOptions, signals: HeldSignals): Promise<void> {
  const stopRequested = new AbortController();
  let service: Service | null = null;
  let signalled: StopSignal | null = null;
  let fatal: unknown = null;
  // systemd's Type=notify (packaging/mailcairn.service): nothing unless $NOTIFY_SOCKET is set.
  let notifier: ServiceManagerNotifier | null = null;
  const shutdown = (running: Service, exitCode: number): void => {
    notifier?.stopping();
    const force = setTimeout(() => {
      running.log.error({ event: 'service.stop-overran', deadlineMs: SHUTDOWN_DEADLINE_MS }, 'service.stop-overran');
      process.exit(1);
    }, SHUTDOWN_DEADLINE_MS);
    force.unref();
    running.stop().then(
      () => process.exit(exitCode),
      (err: unknown) => {
        running.log.error({ err, event: 'service.stop-failed' }, 'service.stop-failed');
        process.exit(1);
      },
    );
  };
  signals.claim((signal) => {
    if (signalled || fatal !== null) {
      service?.log.warn({ event: 'service.exit-now', signal }, 'service.exit-now');
      process.exit(EXIT_NOW_CODE);
    }
    signalled = signal;
    stopRequested.abort();
    if (service) {
      service.log.info({ event: 'service.signal', signal }, 'service.signal');
      shutdown(service, 0);
    }
  });
  const onFatal = (err: unknown): void => {
    if (service === null) {
      // Still starting: startup stops at its next step and the stop runs then.
      fatal ??= err;
      stopRequested.abort();
      return;
    }
    service.log.fatal({ err, event: 'service.fatal' }, 'service.fatal');
    if (signalled || fatal !== null) process.exit(1);
    fatal = err;
    shutdown(service, 1);
  };
  process.on('uncaughtException', onFatal);
  process.on('unhandledRejection', onFatal);

  try {
    service = await startService({ ...options, stopRequested: stopRequested.signal });
  } catch (err) {
    reportStartFailure(err);
    process.off('uncaughtException', onFatal);
    process.off('unhandledRejection', onFatal);
    process.exitCode = err instanceof AppError && err.code === 'E_CONFIG_INVALID' ? 78 : 1;
    return;
  }
  notifier = serviceManagerNotifier({ env: options.env ?? process.env, log: service.log });
  if (fatal !== null) {
    service.log.fatal({ err: fatal, event: 'service.fatal' }, 'service.fatal');
    shutdown(service, 1);
  } else if (signalled) {
    service.log.info({ event: 'service.signal', signal: signalled }, 'service.signal');
    shutdown(service, 0);
  } else {
    // Ready is what /readyz answers: every listener open, the store migrated, no actor given up.
    const running = service;
    notifier.readyWhen(() => running.readiness().ready);
  }
}

function reportStartFailure(err: unknown): void {
  if (err instanceof AppError) {
    process.stderr.write(`mailcairnd: refused to start (${err.code})\n${err.message}\n`);
  } else {
    // A defect: its class, code and frames, as a log line shows them (runtime/log-error.ts), never its message.
    process.stderr.write(`mailcairnd: failed to start\n${JSON.stringify(reduceError(err), null, 2)}\n`);
  }
}
