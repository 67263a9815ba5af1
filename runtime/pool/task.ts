/**
 * How a stateless pool task is written (MIME parsing, text extraction,
 * read-only queries): `export default definePoolTask({...})` in its module.
 * The returned function is what piscina calls; it parses the envelope and the
 * message with zod, runs the handler, and answers with a Reply envelope, so
 * a pool looks to callers exactly like an actor (`ask`).
 *
 * A handler that throws an AppError answers with it; anything else is logged
 * here (by class, code and frames: log.ts) and answered as E_INTERNAL (a
 * pool thread has no state to restart, and piscina replaces a thread that
 * dies). The thread logs at the level createPool was given (Logging:Level).
 *
 * What a task needs beyond its messages (the query pool's store slice) is
 * handed over once, when the pool is created (`createPool({ config })`), and
 * read in the thread with `poolConfig(schema)`.
 */
import { move, transferableSymbol, valueSymbol, workerData } from 'piscina';
import type { z } from 'zod';
import { isWithTransfer, TRANSFER, type WithTransfer } from '../actor.ts';
import { AppError, toPayload } from '../errors.ts';
import { createLogger, type Logger, type LogLevel } from '../log.ts';
import type { Reply, ToHost } from '../protocol/envelope.ts';
import { decodeToHost } from '../protocol/wire.ts';
import { handleSpan } from '../telemetry/actor-spans.ts';
import { PoolData } from './pool-data.ts';

export type PoolTaskDefinition<Msg> = {
  readonly name: string;
  readonly messages: z.ZodType<Msg>;
  handle(msg: Msg, deadline: number): unknown | Promise<unknown>;
};

export type PoolTaskFunction = (raw: unknown) => Promise<unknown>;

/**
 * The configuration this pool thread was created with, parsed with `schema`
 * on first use (workerData crossed a thread boundary, like any message). A
 * configuration that fails is logged once and every use answers
 * E_CONFIG_INVALID: the composition root built it wrong.
 */
export function poolConfig<Config>(name: string, schema: z.ZodType<Config>): () => Config {
  let parsed: z.ZodSafeParseResult<Config> | null = null;
  return () => {
    if (parsed === null) {
      const data: unknown = workerData;
      parsed = schema.safeParse(typeof data === 'object' && data !== null && 'config' in data ? data.config : undefined);
      if (!parsed.success) {
        const issues = parsed.error.issues.map((i) => i.path.join(':'));
        createLogger({ level: poolLogLevel(), format: 'Json' })
          .child({ pool: name })
          .error({ event: 'pool.config-invalid', issues }, 'pool config failed validation');
      }
    }
    if (!parsed.success) throw new AppError('E_CONFIG_INVALID');
    return parsed.data;
  };
}

export function definePoolTask<Msg>(definition: PoolTaskDefinition<Msg>): PoolTaskFunction {
  const log = createLogger({ level: poolLogLevel(), format: 'Json' }).child({ pool: definition.name });
  const tracing = poolTracing(log);
  return async (raw) => {
    if (tracing !== null) await tracing;
    const envelope = decodeToHost(raw);
    if (envelope === null || envelope.kind !== 'ask') {
      log.error({ event: 'protocol.invalid' }, 'pool task envelope failed validation');
      return answer({ ok: false, error: toPayload(new AppError('E_PROTOCOL_INVALID')) });
    }
    // Inside the asker's trace when it carries one: the `handle <pool>` span (telemetry/actor-spans.ts).
    const span = handleSpan(envelope.to, 'ask', envelope.meta);
    if (span === null) return handleAsk(envelope);
    return span.run(async () => {
      const reply = await handleAsk(envelope);
      span.end(failureOf(reply));
      return reply;
    });
  };

  async function handleAsk(envelope: Extract<ToHost, { kind: 'ask' }>): Promise<unknown> {
    const { deadline, msg, id } = envelope;
    if (deadline <= Date.now()) return answer({ ok: false, error: toPayload(new AppError('E_ACTOR_TIMEOUT')) });
    const parsed = definition.messages.safeParse(msg);
    if (!parsed.success) {
      log.warn({ event: 'protocol.invalid', envelope: id }, 'message failed the pool protocol');
      return answer({ ok: false, error: toPayload(new AppError('E_PROTOCOL_INVALID')) });
    }
    try {
      const result = await definition.handle(parsed.data, deadline);
      if (isWithTransfer(result)) return answer({ ok: true, value: result.value }, result);
      return answer({ ok: true, value: result });
    } catch (err) {
      if (!(err instanceof AppError)) log.error({ err, event: 'pool.task-threw', envelope: id }, 'pool task threw');
      return answer({ ok: false, error: toPayload(err) });
    }
  }
}

/** The error an answer carries (its code is what a span records), or undefined for a success. */
function failureOf(answered: unknown): { code: string } | undefined {
  const reply = answered as Partial<Reply> | null;
  return reply !== null && reply.ok === false && reply.error ? { code: reply.error.code } : undefined;
}

/**
 * With traces on, the thread's own tracer provider (as an actor host
 * thread's: telemetry/sdk-tracing.ts), loaded with a dynamic `import()` so a
 * thread with telemetry off loads none of the SDK. Tasks wait for it once;
 * a provider that cannot be installed is logged and the tasks run untraced.
 * Spans still batched when piscina ends an idle thread may be lost (the
 * batch waits at most a second).
 */
function poolTracing(log: Logger): Promise<void> | null {
  const otlp = workerData === undefined || workerData === null ? null : (PoolData.parse(workerData).telemetry?.traces.otlp ?? null);
  if (otlp === null) return null;
  const settings = PoolData.parse(workerData).telemetry!;
  return (async () => {
    try {
      const [tracing, diagnostics, { version }] = await Promise.all([
        import('../telemetry/sdk-tracing.ts'),
        import('../telemetry/diagnostics.ts'),
        import('../version.ts'),
      ]);
      diagnostics.routeDiagnostics(log);
      await tracing.installTracing(otlp, tracing.telemetryResource(settings.serviceName, version), POOL_SPAN_DELAY_MS);
    } catch (err) {
      log.error({ err, event: 'telemetry.pool-install-failed' }, 'telemetry.pool-install-failed');
    }
  })();
}

/** A pool thread's spans wait at most this long in their batch: piscina ends idle threads. */
const POOL_SPAN_DELAY_MS = 1_000;

/** The level createPool passed; `info` where no pool loaded the module (a test importing a task's helpers). */
function poolLogLevel(): LogLevel {
  return workerData === undefined || workerData === null ? 'info' : PoolData.parse(workerData).logLevel;
}

function answer(reply: Reply, moved?: WithTransfer<unknown>): unknown {
  if (!moved) return reply;
  // piscina moves the listed buffers back instead of copying them.
  return move({ [transferableSymbol]: moved[TRANSFER], [valueSymbol]: reply } as never);
}
