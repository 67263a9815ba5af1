/**
 * A piscina pool of stateless workers behind the same `ask` as an actor.
 * Bounded like a mailbox: at most `maxQueue` tasks wait, then asks are
 * refused with E_ACTOR_MAILBOX_FULL. Every ask carries a deadline; at the
 * deadline the task is aborted and the ask rejected with E_ACTOR_TIMEOUT.
 * Pool tasks that do async I/O should pass `atomics: 'disabled'` so the
 * thread is not parked between tasks.
 *
 * A thread that dies outside a task (out of memory while loading an index
 * between searches, an error thrown from a timer) is a crash like an
 * actor's: piscina replaces the thread, and the pool logs `pool.thread-failed`
 * at error level. Without that listener piscina emits the failure as an
 * `'error'` event nobody handles, which ends the whole process.
 *
 * `startOnFirstAsk`: no thread (and no piscina) until the first ask, then
 * `minThreads` are kept as usual. For a pool most starts never use (the
 * query pool of a one-shot mirror): a pool thread is an isolate of its own,
 * ≈ 20 MiB resident once its task's modules are loaded.
 *
 * Importable from anywhere (the query and parse pools are created in app.ts).
 */
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { ResourceLimits } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { AppError, fromPayload } from '../errors.ts';
import { createLogger, type Logger } from '../log.ts';
import { moduleUrl } from '../module-url.ts';
import { applyV8Settings } from '../v8-settings.ts';
import { type Meta, Reply, type ToHost } from '../protocol/envelope.ts';
import { encodeToHost } from '../protocol/wire.ts';
import { type AskOptions, parseReply, type AnyProtocol, type Askable, type Protocol } from '../ref.ts';
import { DEFAULT_ASK_MS } from '../router.ts';
import { recordHandled, tracedAsk } from '../telemetry/actor-spans.ts';
import type { PoolData } from './pool-data.ts';
import { splitAnswer } from './handled.ts';

declare const ANSWERS: unique symbol;

/**
 * A pool task's module URL, carrying (as types only) the protocol the task
 * answers and the configuration it is created with, so the pool's ref and
 * its `config` are typed by it.
 */
export type PoolEntry<P extends Protocol = AnyProtocol, Config = undefined> = URL & { readonly [ANSWERS]?: { protocol: P; config: Config } };

export type PoolOptions<P extends Protocol = AnyProtocol, Config = undefined> = {
  id: string;
  /** Module whose default export is `definePoolTask(...)`. */
  entry: PoolEntry<P, Config>;
  minThreads?: number;
  maxThreads?: number;
  /** Asks that may wait for a thread beyond those running; more are refused. */
  maxQueue?: number;
  idleTimeoutMs?: number;
  atomics?: 'sync' | 'async' | 'disabled';
  /** Start the threads (`minThreads` of them) on the first ask rather than now. */
  startOnFirstAsk?: boolean;
  /** V8 heap limits of each thread (node:worker_threads `resourceLimits`). */
  resourceLimits?: ResourceLimits;
  /** Level of the pool threads' loggers (Logging:Level); `info` when not given. */
  logLevel?: PoolData['logLevel'];
  /** Where a thread's death outside a task is logged; a logger of `logLevel` on fd 1 when not given. */
  log?: Logger;
} & (undefined extends Config
  ? { config?: Config }
  : {
      /**
       * The task's configuration, handed to every thread once, at creation
       * (`workerData`); the task parses it again (`poolConfig`), since it
       * crossed a thread boundary.
       */
      config: Config;
    });

export type PoolRef<P extends Protocol = AnyProtocol> = Askable<P> & { close(): Promise<void>; readonly threads: number };

const sourceTask = moduleUrl('./source-task.mjs', import.meta.url);

