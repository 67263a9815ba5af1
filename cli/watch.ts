/**
 * `--watch [--interval 2s]` (docs/cli.md "Watching progress"): a status
 * command reads its route again and again, drawing each answer
 * (output.ts `refresh`), until the work it shows is done or Ctrl-C. Each
 * refresh is one request on one connection; no subject, address or other
 * content is in any of it, since the answers hold counts only.
 *
 * Ctrl-C stops watching, not the work: the exit code is 130 (interrupted),
 * and the sentence says the work goes on. A request cut short by it is not
 * a failure of the deployment.
 */
import type { Connection } from './connection.ts';
import { withConnection } from './connection.ts';
import type { Context } from './context.ts';
import { CliFailure, EXIT, usage } from './failure.ts';
import { flag, optionalText, type Options } from './options.ts';
import type { WorkProgress } from './answers.ts';

export const DEFAULT_INTERVAL_MS = 2_000;
const MIN_INTERVAL_MS = 200;
const MAX_INTERVAL_MS = 3_600_000;

/** `--watch` with its `--interval` (`2s`, `500ms`, `1m`, or seconds alone); null without `--watch`. */
export function watchOption(options: Options): { intervalMs: number } | null {
  const interval = optionalText(options, 'interval');
  if (!flag(options, 'watch')) {
    if (interval !== undefined) throw usage('--interval goes with --watch.');
    return null;
  }
  if (interval === undefined) return { intervalMs: DEFAULT_INTERVAL_MS };
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(interval.trim());
  const ms = m === null ? Number.NaN : Number(m[1]) * (m[2] === 'ms' ? 1 : m[2] === 'm' ? 60_000 : 1_000);
  if (!(ms >= MIN_INTERVAL_MS && ms <= MAX_INTERVAL_MS)) throw usage('--interval takes a duration from 200ms to 60m, such as 2s, 500ms or 1m.');
  return { intervalMs: ms };
}

export type Watched<T> = {
  intervalMs: number;
  /** One reading of the route. */
  read(connection: Connection): Promise<T>;
  /** For a person on a terminal: the whole reading, redrawn each refresh. */
  human(value: T): string;
  /** For a pipe: one line per refresh (the refresh's instant is put before it). */
  line(value: T): string;
  /** The work shown is over (or cannot move by itself): the last refresh is drawn and the command ends. */
  done(value: T): boolean;
};

export async function watch<T>(ctx: Context, watched: Watched<T>): Promise<void> {
  const interrupt = new AbortController();
  const onInterrupt = (): void => interrupt.abort();
  process.on('SIGINT', onInterrupt);
  const stopped = (): CliFailure => new CliFailure('Stopped watching (Ctrl-C); the work goes on in the deployment.', EXIT.interrupted);
  try {
    await withConnection(
      ctx,
      async (connection) => {
        for (;;) {
          let value: T;
          try {
            value = await watched.read(connection);
          } catch (err) {
            if (interrupt.signal.aborted) throw stopped();
            throw err;
          }
          const done = watched.done(value);
          const at = new Date().toISOString();
          ctx.out.refresh(
            value,
            () =>
              `${watched.human(value)}\n\n${done ? `Read at ${at}; done.` : `Read at ${at}; again every ${durationWords(watched.intervalMs / 1000)} until done (Ctrl-C stops watching).`}`,
            () => `${at} ${watched.line(value)}`,
          );
          if (done) return;
          await pause(watched.intervalMs, interrupt.signal);
          if (interrupt.signal.aborted) throw stopped();
        }
      },
      { signal: interrupt.signal },
    );
  } catch (err) {
    if (interrupt.signal.aborted && !(err instanceof CliFailure && err.exitCode === EXIT.interrupted)) throw stopped();
    throw err;
  } finally {
    process.removeListener('SIGINT', onInterrupt);
  }
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/** `1200 of 5000 stored (24%), 410.5 per second, about 9 s left`: counts and time only. */
export function progressWords(p: WorkProgress, verb: string): string {
  const total = p.totalEmailCount;
  const share = total === null || total === 0 ? '' : ` (${Math.min(100, Math.floor((100 * p.completedEmailCount) / total))}%)`;
  const parts = [`${p.completedEmailCount} of ${total ?? '?'} ${verb}${share}`];
  if (p.emailsPerSecond !== null) parts.push(`${p.emailsPerSecond} per second`);
  if (p.secondsLeft !== null && p.secondsLeft > 0) parts.push(`about ${durationWords(p.secondsLeft)} left`);
  return parts.join(', ');
}

/** `9 s`, `0.5 s`, `3 min`, `2 h 5 min`. */
export function durationWords(seconds: number): string {
  if (seconds < 90) return `${Math.round(seconds * 10) / 10} s`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 90) return `${minutes} min`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}
