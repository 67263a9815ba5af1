/**
 * Opening the listeners startup planned (`config/listeners.ts`): per surface
 * one handler (its pipeline, limiter and authentication, built once), served
 * by every socket of the surface — clear text at `BindAddress:Port`, a TLS
 * socket per address and port of its HTTPS profiles (http/tls/secure-server.ts),
 * and the clear-text redirect listener that stands in for clear text once
 * profiles exist (http/tls/redirect-listener.ts).
 *
 * Health first, so liveness answers while the others open (readiness waits
 * for all of them), then MCP, then admin. The surfaces' modules (the MCP
 * SDK, authentication, their schemas) load only when an endpoint is enabled:
 * a start that serves no agent does not pay for them (docs/performance.md).
 *
 * Certificates are read once more here, just before the first socket opens
 * (startup's configuration check read them too, with the same rules), and
 * their expiry is logged; a certificate replaced in between is refused the
 * same way, before anything opens.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { REPLAY_GUARD_ID, replayClaimer } from '../actors/replay-guard/protocol.ts';
import { type Listener, listenersOf, type ListenerSurface } from '../config/listeners.ts';
import { formatProblem } from '../config/problem.ts';
import type { Config } from '../config/schema.ts';
import { healthHandler, type Readiness } from '../http/health/health-server.ts';
import { hostGuardOf } from '../http/host-guard.ts';
import { close, listen } from '../http/listen.ts';
import { scrapeServer } from '../http/scrape-server.ts';
import { clearTextServer, type SurfaceHandler, type TelemetrySurface } from '../http/pipeline.ts';
import { createRedirectListener } from '../http/tls/redirect-listener.ts';
import { createTlsServer } from '../http/tls/secure-server.ts';
import { logCertificateExpiry, readServerCertificates, type ServerCertificate } from '../http/tls/server-certificates.ts';
import { AppError } from '../runtime/errors.ts';
import type { Logger } from '../runtime/log.ts';
import type { PoolRef } from '../runtime/pool/pool.ts';
import type { Supervisor } from '../runtime/supervisor/supervisor.ts';
import type { ScrapeHandler } from '../runtime/telemetry/sdk.ts';
import type { Teardown } from './teardown.ts';

export type ListenerContext = {
  config: Config;
  log: Logger;
  version: string;
  env: NodeJS.ProcessEnv;
  supervisor: Supervisor;
  readiness: () => Readiness;
  pools: { query: PoolRef; downloads: PoolRef };
  cursorKey: Buffer;
  teardown: Teardown;
  /** The Prometheus scrape listener, when telemetry exports to Prometheus. */
  telemetry: ScrapeListener | null;
};

/** Where the scrape listener binds and what answers it (runtime/telemetry/sdk.ts). */
export type ScrapeListener = { readonly host: string; readonly port: number; readonly handler: ScrapeHandler };

export const SCRAPE_SECTION = 'Telemetry:Metrics:Prometheus';

/** A socket the service opened: which surface it serves, how, and where. */
export type OpenedListener = {
  readonly surface: ListenerSurface | 'Telemetry';
  readonly role: Listener['role'];
  readonly section: string;
  readonly address: AddressInfo;
};

const ORDER: Record<ListenerSurface, number> = { HealthEndpoints: 0, McpEndpoint: 1, AdminEndpoint: 2 };
/** The `mailcairn.surface` label of each surface's exchanges (http/pipeline/exchange-telemetry.ts). */
const TELEMETRY_SURFACE: Record<ListenerSurface, TelemetrySurface> = { HealthEndpoints: 'health', McpEndpoint: 'mcp', AdminEndpoint: 'admin' };

export async function openListeners(ctx: ListenerContext, opened: OpenedListener[], stopAsked: () => boolean): Promise<void> {
  const { config, log } = ctx;
  const planned = listenersOf(config).sort((a, b) => ORDER[a.surface] - ORDER[b.surface]);
  const certificates = readCertificates(ctx, planned);
  const handlers = new Map<ListenerSurface, Promise<SurfaceHandler>>();
  const handlerOf = (surface: ListenerSurface): Promise<SurfaceHandler> => {
    let handler = handlers.get(surface);
    if (handler === undefined) {
      handler = surfaceHandlerOf(ctx, surface);
      handlers.set(surface, handler);
    }
    return handler;
  };

  // The port each profile was bound on, by `<surface>:<index>`: a redirect names it (Port 0 is "any free port", never 0).
  const boundPorts = new Map<string, number>();
  for (const listener of planned) {
    const server = await serverFor(ctx, listener, handlerOf, certificates, boundPorts);
    ctx.teardown.push(() => close(server));
    const address = await listen(server, listener.section, listener.bindAddress, listener.port, config[listener.surface].Connections);
    for (const index of listener.profiles) boundPorts.set(`${listener.surface}:${index}`, address.port);
    log.info({ event: 'listener.open', section: listener.section, role: listener.role, bind: address.address, port: address.port }, 'listener.open');
    opened.push({ surface: listener.surface, role: listener.role, section: listener.section, address });
    if (stopAsked()) return;
  }
  if (ctx.telemetry !== null) await openScrapeListener(ctx, ctx.telemetry, opened);
}

