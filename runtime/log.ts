/**
 * The one pino root logger per thread. JSON lines to stdout by default,
 * pretty-printed when stdout is a terminal (Logging:Format "Auto").
 *
 * Privacy: every field whose name is on the list in `redact.ts` is
 * censored at any depth before the line is written, so a subject, address,
 * token or secret cannot reach a log line by accident, whatever a caller
 * passes. Messages are constant strings; data goes in fields.
 *
 * Importable from anywhere; actors log through `ctx.log`, a child of this.
 */
import { pino, type DestinationStream, type Logger, type LevelWithSilent } from 'pino';
import { redactedKeys } from './redact.ts';

export type { Logger };
export type LogLevel = LevelWithSilent;
export type LogFormat = 'Auto' | 'Json' | 'Pretty';

export const CENSORED = '[redacted]';
const censoredNames = new Set(redactedKeys.map((k) => k.toLowerCase()));
const MAX_DEPTH = 8;

/** Copy of `value` with every denied field replaced, at any depth. */
export function censor(value: unknown, depth = 0): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (value instanceof Error) return value; // pino's err serializer handles errors
  if (depth >= MAX_DEPTH) return '[depth]';
  if (Array.isArray(value)) return value.map((v) => censor(v, depth + 1));
  if (ArrayBuffer.isView(value)) return `[${value.byteLength} bytes]`;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    out[key] = censoredNames.has(key.toLowerCase()) ? CENSORED : censor(v, depth + 1);
  }
  return out;
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
    base: options.base ?? { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: {
      log: (object: Record<string, unknown>) => censor(object) as Record<string, unknown>,
    },
  };
  if (pretty) {
    return pino({ ...common, transport: { target: 'pino-pretty', options: { colorize: true, sync: true } } });
  }
  return pino(common, options.destination ?? pino.destination({ fd: 1, sync: true }));
}
