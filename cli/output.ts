/**
 * What the client writes (docs/cli.md "Confirmations and output"): readings
 * and estimates to standard output, as aligned tables for a person or as one
 * JSON document with `--output json`; questions, guidance, warnings and
 * failures to standard error, so a pipe reading standard output gets only
 * the reading. Colour is used only on a terminal and never when `NO_COLOR`
 * is set (to anything) or `TERM` is `dumb`.
 *
 * A watched reading (`--watch`, docs/cli.md "Watching progress") is drawn
 * once per refresh: redrawn in place on a terminal, one line per refresh
 * when standard output is not one, and with `--output json` one JSON
 * document per line per refresh. A progress note (a folder erasure's
 * running total) is rewritten in place on a terminal's standard error and
 * is a line of its own otherwise.
 */
import { usage } from './failure.ts';

export type OutputFormat = 'table' | 'json';

export type Writable = { write(text: string): unknown; isTTY?: boolean; columns?: number };
export type Streams = { stdout: Writable; stderr: Writable };

export type Output = {
  readonly format: OutputFormat;
  /** A reading: `value` as JSON, or `human()` as text. */
  reading(value: unknown, human: () => string): void;
  /** A line of the reading (human format only has a use for it). */
  line(text: string): void;
  /** Guidance to standard error. */
  note(text: string): void;
  warn(text: string): void;
  error(text: string): void;
  /** Columns aligned, the header emphasized on a terminal. */
  table(header: readonly string[], rows: ReadonlyArray<readonly string[]>): string;
  /** Name and value per line, names aligned and emphasized on a terminal. */
  pairs(rows: ReadonlyArray<readonly [string, string]>): string;
  emphasis(text: string): string;
  /**
   * One refresh of a watched reading: `value` as one JSON line; else
   * `human()` redrawn over the previous refresh on a terminal, or `line()`
   * as one line when standard output is not a terminal.
   */
  refresh(value: unknown, human: () => string, line: () => string): void;
  /** A running total to standard error: rewritten in place on a terminal, a line otherwise. */
  progress(text: string): void;
};

export function parseFormat(value: unknown): OutputFormat {
  if (value === undefined || value === 'table') return 'table';
  if (value === 'json') return 'json';
  throw usage(`--output takes table or json.`);
}

export function colourOn(stream: Writable, env: NodeJS.ProcessEnv): boolean {
  return stream.isTTY === true && env.NO_COLOR === undefined && env.TERM !== 'dumb';
}

const paint =
  (on: boolean, code: string) =>
  (text: string): string =>
    on ? `\u001b[${code}m${text}\u001b[0m` : text;

/** Escape sequences of colour, left out when counting what a line takes on screen. */
const ESCAPES = /\u001b\[[0-9;]*m/g;

/** Rows `text` takes on a terminal `columns` wide (long lines wrap). */
function rowsOf(text: string, columns: number): number {
  return text.split('\n').reduce((rows, line) => rows + Math.max(1, Math.ceil(line.replace(ESCAPES, '').length / columns)), 0);
}

export function createOutput(format: OutputFormat, streams: Streams, env: NodeJS.ProcessEnv): Output {
  const outColour = colourOn(streams.stdout, env);
  const errColour = colourOn(streams.stderr, env);
  const bold = paint(outColour, '1');
  const yellow = paint(errColour, '33');
  const red = paint(errColour, '31');
  // A progress note left open on a terminal (no newline yet) is closed before anything else is written.
  let progressOpen = false;
  const close = (): void => {
    if (progressOpen) streams.stderr.write('\n');
    progressOpen = false;
  };
  const out = (text: string): void => {
    close();
    streams.stdout.write(`${text}\n`);
  };
  const err = (text: string): void => {
    close();
    streams.stderr.write(`${text}\n`);
  };
  // Rows the previous refresh took on the terminal: the next one moves up over them and clears to the end.
  let drawnRows = 0;
  return {
    format,
    reading(value, human) {
      out(format === 'json' ? JSON.stringify(value, null, 2) : human());
    },
    refresh(value, human, line) {
      if (format === 'json') return out(JSON.stringify(value));
      if (streams.stdout.isTTY !== true) return out(line());
      const text = human();
      close();
      streams.stdout.write(`${drawnRows > 0 ? `\u001b[${drawnRows}F\u001b[J` : ''}${text}\n`);
      drawnRows = rowsOf(text, streams.stdout.columns ?? 80);
    },
    progress(text) {
      if (streams.stderr.isTTY !== true) return err(text);
      streams.stderr.write(`\r\u001b[2K${text}`);
      progressOpen = true;
    },
    line(text) {
      if (format === 'table') out(text);
    },
    note: err,
    warn: (text) => err(`${yellow('Warning:')} ${text}`),
    error: (text) => err(`${red('mailcairn:')} ${text}`),
    table(header, rows) {
      const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
      const render = (cells: readonly string[]): string =>
        cells
          .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
          .join('  ')
          .trimEnd();
      return [bold(render(header)), ...rows.map(render)].join('\n');
    },
    pairs(rows) {
      const width = Math.max(0, ...rows.map(([name]) => name.length));
      return rows.map(([name, value]) => `${bold(name.padEnd(width))}  ${value}`).join('\n');
    },
    emphasis: bold,
  };
}
