/**
 * Main-thread handle on one actor host thread: spawns the Worker, parses
 * every envelope it sends (FromHost), keeps its heartbeat time, and turns the
 * way the thread ended into one reason code. Placement and restarts are the
 * supervisor's; this only reports. Importable only from runtime/.
 */
import type { TransferListItem } from 'node:worker_threads';
import type { ResourceLimits, Worker } from 'node:worker_threads';
import type { Code } from '../errors.ts';
import type { Logger } from '../log.ts';
import { moduleUrl } from '../module-url.ts';
import { startWorker } from '../worker-entry.ts';
import type { FromHost, ToHost } from '../protocol/envelope.ts';
import { decodeFromHost, encodeToHost } from '../protocol/wire.ts';
import type { HostData } from './host-data.ts';

export type HostEndReason = Extract<Code, 'E_ACTOR_HUNG' | 'E_ACTOR_OUT_OF_MEMORY' | 'E_ACTOR_EXITED' | 'E_ACTOR_CRASHED'> | 'shutdown';

export type HostEvents = {
  envelope(host: HostThread, envelope: FromHost): void;
  ended(host: HostThread, reason: HostEndReason, exitCode: number): void;
};

const hostEntry = moduleUrl('./host-main.ts', import.meta.url);

export class HostThread {
  readonly hostId: string;
  readonly group: string;
  readonly capacity: number;
  readonly actors = new Set<string>();
  /** Null until the thread's first heartbeat: booting is bounded by the child's start timeout, not the watchdog. */
  lastHeartbeat: number | null = null;
  /** Kept from the start: a Worker reports -1 once it has exited. */
  readonly threadId: number;
  private readonly worker: Worker;
  private endReason: HostEndReason | null = null;
  private ended = false;
  private readonly exitPromise: Promise<void>;

  constructor(args: {
    hostId: string;
    group: string;
    capacity: number;
    heartbeatMs: number;
    logLevel: HostData['logLevel'];
    telemetry: HostData['telemetry'];
    /** Where the thread's log lines go instead of fd 1: whole lines, in order (tests capture them). */
    logSink?: (line: string) => void;
    resourceLimits?: ResourceLimits;
    events: HostEvents;
    log: Logger;
  }) {
    this.hostId = args.hostId;
    this.group = args.group;
    this.capacity = args.capacity;
    const sink = args.logSink;
    const workerData: HostData = {
      hostId: args.hostId,
      heartbeatMs: args.heartbeatMs,
      logLevel: args.logLevel,
      logTo: sink ? 'parent' : 'fd',
      telemetry: args.telemetry,
    };
    this.worker = startWorker(hostEntry, {
      workerData,
      ...(args.resourceLimits ? { resourceLimits: args.resourceLimits } : {}),
      // Workers print through their own pino destination on fd 1, or through their stdout to the sink.
      stdout: sink !== undefined,
      stderr: false,
    });
    if (sink) forwardLines(this.worker.stdout, sink);
    this.threadId = this.worker.threadId;
    this.worker.on('message', (raw: unknown) => {
      const envelope = decodeFromHost(raw);
      if (envelope === null) {
        args.log.error({ event: 'protocol.invalid', host: this.hostId }, 'envelope from a host thread failed validation');
        return;
      }
      if (envelope.kind === 'heartbeat') this.lastHeartbeat = Date.now();
      args.events.envelope(this, envelope);
    });
    this.worker.on('error', (err: Error & { code?: string }) => {
      if (this.endReason === null) this.endReason = err.code === 'ERR_WORKER_OUT_OF_MEMORY' ? 'E_ACTOR_OUT_OF_MEMORY' : 'E_ACTOR_CRASHED';
      if (this.endReason === 'E_ACTOR_CRASHED') args.log.error({ err, event: 'host.uncaught', host: this.hostId }, 'host thread threw outside a handler');
    });
    this.exitPromise = new Promise((resolve) => {
      this.worker.once('exit', (exitCode) => {
        this.ended = true;
        args.events.ended(this, this.endReason ?? 'E_ACTOR_EXITED', exitCode);
        resolve();
      });
    });
  }

  get alive(): boolean {
    return !this.ended;
  }

  post(envelope: ToHost, transferList?: TransferListItem[]): void {
    if (this.ended) return;
    this.worker.postMessage(encodeToHost(envelope), transferList);
  }

  /** End the thread; `reason` is what its actors' exits will report. */
  async terminate(reason: HostEndReason): Promise<void> {
    if (this.endReason === null) this.endReason = reason;
    if (!this.ended) await this.worker.terminate();
    await this.exitPromise;
  }
}

/** Hand a thread's stdout to `sink` a whole line at a time (chunks split lines anywhere). */
function forwardLines(stream: NodeJS.ReadableStream, sink: (line: string) => void): void {
  let pending = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    pending += chunk;
    for (let eol = pending.indexOf('\n'); eol !== -1; eol = pending.indexOf('\n')) {
      sink(pending.slice(0, eol + 1));
      pending = pending.slice(eol + 1);
    }
  });
}
