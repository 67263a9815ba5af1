/**
 * OpenTelemetry's own diagnostics (`diag`: a collector that refuses or is
 * down, a dropped batch, a metric collection that failed) as log lines of
 * ours. Only warnings and errors are routed. A line carries the kind of
 * failure (`E…` network code, `http-<status>`, or `other`), never the SDK's
 * text: that may quote a response body, a URL or an attribute value. Each
 * kind is logged at most once a minute, with the count of those suppressed
 * in between, so a collector that stays down does not flood the log.
 *
 * Loaded only with the SDK (sdk.ts, host-sdk.ts).
 */
import { type DiagLogger, DiagLogLevel, diag } from '@opentelemetry/api';
import type { Logger } from '../log.ts';

export const DIAGNOSTIC_WINDOW_MS = 60_000;

/** The kind of a diagnostic, from its text: a network error code, an HTTP status, or `other`. */
export function diagnosticKind(text: string): string {
  const code = /\b(E[A-Z]{3,}(?:_[A-Z]+)*)\b/.exec(text)?.[1];
  if (code !== undefined) return code;
  const status = /\b(?:status(?:\s*code)?|HTTP)\D{0,3}([1-5]\d\d)\b/i.exec(text)?.[1];
  if (status !== undefined) return `http-${status}`;
  if (/timeout|timed out/i.test(text)) return 'timeout';
  return 'other';
}

/** Whether to log a diagnostic of `kind` now, and how many of that kind were suppressed since the last one logged. */
export class DiagnosticLimiter {
  private readonly last = new Map<string, { at: number; suppressed: number }>();
  private readonly windowMs: number;

  constructor(windowMs = DIAGNOSTIC_WINDOW_MS) {
    this.windowMs = windowMs;
  }

  admit(kind: string, now: number): { log: boolean; suppressed: number } {
    const entry = this.last.get(kind);
    if (entry !== undefined && now - entry.at < this.windowMs) {
      entry.suppressed += 1;
      return { log: false, suppressed: 0 };
    }
    this.last.set(kind, { at: now, suppressed: 0 });
    return { log: true, suppressed: entry?.suppressed ?? 0 };
  }
}

function textOf(message: string, args: unknown[]): string {
  const parts = [message];
  for (const arg of args) {
    if (arg instanceof Error) parts.push(`${(arg as { code?: unknown }).code ?? ''} ${arg.message}`);
    else if (typeof arg === 'string') parts.push(arg);
    else if (arg !== null && typeof arg === 'object' && 'code' in arg) parts.push(String((arg as { code: unknown }).code));
  }
  return parts.join(' ');
}

/** Routes `diag` warnings and errors to `log` (events `telemetry.export-failed` and `telemetry.warning`). */
export function routeDiagnostics(log: Logger, now: () => number = Date.now): void {
  const limiter = new DiagnosticLimiter();
  const emit = (level: 'warn' | 'error', message: string, args: unknown[]): void => {
    const kind = diagnosticKind(textOf(message, args));
    const event = level === 'error' ? 'telemetry.export-failed' : 'telemetry.warning';
    const { log: admitted, suppressed } = limiter.admit(`${event}:${kind}`, now());
    if (admitted) log.warn({ event, kind, suppressed }, event);
  };
  const none = (): void => {};
  const logger: DiagLogger = {
    error: (message, ...args) => emit('error', message, args),
    warn: (message, ...args) => emit('warn', message, args),
    info: none,
    debug: none,
    verbose: none,
  };
  diag.setLogger(logger, { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true });
}
