/**
 * The completion model written as shell functions, one case per command:
 * bash and zsh share the syntax (`case … in 'a'|'b') … ;; esac`), fish has
 * its own (`switch … case 'a' 'b' … end`). Each candidate is one line,
 * `word<TAB>description`; bash keeps the word, zsh and fish show both.
 *
 * Functions, each prefixed with the program name (`_mailcairn_` in bash and
 * zsh, `__mailcairn_` in fish):
 * - `is_command WORDS`: whether the words name a command;
 * - `takes_value FLAG`: whether the word after FLAG is its value;
 * - `children WORDS`: the words that may follow (sub-commands, groups);
 * - `options COMMAND`: the options of a command (or, for '', of the program);
 * - `value COMMAND FLAG`: the values of an option; status 1 when any file path is;
 * - `positional COMMAND INDEX`: the values of the command's INDEXth argument;
 * - `profiles`: the stored profile names, asked of the client itself.
 */
import type { Candidate, CompletionModel, OptionSpec, ValueKind } from './model.ts';

export type Dialect = 'posix' | 'fish';

/** One word as a literal of the dialect. */
export function quote(dialect: Dialect, text: string): string {
  if (dialect === 'fish') return `'${text.replace(/[\\']/g, (c) => `\\${c}`)}'`;
  return `'${text.replaceAll("'", "'\\''")}'`;
}

/** A case pattern: literal, except a leading `*` (any command) stays a wildcard. */
function pattern(dialect: Dialect, text: string): string {
  if (!text.startsWith('*')) return quote(dialect, text);
  // fish matches wildcards inside quotes; posix shells only outside them.
  return dialect === 'fish' ? quote(dialect, text) : `*${quote(dialect, text.slice(1))}`;
}

function line(candidate: Candidate): string {
  return candidate.description === '' ? candidate.word : `${candidate.word}\t${candidate.description}`;
}

function optionLines(options: OptionSpec[]): string[] {
  return options.map((o) => line({ word: o.flag, description: o.description }));
}

type Case = { patterns: string[]; body: string[] };

function printLines(dialect: Dialect, lines: string[]): string[] {
  if (lines.length === 0) return [];
  return [`printf '%s\\n' ${lines.map((l) => quote(dialect, l)).join(' ')}`];
}

/** A function dispatching on its arguments joined by `|` (posix) or its first argument (fish). */
function dispatch(dialect: Dialect, name: string, subject: string, cases: Case[], fallback: string[]): string {
  const out: string[] = [];
  if (dialect === 'fish') {
    out.push(`function ${name}`, `    switch ${subject}`);
    for (const c of cases) out.push(`        case ${c.patterns.map((p) => pattern(dialect, p)).join(' ')}`, ...c.body.map((b) => `            ${b}`));
    if (fallback.length > 0) out.push(`        case '*'`, ...fallback.map((b) => `            ${b}`));
    out.push('    end', 'end');
  } else {
    out.push(`${name}() {`, `  case ${subject} in`);
    for (const c of cases) out.push(`    ${c.patterns.map((p) => pattern(dialect, p)).join('|')})`, ...c.body.map((b) => `      ${b}`), '      ;;');
    if (fallback.length > 0) out.push('    *)', ...fallback.map((b) => `      ${b}`), '      ;;');
    out.push('  esac', '}');
  }
  return out.join('\n');
}

/** Cases grouped by identical bodies, so an option every command takes is one case, not one per command. */
function grouped(entries: Array<{ pattern: string; body: string[] }>): Case[] {
  const byBody = new Map<string, Case>();
  for (const { pattern, body } of entries) {
    const key = body.join('\n');
    const found = byBody.get(key);
    if (found) found.patterns.push(pattern);
    else byBody.set(key, { patterns: [pattern], body });
  }
  return [...byBody.values()];
}

export function shellData(dialect: Dialect, model: CompletionModel, program: string): string {
  const fn = (name: string): string => (dialect === 'fish' ? `__${program}_${name}` : `_${program}_${name}`);
  const yes = ['return 0'];
  const no = ['return 1'];
  const arg1 = dialect === 'fish' ? '"$argv[1]"' : '"$1"';
  const args12 = dialect === 'fish' ? '"$argv[1]|$argv[2]"' : '"$1|$2"';
  const profiles = [fn('profiles')];
  const valueBody = (value: ValueKind): string[] | null => {
    if (value.kind === 'profile') return profiles;
    if (value.kind === 'choice') return printLines(dialect, value.words);
    return null; // a file path: the default case
  };
  // The program's own options (--endpoint, --output) are one wildcard case each, after the commands' own.
  const topValues = new Map(model.topOptions.map((o) => [o.flag, JSON.stringify(o.value)]));
  const valueEntries: Array<{ pattern: string; body: string[] }> = [];
  const scopes = [...model.commands.map((c) => ({ command: c.name, options: c.options })), { command: '*', options: model.topOptions }];
  for (const { command, options } of scopes) {
    for (const o of options) {
      if (command !== '*' && topValues.get(o.flag) === JSON.stringify(o.value)) continue;
      const body = o.value === null ? null : valueBody(o.value);
      if (body !== null) valueEntries.push({ pattern: `${command}|${o.flag}`, body });
    }
  }
  const positionalEntries = model.commands.flatMap((c) =>
    c.positionals.flatMap((kind, index) => (kind === 'profile' ? [{ pattern: `${c.name}|${index}`, body: profiles }] : [])),
  );
  const profilesFunction =
    dialect === 'fish'
      ? [`function ${fn('profiles')}`, `    command ${program} completion --profiles 2>/dev/null`, '    return 0', 'end']
      : [`${fn('profiles')}() {`, `  command ${program} completion --profiles 2>/dev/null`, '  return 0', '}'];
  return [
    dispatch(dialect, fn('is_command'), arg1, [{ patterns: model.commands.map((c) => c.name), body: yes }], no),
    dispatch(dialect, fn('takes_value'), arg1, [{ patterns: model.valueFlags, body: yes }], no),
    dispatch(
      dialect,
      fn('children'),
      arg1,
      [...model.children].map(([path, list]) => ({ patterns: [path], body: printLines(dialect, list.map(line)) })),
      [],
    ),
    dispatch(
      dialect,
      fn('options'),
      arg1,
      grouped(model.commands.map((c) => ({ pattern: c.name, body: printLines(dialect, optionLines(c.options)) }))),
      printLines(dialect, optionLines(model.topOptions)),
    ),
    dispatch(dialect, fn('value'), args12, grouped(valueEntries), no),
    dispatch(dialect, fn('positional'), args12, grouped(positionalEntries), []),
    profilesFunction.join('\n'),
  ].join('\n\n');
}
