/**
 * One-for-one supervision of actors on host threads.
 *
 * Starts children in order (each waits for `started` or its first failure),
 * restarts a child that ended according to its restart type with exponential
 * backoff and jitter, gives a child up when it restarts too often (readiness
 * turns false; a full disk never counts towards that), terminates host threads whose heartbeats stop, and stops
 * everything in reverse order within a deadline.
 *
 * Every start, exit, restart, give-up and hang is one log line (events.ts);
 * each restart also adds one to `mailcairn.supervisor.restarts`, by actor
 * and the reason its previous incarnation ended (the code of the log line).
 * Importable from service/ (app.ts), benches and tests.
 */
import type { Clock, Random } from '../clock.ts';
import { systemClock, mathRandom } from '../clock.ts';
import type { Logger } from '../log.ts';
import { HostThread, type HostEndReason } from '../host/host-thread.ts';
import type { HostData } from '../host/host-data.ts';
import type { FromHost } from '../protocol/envelope.ts';
import { actorRef, type ActorId, type ActorRef, type AnyProtocol, type Protocol } from '../ref.ts';
import { Router } from '../router.ts';
import { recordForwarded } from '../telemetry/forwarded.ts';
import type { TelemetrySettings } from '../telemetry/settings.ts';
import { attemptAfterExit, backoffDelay } from './backoff.ts';
import { ChildSpec, type ChildSpecInput } from './child-spec.ts';
import { logEvent, logHostExit } from './events.ts';
import { counter } from '../telemetry/instruments.ts';
import { exceedsIntensity, recordRestart, type RestartHistory } from './intensity.ts';
import { PlacementTable } from './placement.ts';
import { WatchdogPolicy, isHung } from './watchdog.ts';

export type ChildState = 'starting' | 'running' | 'backoff' | 'stopping' | 'stopped' | 'given-up';

type Child = {
  spec: ChildSpec;
  state: ChildState;
  incarnation: number;
  host: HostThread | null;
  restarts: number;
  attempt: number;
  history: RestartHistory;
  startedAt: number | null;
  lastReason: string;
  timer: NodeJS.Timeout | null;
  waiters: Array<() => void>;
};

export type ChildStatus = { id: string; state: ChildState; restarts: number; restart: ChildSpec['restart'] };
export type SupervisorHealth = { healthy: boolean; givenUp: string[]; children: ChildStatus[]; threads: number };

export type SupervisorOptions = {
  log: Logger;
  clock?: Clock;
  random?: Random;
  watchdog?: Partial<WatchdogPolicy>;
  hostLogLevel?: HostData['logLevel'];
  /** Host threads' log lines go here instead of fd 1 (tests that read every line). */
  hostLogSink?: (line: string) => void;
  /** What host threads install (their own tracer, metrics forwarded here); null or absent: nothing, telemetry is off. */
  telemetry?: TelemetrySettings | null;
};

export class Supervisor {
  readonly router = new Router();
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly random: Random;
  private readonly watchdog: WatchdogPolicy;
  private readonly children = new Map<string, Child>();
  private readonly placement: PlacementTable;
  private readonly watchdogTimer: NodeJS.Timeout;
  private hostSeq = 0;
  private stopping = false;

  constructor(options: SupervisorOptions) {
    this.log = options.log.child({ component: 'supervisor' });
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? mathRandom;
    this.watchdog = WatchdogPolicy.parse(options.watchdog ?? {});
    const hostLogLevel = options.hostLogLevel ?? 'info';
    this.placement = new PlacementTable((group, capacity, resourceLimits) => {
      this.hostSeq += 1;
      return new HostThread({
        hostId: `host-${this.hostSeq}`,
        group,
        capacity,
        heartbeatMs: this.watchdog.heartbeatMs,
        logLevel: hostLogLevel,
        telemetry: options.telemetry ?? null,
        ...(options.hostLogSink ? { logSink: options.hostLogSink } : {}),
        ...(resourceLimits ? { resourceLimits } : {}),
        events: { envelope: (host, env) => this.onEnvelope(host, env), ended: (host, reason, code) => this.onHostEnded(host, reason, code) },
        log: options.log,
      });
    });
    this.watchdogTimer = setInterval(() => this.checkHeartbeats(), this.watchdog.heartbeatMs);
    this.watchdogTimer.unref();
  }

  /** Start children in order; each waits for its start (or first failure) before the next. */
  async start(specs: readonly ChildSpecInput[]): Promise<void> {
    const parsed = specs.map((s) => ChildSpec.parse(s));
    for (const spec of parsed) if (this.children.has(spec.id)) throw new Error(`duplicate child id ${spec.id}`);
    for (const spec of parsed) await this.startChild(spec);
  }