export function createPool<P extends Protocol = AnyProtocol, Config = undefined>(options: PoolOptions<P, Config>): PoolRef<P> {
  const fromSource = options.entry.pathname.endsWith('.ts');
  const maxThreads = options.maxThreads ?? Math.max(1, availableParallelism() - 1);
  const log = options.log ?? createLogger({ level: options.logLevel ?? 'info' });
  let piscina: Piscina | null = null;
  let closed = false;
  const started = (): Piscina => {
    if (piscina !== null) return piscina;
    applyV8Settings();
    piscina = new Piscina({
      filename: fileURLToPath(fromSource ? sourceTask : options.entry),
      workerData: {
        entry: options.entry.href,
        logLevel: options.logLevel ?? 'info',
        config: options.config,
      } satisfies PoolData,
      minThreads: Math.min(options.minThreads ?? 1, maxThreads),
      maxThreads,
      idleTimeout: options.idleTimeoutMs ?? 30_000,
      atomics: options.atomics ?? 'sync',
      ...(options.resourceLimits ? { resourceLimits: options.resourceLimits } : {}),
    });
    piscina.on('error', (err: unknown) => {
      log.error({ err, event: 'pool.thread-failed', pool: options.id }, 'pool.thread-failed');
    });
    return piscina;
  };
  if (options.startOnFirstAsk !== true) started();
  // The bound is ours, counted from ask to answer: piscina's own queue limit
  // also lends capacity to busy threads, which makes it inexact.
  const capacity = maxThreads + (options.maxQueue ?? maxThreads * 64);
  let inFlight = 0;
  let seq = 0;

  return {
    id: options.id,
    get threads() {
      return piscina?.threads.length ?? 0;
    },
    async ask(msg, askOptions = {}) {
      if (inFlight >= capacity) throw new AppError('E_ACTOR_MAILBOX_FULL', { details: { actor: options.id, capacity } });
      return tracedAsk(options.id, askOptions.meta, (meta) => run(msg, askOptions, meta), askOptions.parent);
    },
    close: async () => {
      closed = true;
      await piscina?.close({ force: true });
    },
  };

  async function run<R>(msg: unknown, askOptions: AskOptions<R>, meta: Meta | undefined): Promise<R> {
    const deadlineMs = askOptions.deadlineMs ?? DEFAULT_ASK_MS;
    seq += 1;
    inFlight += 1;
    const envelope: ToHost = {
      kind: 'ask',
      id: `p${seq.toString(36)}`,
      to: options.id,
      msg,
      deadline: Date.now() + deadlineMs,
      ...(meta ? { meta } : {}),
    };
    // A closed pool that never started answers as a closed piscina does.
    if (closed && piscina === null) {
      inFlight -= 1;
      throw new AppError('E_ACTOR_DOWN');
    }
    const pool = started();
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), deadlineMs);
    let raw: unknown;
    try {
      raw = await pool.run(encodeToHost(envelope), {
        signal: abort.signal,
        ...(askOptions.transfer ? { transferList: askOptions.transfer as never } : {}),
      });
    } catch (err) {
      throw classifyPoolFailure(err, abort.signal.aborted);
    } finally {
      clearTimeout(timer);
      inFlight -= 1;
    }
    const answer = splitAnswer(raw);
    const reply = Reply.safeParse(answer.reply);
    if (!reply.success) throw new AppError('E_PROTOCOL_INVALID');
    // The thread's `handle <pool>` span, recorded here from the times it reports (handled.ts).
    if (meta?.trace !== undefined && answer.handled !== undefined) {
      recordHandled(options.id, meta.trace, answer.handled, reply.data.ok ? undefined : reply.data.error);
    }
    if (!reply.data.ok) throw fromPayload(reply.data.error);
    return parseReply(reply.data.value, askOptions.reply);
  }
}

/** piscina's failures mapped onto the codes an actor ask produces. */
function classifyPoolFailure(err: unknown, aborted: boolean): AppError {
  if (aborted) return new AppError('E_ACTOR_TIMEOUT');
  // The thread died under the task (exit, out of memory) or the pool closed.
  return new AppError('E_ACTOR_DOWN', { cause: err });
}
