/**
 * What the client writes (docs/cli.md "Confirmations and output"): readings
 * and estimates to standard output, as aligned tables for a person or as one
 * JSON document with `--output json`; questions, guidance, warnings and
 * failures to standard error, so a pipe reading standard output gets only
 * the reading. Colour is used only on a terminal and never when `NO_COLOR`
 * is set (to anything) or `TERM` is `dumb`.
 */
import { usage } from './failure.ts';

export type OutputFormat = 'table' | 'json';

export type Writable = { write(text: string): unknown; isTTY?: boolean };
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

export function createOutput(format: OutputFormat, streams: Streams, env: NodeJS.ProcessEnv): Output {
  const outColour = colourOn(streams.stdout, env);
  const errColour = colourOn(streams.stderr, env);
  const bold = paint(outColour, '1');
  const yellow = paint(errColour, '33');
  const red = paint(errColour, '31');
  const out = (text: string): void => void streams.stdout.write(`${text}\n`);
  const err = (text: string): void => void streams.stderr.write(`${text}\n`);
  return {
    format,
    reading(value, human) {
      out(format === 'json' ? JSON.stringify(value, null, 2) : human());
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
