/**
 * An error as a log line may show it: class and code (error-class.ts), the
 * stack frames without the stack's first line, and the same for each cause
 * and, for an AggregateError, each of its errors. Never a message: messages
 * quote input (a parser's "unexpected token near <subject>", a database's
 * constraint with the value, an SMTP refusal with the address).
 *
 * The stack: V8 writes `<name>: <message>` and then one `at …` line per
 * frame. The header is removed only when it is exactly what V8 wrote (the
 * error's toString, stack formatted lazily on first read); when it is not
 * (the message changed after the stack was read, a stack written by hand),
 * where the message ends cannot be told, and the stack is dropped whole.
 *
 * Importable from anywhere; the logger (log.ts) applies it to every error it
 * is given, so call sites pass errors as they are.
 */
import { types } from 'node:util';
import { classOf, type ErrorClass } from './error-class.ts';

export type LoggedError = ErrorClass & {
  /** Frames only, `at fn (file:line:col)` one a line. */
  readonly stack?: string;
  readonly cause?: LoggedError;
  readonly errors?: readonly LoggedError[];
};

/** Causes followed at most this deep: enough for AppError → driver error → socket error; stops a cycle. */
const MAX_DEPTH = 4;
/** An AggregateError's errors listed at most (one per address tried by a connect, typically). */
const MAX_ERRORS = 8;
const FRAME = /^\s+at \S/;

/** An Error of this realm or of another (a vm context), where `instanceof Error` is false. */
export function isError(value: unknown): value is Error {
  return value instanceof Error || types.isNativeError(value);
}

export function reduceError(err: unknown, depth = 0): LoggedError {
  const reduced: { -readonly [K in keyof LoggedError]: LoggedError[K] } = { ...(read(() => classOf(err)) ?? { type: 'unknown' }) };
  if (!isError(err)) return reduced;
  const stack = frames(err);
  if (stack !== undefined) reduced.stack = stack;
  if (depth >= MAX_DEPTH) return reduced;
  const cause = read(() => err.cause);
  if (cause !== undefined) reduced.cause = reduceError(cause, depth + 1);
  const errors = read(() => (err as { errors?: unknown }).errors);
  if (Array.isArray(errors)) reduced.errors = errors.slice(0, MAX_ERRORS).map((e: unknown) => reduceError(e, depth + 1));
  return reduced;
}

/** The frames of `err.stack` without its header, or undefined when the header cannot be told apart. */
function frames(err: Error): string | undefined {
  const stack = read(() => err.stack);
  const header = read(() => Error.prototype.toString.call(err));
  if (typeof stack !== 'string' || header === undefined || !stack.startsWith(`${header}\n`)) return undefined;
  const lines = stack.slice(header.length + 1).split('\n');
  if (!lines.every((line) => FRAME.test(line))) return undefined;
  return lines.map((line) => line.trim()).join('\n');
}

/** A property read that may throw (a getter, a proxy): a log line never fails for it. */
function read<T>(get: () => T): T | undefined {
  try {
    return get();
  } catch {
    return undefined;
  }
}
