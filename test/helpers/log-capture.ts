/** A pino logger whose lines land in an array, for asserting what operators would see. */
import { createLogger, type Logger } from '../../runtime/log.ts';

export type LogLine = Record<string, unknown> & { level: number; msg?: string; event?: string };

export function captureLog(): {
  log: Logger;
  /** Takes whole JSON lines from elsewhere (actor threads: pass as `hostLogSink`). */
  write(chunk: string): void;
  lines: LogLine[];
  events(name: string, actor?: string): LogLine[];
  raw(): string;
} {
  const lines: LogLine[] = [];
  const chunks: string[] = [];
  const write = (chunk: string): void => {
    chunks.push(chunk);
    for (const part of chunk.split('\n')) if (part.trim()) lines.push(JSON.parse(part) as LogLine);
  };
  const log = createLogger({ level: 'debug', format: 'Json', destination: { write } });
  return {
    log,
    write,
    lines,
    events: (name, actor) => lines.filter((l) => l.event === name && (actor === undefined || l.actor === actor)),
    raw: () => chunks.join(''),
  };
}

/** Resolve when `predicate` holds, polling; rejects after `ms`. */
export async function until(predicate: () => boolean, ms = 10_000, what = 'condition'): Promise<void> {
  const end = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
