/**
 * What one fuzz family did, counted the same way for every surface: requests
 * sent, answers by status and error code, 5xx answers (goal 0), supervisor
 * restarts and defect lines (goal 0), and log lines that carry a fragment of
 * the generated input (goal 0). Each family prints its line through
 * `t.comment` so a CI log shows every family's figures, and names its seed:
 * `MAILCAIRN_FUZZ_SEED=<seed>` replays the run exactly (docs/reliability.md).
 */
import type { LogLine } from './log-capture.ts';

/** The seed of a family: `MAILCAIRN_FUZZ_SEED` when set (a replay), else the family's fixed seed. */
export function fuzzSeed(fixed: number): number {
  const given = process.env.MAILCAIRN_FUZZ_SEED;
  if (given === undefined || given === '') return fixed;
  const seed = Number(given);
  if (!Number.isSafeInteger(seed)) throw new Error('MAILCAIRN_FUZZ_SEED must be an integer');
  return seed;
}

/** How many inputs a family generates: `MAILCAIRN_FUZZ_RUNS` when set, else `fallback` (at least 1,000 in CI). */
export function fuzzRuns(fallback = 1_000): number {
  const given = Number(process.env.MAILCAIRN_FUZZ_RUNS);
  return Number.isSafeInteger(given) && given > 0 ? given : fallback;
}

/** Log events that mean something broke on our side, whatever the input was. */
const DEFECT_EVENTS = new Set([
  'actor.restart',
  'actor.handler-threw',
  'host.exit',
  'pool.thread-failed',
  'pool.task-threw',
  'http.failed',
  'mcp.tool-failed',
  'attachment.failed',
]);

export class FuzzTally {
  requests = 0;
  private readonly answers = new Map<string, number>();
  /** The first few inputs answered 5xx, kept for the failure message (never logged by the service). */
  readonly serverErrors: Array<{ status: number; input: string }> = [];

  readonly family: string;
  readonly seed: number;

  constructor(family: string, seed: number) {
    this.family = family;
    this.seed = seed;
  }

  /**
   * One answer: its HTTP status and, when the body names one, its error code (`E_…` or a numeric MCP code).
   * A family whose answers are not HTTP (the IMAP answers family) gives its outcome's name as the status.
   */
  record(status: number | string, code?: string | number, input?: unknown): void {
    this.requests += 1;
    const key = code === undefined ? String(status) : `${status} ${code}`;
    this.answers.set(key, (this.answers.get(key) ?? 0) + 1);
    if (typeof status === 'number' && status >= 500 && this.serverErrors.length < 5) this.serverErrors.push({ status, input: preview(input) });
  }

  get fiveHundreds(): number {
    let n = 0;
    for (const [key, count] of this.answers) if (Number(key.split(' ')[0]) >= 500) n += count;
    return n;
  }

  /** One line: requests, answers by status and code (most frequent first), and the goals' counts. */
  summary(figures: { restarts: number; defects: number; leaks: number }): string {
    const answers = [...this.answers.entries()]
      .sort((a, b) => b[1] - a[1])
      .map(([key, count]) => `${key}×${count}`)
      .join(', ');
    return (
      `fuzz ${this.family} seed=${this.seed}: ${this.requests} requests; answers ${answers || 'none'}; ` +
      `5xx ${this.fiveHundreds}; restarts ${figures.restarts}; defect lines ${figures.defects}; lines carrying input ${figures.leaks}`
    );
  }
}

/** Restarts and defect lines among captured service lines. */
export function defectLines(lines: readonly LogLine[]): { restarts: number; defects: LogLine[] } {
  const defects = lines.filter((l) => typeof l.event === 'string' && DEFECT_EVENTS.has(l.event) && l.reason !== 'shutdown');
  return { restarts: defects.filter((l) => l.event === 'actor.restart').length, defects };
}

/**
 * Log lines that carry a distinctive fragment of any input (a string of at
 * least `minLength` characters that is not one of the service's own words).
 * Generated strings are checked whole, and so are their `minLength`-long
 * prefixes, so a line quoting a cut input is found too.
 */
export function linesCarrying(raw: string, inputs: Iterable<string>, minLength = 12): string[] {
  const lines = raw.split('\n').filter((l) => l.trim() !== '');
  const needles = new Set<string>();
  for (const input of inputs) {
    const needle = input.slice(0, minLength);
    if (needle.length === minLength && needle.trim().length === minLength) needles.add(needle);
  }
  if (needles.size === 0) return [];
  return lines.filter((line) => {
    for (const needle of needles) if (line.includes(needle) || line.includes(JSON.stringify(needle).slice(1, -1))) return true;
    return false;
  });
}

function preview(input: unknown): string {
  let text: string;
  try {
    text = typeof input === 'string' ? input : JSON.stringify(input);
  } catch {
    text = String(input);
  }
  return text === undefined ? 'undefined' : text.length > 300 ? `${text.slice(0, 300)}…` : text;
}
