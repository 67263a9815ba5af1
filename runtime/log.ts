/**
 * The one pino root logger per thread (main thread, actor host threads,
 * pool threads). JSON lines to stdout by default, pretty-printed when stdout
 * is a terminal (Logging:Format "Auto").
 *
 * Privacy, whatever a caller passes (ARCHITECTURE.md section 5):
 * - every field whose name is on the list in `redact.ts` is censored at any
 *   depth, so a subject, address, token or secret cannot reach a line;
 * - every error, under `err` or anywhere else, or given in place of the
 *   fields, is reduced to its class, code, frames and causes
 *   (log-error.ts): its message may quote input, and pino would otherwise
 *   copy it into the line and into `msg`.
 * Both happen in the `logMethod` hook, before pino reads the arguments (it
 * takes `msg` from an error's message when none is given), and for the
 * fields bound by `child()`. Messages are constant strings; data goes in
 * fields.
 *
 * Importable from anywhere; actors log through `ctx.log`, a child of this.
 */
import { pino, type DestinationStream, type LevelWithSilent, type LogFn, type Logger } from 'pino';
import { isError, reduceError } from './log-error.ts';
import { redactedKeys } from './redact.ts';

export type { Logger };
export type LogLevel = LevelWithSilent;
export type LogFormat = 'Auto' | 'Json' | 'Pretty';

export const CENSORED = '[redacted]';
const censoredNames = new Set(redactedKeys.map((k) => k.toLowerCase()));
const MAX_DEPTH = 8;

/** pino's error key: what is under it is an error whatever its type (a thrown string quotes as much as a message). */
const ERROR_KEY = 'err';

/** Copy of `value` with every denied field replaced and every error reduced, at any depth. */
export function censor(value: unknown, depth = 0): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (isError(value)) return reduceError(value);
  if (depth >= MAX_DEPTH) return '[depth]';
  if (Array.isArray(value)) return value.map((v) => censor(v, depth + 1));
  if (ArrayBuffer.isView(value)) return `[${value.byteLength} bytes]`;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    if (censoredNames.has(key.toLowerCase())) out[key] = CENSORED;
    else if (key === ERROR_KEY && v !== undefined) out[key] = reduceError(v);
    else out[key] = censor(v, depth + 1);
  }
  return out;
}

/**
 * Every argument of a log call censored. An error given in place of the
 * fields goes under `err`: pino would make its message the line's `msg`.
 */
function censorCall(this: Logger, args: Parameters<LogFn>, method: LogFn): void {
  const [first, ...rest] = args as unknown[];
  const fields = isError(first) ? { [ERROR_KEY]: first } : first;
  method.apply(this, [censor(fields), ...rest.map((arg) => censor(arg))] as Parameters<LogFn>);
}

export type LoggerOptions = {
  level?: LogLevel;
  format?: LogFormat;
  /** Where lines go; defaults to a synchronous write to fd 1 (safe from worker threads). */
  destination?: DestinationStream;
  base?: Record<string, unknown>;
};

export function createLogger(options: LoggerOptions = {}): Logger {
  const pretty = options.destination === undefined && (options.format === 'Pretty' || (options.format !== 'Json' && process.stdout.isTTY === true));
  const common = {
    level: options.level ?? 'info',
    base: censor(options.base ?? { pid: process.pid }) as Record<string, unknown>,
    timestamp: pino.stdTimeFunctions.isoTime,
    hooks: { logMethod: censorCall },
  };
  const logger = pretty
    ? pino({ ...common, transport: { target: 'pino-pretty', options: { colorize: true, sync: true } } })
    : pino(common, options.destination ?? pino.destination({ fd: 1, sync: true }));
  return censorBindings(logger);
}

/**
 * `child()` and `setBindings()` fields censored too. Not a bindings
 * formatter: pino applies that to the root's base only, never to a
 * child's. Children are created from the root's prototype, so they inherit these.
 */
function censorBindings(logger: Logger): Logger {
  const { child, setBindings } = logger;
  logger.child = function (this: Logger, bindings, childOptions) {
    return child.call(this, censor(bindings) as typeof bindings, childOptions);
  } as Logger['child'];
  logger.setBindings = function (this: Logger, bindings) {
    setBindings.call(this, censor(bindings) as typeof bindings);
  };
  return logger;
}