/** The Prometheus scrape listener: last, and like the others counted by readiness and closed by the teardown. */
async function openScrapeListener(ctx: ListenerContext, scrape: ScrapeListener, opened: OpenedListener[]): Promise<void> {
  const server = scrapeServer(scrape.handler);
  ctx.teardown.push(() => close(server));
  const address = await listen(server, SCRAPE_SECTION, scrape.host, scrape.port);
  ctx.log.info({ event: 'listener.open', section: SCRAPE_SECTION, role: 'routes', bind: address.address, port: address.port }, 'listener.open');
  opened.push({ surface: 'Telemetry', role: 'routes', section: SCRAPE_SECTION, address });
}

/** The certificates of every TLS socket planned, keyed by section of the profile; refused as startup refuses. */
function readCertificates(ctx: ListenerContext, planned: readonly Listener[]): Map<string, ServerCertificate> {
  if (!planned.some((listener) => listener.role === 'tls')) return new Map();
  const now = Date.now();
  const { certificates, problems } = readServerCertificates(ctx.config, ctx.env, now);
  if (problems.length > 0) {
    throw new AppError('E_CONFIG_INVALID', { message: problems.map(formatProblem).join('\n'), details: { problems: problems.length } });
  }
  logCertificateExpiry(ctx.log, certificates, now);
  return new Map(certificates.map((certificate) => [certificate.section, certificate]));
}

function profilesOf(config: Config, surface: ListenerSurface): Config['McpEndpoint']['Https']['Endpoints'] {
  return config[surface].Https.Endpoints;
}

async function serverFor(
  ctx: ListenerContext,
  listener: Listener,
  handlerOf: (surface: ListenerSurface) => Promise<SurfaceHandler>,
  certificates: Map<string, ServerCertificate>,
  boundPorts: ReadonlyMap<string, number>,
): Promise<Server> {
  const profiles = profilesOf(ctx.config, listener.surface);
  if (listener.role === 'redirect') {
    // listenersOf plans a surface's TLS sockets before its redirect listener, so their ports are known here.
    return createRedirectListener(
      profiles.map((profile, index) => ({ domain: profile.Domain, port: boundPorts.get(`${listener.surface}:${index}`) ?? profile.Port })),
      { log: ctx.log, surface: TELEMETRY_SURFACE[listener.surface] },
    );
  }
  const handler = await handlerOf(listener.surface);
  if (listener.role === 'routes') return clearTextServer(handler);
  const served = listener.profiles.map((index) => {
    const certificate = certificates.get(`${listener.surface}:Https:Endpoints:${index}`);
    // readServerCertificates answers every profile of a planned socket, or problems (refused above).
    if (certificate === undefined) throw new AppError('E_INTERNAL', { message: `no certificate was read for ${listener.surface}:Https:Endpoints:${index}` });
    return { domain: certificate.domain, key: certificate.key, chain: certificate.chain, minVersion: certificate.minVersion };
  });
  const first = profiles[listener.profiles[0] ?? 0];
  return createTlsServer(handler, {
    profiles: served,
    protocols: (first?.HttpProtocols ?? ['Http1', 'Http2']).filter((p): p is 'Http1' | 'Http2' => p !== 'Http3'),
    requestClientCertificate: listener.surface === 'McpEndpoint' && ctx.config.McpEndpoint.ClientCertificateProfiles.length > 0,
    limits: ctx.config[listener.surface].Connections,
  });
}

/** One handler per surface; discovery and key sets are read now, so the first token after boot does not wait. */
async function surfaceHandlerOf(ctx: ListenerContext, surface: ListenerSurface): Promise<SurfaceHandler> {
  const { config, log, supervisor } = ctx;
  if (surface === 'HealthEndpoints') return healthHandler(ctx.readiness, hostGuardOf(config, 'HealthEndpoints', log));
  const authenticatorFor = async (kind: 'mcp' | 'admin', entries: Config['McpEndpoint']['Authentication']) => {
    const [{ createKeySets }, { serversOf }, { createAuthenticator }] = await Promise.all([
      import('../http/auth/oauth/key-sets.ts'),
      import('../http/auth/oauth/entries.ts'),
      import('../http/auth/authenticate.ts'),
    ]);
    const keySets = createKeySets({ log });
    keySets.warm(serversOf(entries));
    return createAuthenticator(kind, entries, { log, env: ctx.env, claimJti: replayClaimer(supervisor.ref(REPLAY_GUARD_ID)), keySets });
  };
  if (surface === 'McpEndpoint') {
    const [{ createMcpSurface }, { createClientCertificateCheck }] = await Promise.all([
      import('../http/mcp/mcp-listener.ts'),
      import('../http/tls/client-certificates.ts'),
    ]);
    const profiles = config.McpEndpoint.ClientCertificateProfiles;
    return createMcpSurface({
      config,
      log,
      version: ctx.version,
      readiness: ctx.readiness,
      queryPool: ctx.pools.query,
      parsePool: ctx.pools.downloads,
      actor: (id) => supervisor.ref(id),
      authenticate: await authenticatorFor('mcp', config.McpEndpoint.Authentication),
      clientCertificates: profiles.length === 0 ? null : createClientCertificateCheck(profiles, { log, env: ctx.env }),
    });
  }
  const { createAdminSurface } = await import('../http/admin/admin-listener.ts');
  return createAdminSurface({
    config,
    log,
    version: ctx.version,
    actor: (id) => supervisor.ref(id),
    queryPool: ctx.pools.query,
    cursorKey: ctx.cursorKey,
    authenticate: await authenticatorFor('admin', config.AdminEndpoint.Authentication),
  });
}