  async startChild(input: ChildSpecInput): Promise<void> {
    const spec = ChildSpec.parse(input);
    if (this.stopping) return;
    const child: Child = {
      spec,
      state: 'starting',
      incarnation: 0,
      host: null,
      restarts: 0,
      attempt: 0,
      history: [],
      startedAt: null,
      lastReason: 'initial',
      timer: null,
      waiters: [],
    };
    this.children.set(spec.id, child);
    await new Promise<void>((resolve) => {
      child.waiters.push(resolve);
      this.launch(child);
    });
  }

  /** A ref typed by the protocol its id names (a plain string: any message, replies unknown unless parsed). */
  ref<P extends Protocol = AnyProtocol>(id: ActorId<P>): ActorRef<P> {
    return actorRef(this.router, id);
  }

  health(): SupervisorHealth {
    const children = [...this.children.values()].map((c) => ({ id: c.spec.id, state: c.state, restarts: c.restarts, restart: c.spec.restart }));
    const givenUp = children.filter((c) => c.state === 'given-up').map((c) => c.id);
    const threads = this.placement.all().filter((h) => h.alive).length;
    return { healthy: !this.stopping && givenUp.length === 0, givenUp, children, threads };
  }

  /**
   * Stop in reverse start order. Neighbours in one shared placement group
   * (e.g. every account's sync actor) are peers and stop together; each
   * child gets its `shutdownMs`, and the whole stop at most `deadlineMs`.
   */
  async stop(deadlineMs = 8_000): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    clearInterval(this.watchdogTimer);
    const until = this.clock.now() + deadlineMs;
    const order = [...this.children.values()].reverse();
    let i = 0;
    while (i < order.length) {
      const tier = [order[i]!];
      const group = groupOf(order[i]!);
      while (group !== null && i + tier.length < order.length && groupOf(order[i + tier.length]!) === group) tier.push(order[i + tier.length]!);
      i += tier.length;
      await Promise.all(tier.map((child) => this.stopChild(child, Math.max(0, until - this.clock.now()))));
    }
    await Promise.all(this.placement.all().map((host) => host.terminate('shutdown')));
  }

  private async stopChild(child: Child, budgetMs: number): Promise<void> {
    if (child.timer) clearTimeout(child.timer);
    child.timer = null;
    if (child.state !== 'running' && child.state !== 'starting') {
      if (child.state === 'backoff') child.state = 'stopped';
      return;
    }
    child.state = 'stopping';
    const host = child.host;
    const stopped = new Promise<void>((resolve) => child.waiters.push(resolve));
    host?.post({ kind: 'stop', actor: child.spec.id });
    const timeout = Math.min(child.spec.shutdownMs, budgetMs);
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<'expired'>((resolve) => {
      timer = setTimeout(() => resolve('expired'), timeout);
    });
    const outcome = await Promise.race([stopped, expired]);
    clearTimeout(timer);
    if (outcome !== 'expired' || child.state !== 'stopping') return;
    // Did not stop in time: a thread of its own is ended; on a shared thread it is abandoned to the final termination.
    this.ended(child, 'E_ACTOR_TIMEOUT', false);
    if (host && child.spec.placement.kind === 'dedicated') await host.terminate('shutdown');
  }

  private launch(child: Child): void {
    child.incarnation += 1;
    child.state = 'starting';
    child.startedAt = null;
    const host = this.placement.hostFor(child.spec);
    host.actors.add(child.spec.id);
    child.host = host;
    const incarnation = child.incarnation;
    child.timer = setTimeout(() => {
      if (child.state === 'starting' && child.incarnation === incarnation) {
        host.post({ kind: 'stop', actor: child.spec.id });
        this.ended(child, 'E_ACTOR_START_FAILED', false);
      }
    }, child.spec.startTimeoutMs);
    host.post({ kind: 'start', actor: child.spec.id, incarnation, entry: child.spec.entry, config: child.spec.config ?? null });
  }

  private onEnvelope(host: HostThread, envelope: FromHost): void {
    switch (envelope.kind) {
      case 'heartbeat':
        return;
      case 'reply':
      case 'processed':
      case 'tell':
      case 'ask':
        this.router.onEnvelope(host, envelope);
        return;
      case 'measurements':
        recordForwarded(envelope.batch, this.log);
        return;
    }
    const child = this.children.get(envelope.actor);
    if (!child || child.incarnation !== envelope.incarnation || child.host !== host) {
      // A late report from an earlier incarnation: make sure nothing of it keeps running.
      if (envelope.kind === 'started') host.post({ kind: 'stop', actor: envelope.actor });
      return;
    }
    switch (envelope.kind) {
      case 'started':
        if (child.timer) clearTimeout(child.timer);
        child.timer = null;
        if (child.state !== 'starting') return;
        child.state = 'running';
        child.startedAt = this.clock.now();
        this.router.attach(child.spec.id, host, child.spec.mailboxCapacity);
        logEvent(this.log, 'actor.start', {
          actor: child.spec.id,
          reason: child.lastReason,
          restarts: child.restarts,
          nextDelayMs: null,
          thread: host.threadId,
        });
        this.wake(child);
        return;
      case 'crashed':
        this.ended(child, envelope.error.code, false);
        return;
      case 'exited':
        // stopSelf is deliberate whatever its reason (a refused mailbox login says `E_IMAP_AUTH`):
        // a transient actor stays down until an operator acts; the reason still reaches the log.
        this.ended(child, envelope.reason, true, envelope.reason === 'normal' ? 'info' : 'warn');
        return;
      case 'stopped':
        this.ended(child, 'shutdown', true);
        return;
    }
  }

  private onHostEnded(host: HostThread, reason: HostEndReason, exitCode: number): void {
    this.placement.remove(host);
    logHostExit(this.log, { host: host.hostId, thread: host.threadId, reason, exitCode, actors: host.actors.size });
    for (const id of host.actors) {
      const child = this.children.get(id);
      if (!child || child.host !== host) continue;
      if (reason === 'E_ACTOR_HUNG') {
        logEvent(this.log, 'actor.hang', { actor: id, reason, restarts: child.restarts, nextDelayMs: null, thread: host.threadId });
      }
      this.ended(child, reason, false);
    }
    host.actors.clear();
  }

  private checkHeartbeats(): void {
    const now = Date.now(); // heartbeats are stamped with wall time by the host thread
    for (const host of this.placement.all()) {
      if (host.alive && host.lastHeartbeat !== null && isHung(this.watchdog, host.lastHeartbeat, now)) void host.terminate('E_ACTOR_HUNG');
    }
  }

  /** The child's current incarnation ended, for `reason`; decide what happens next. */
  private ended(child: Child, reason: string, normal: boolean, level: 'info' | 'warn' = normal ? 'info' : 'warn'): void {
    const id = child.spec.id;
    const host = child.host;
    const now = this.clock.now();
    const uptimeMs = child.startedAt === null ? 0 : now - child.startedAt;
    if (child.timer) clearTimeout(child.timer);
    child.timer = null;
    this.router.detach(id);
    host?.actors.delete(id);
    child.host = null;
    // A dedicated thread belongs to one incarnation: a restart gets a clean thread (and heap).
    if (host?.alive && child.spec.placement.kind === 'dedicated') void host.terminate('shutdown');
    const base = { actor: id, restarts: child.restarts, thread: host?.threadId ?? null, uptimeMs };

    if (child.state === 'stopping' || this.stopping) {
      child.state = 'stopped';
      logEvent(this.log, 'actor.exit', { ...base, reason: normal ? 'shutdown' : reason, nextDelayMs: null }, normal ? 'info' : 'warn');
      return this.wake(child);
    }
    const restart = child.spec.restart === 'permanent' || (child.spec.restart === 'transient' && !normal);
    if (!restart) {
      child.state = 'stopped';
      logEvent(this.log, 'actor.exit', { ...base, reason, nextDelayMs: null }, level);
      return this.wake(child);
    }
    // A full disk is waited out, not a sign that restarting does not help: it never counts towards giving up
    // (docs/operations.md "A full disk"); the back-off still grows, so the restarts stay slow.
    if (!OUTSIDE_CONDITIONS.has(reason)) child.history = recordRestart(child.spec.intensity, child.history, now);
    if (exceedsIntensity(child.spec.intensity, child.history, now)) {
      child.state = 'given-up';
      logEvent(this.log, 'actor.exit', { ...base, reason, nextDelayMs: null });
      logEvent(this.log, 'actor.give-up', { ...base, reason, nextDelayMs: null });
      return this.wake(child);
    }
    child.attempt = attemptAfterExit(child.spec.backoff, child.attempt, uptimeMs);
    const delay = backoffDelay(child.spec.backoff, child.attempt, this.random);
    child.state = 'backoff';
    child.lastReason = reason;
    logEvent(this.log, 'actor.exit', { ...base, reason, nextDelayMs: delay });
    child.timer = setTimeout(() => {
      child.timer = null;
      if (child.state !== 'backoff' || this.stopping) return;
      child.restarts += 1;
      logEvent(this.log, 'actor.restart', { actor: id, reason, restarts: child.restarts, nextDelayMs: null });
      // The child id names an actor kind and at most a configured account id (`imap-sync:<account>`): never an address.
      counter('supervisorRestarts').add(1, { 'mailcairn.actor': id, 'mailcairn.reason': reason });
      this.launch(child);
    }, delay);
    this.wake(child);
  }

  private wake(child: Child): void {
    const waiters = child.waiters.splice(0);
    for (const w of waiters) w();
  }
}

/** Reasons a child ended that are conditions outside the service, restarted with back-off but never given up for. */
const OUTSIDE_CONDITIONS: ReadonlySet<string> = new Set(['E_STORE_FULL']);

function groupOf(child: Child): string | null {
  return child.spec.placement.kind === 'shared' ? child.spec.placement.group : null;
}
