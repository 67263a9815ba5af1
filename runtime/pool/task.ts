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
import { createLogger, type LogLevel } from '../log.ts';
import type { Reply, ToHost } from '../protocol/envelope.ts';
import { decodeToHost } from '../protocol/wire.ts';
import { epochNow, tracedAnswer } from './handled.ts';
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
  return async (raw) => {
    const envelope = decodeToHost(raw);
    if (envelope === null || envelope.kind !== 'ask') {
      log.error({ event: 'protocol.invalid' }, 'pool task envelope failed validation');
      return answer({ ok: false, error: toPayload(new AppError('E_PROTOCOL_INVALID')) });
    }
    const started = envelope.meta?.trace === undefined ? null : epochNow();
    const { reply, moved } = await handleAsk(envelope);
    // Inside the asker's trace, the asking thread records `handle <pool>` from the times beside the reply (handled.ts).
    return answer(started === null ? reply : tracedAnswer(reply, [started, epochNow()]), moved);
  };

  async function handleAsk(envelope: Extract<ToHost, { kind: 'ask' }>): Promise<Answered> {
    const { deadline, msg, id } = envelope;
    if (deadline <= Date.now()) return { reply: { ok: false, error: toPayload(new AppError('E_ACTOR_TIMEOUT')) } };
    const parsed = definition.messages.safeParse(msg);
    if (!parsed.success) {
      log.warn({ event: 'protocol.invalid', envelope: id }, 'message failed the pool protocol');
      return { reply: { ok: false, error: toPayload(new AppError('E_PROTOCOL_INVALID')) } };
    }
    try {
      const result = await definition.handle(parsed.data, deadline);
      if (isWithTransfer(result)) return { reply: { ok: true, value: result.value }, moved: result };
      return { reply: { ok: true, value: result } };
    } catch (err) {
      if (!(err instanceof AppError)) log.error({ err, event: 'pool.task-threw', envelope: id }, 'pool task threw');
      return { reply: { ok: false, error: toPayload(err) } };
    }
  }
}

/** A task's reply, and the buffers it moves back rather than copies. */
type Answered = { reply: Reply; moved?: WithTransfer<unknown> };

/** The level createPool passed; `info` where no pool loaded the module (a test importing a task's helpers). */
function poolLogLevel(): LogLevel {
  return workerData === undefined || workerData === null ? 'info' : PoolData.parse(workerData).logLevel;
}

function answer(reply: unknown, moved?: WithTransfer<unknown>): unknown {
  if (!moved) return reply;
  // piscina moves the listed buffers back instead of copying them.
  return move({ [transferableSymbol]: moved[TRANSFER], [valueSymbol]: reply } as never);
}
