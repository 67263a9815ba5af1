/**
 * What shell completion offers (docs/cli.md "Shell completion"), read from
 * the program's own sade command table, so a command or option registered
 * anywhere is completed without touching the completion code.
 *
 * sade keeps its table in the instance's `tree` (not in its typings): one
 * entry per command name ("mailbox status"), `__all__` for the options every
 * command takes and `__default__` for the program itself; an alias is a
 * string naming its command. Rules derived from that table:
 * - an option takes a value unless the parser reads it as a flag
 *   (`BOOLEAN_OPTIONS`, and sade's own --help and --version);
 * - `--endpoint` takes a profile name (docs/cli.md "Which deployment"), and
 *   so does a positional written `<profile>` or `[profile]`;
 * - an option whose description is a list of words (`table | json`) takes
 *   one of them; any other value completes as a file path.
 */
import type { Sade } from 'sade';
import { BOOLEAN_OPTIONS } from '../options.ts';

export type Candidate = { word: string; description: string };
export type ValueKind = { kind: 'profile' } | { kind: 'choice'; words: string[] } | { kind: 'file' };
export type OptionSpec = { flag: string; description: string; value: ValueKind | null };
export type CommandSpec = { name: string; options: OptionSpec[]; positionals: Array<'profile' | 'any'> };

export type CompletionModel = {
  program: string;
  version: string;
  /** Every command, its own options followed by those every command takes. */
  commands: CommandSpec[];
  /** What follows the program name alone: the options every command takes, --help and --version. */
  topOptions: OptionSpec[];
  /** The words that may follow a run of command words ('' for none yet), each a command or a group of them. */
  children: Map<string, Candidate[]>;
  /** Every option that takes a value: the word after it is that value, never a command. */
  valueFlags: string[];
};

type SadeEntry = { usage: string; options: Array<[string, string, unknown?]>; describe?: string[] };
type SadeInternals = { bin: string; ver: string; tree: Record<string, SadeEntry | string> };

const PROFILE_OPTIONS = new Set(['endpoint']);
const PROFILE_POSITIONAL = /^[<[]profile[\]>]$/;
const CHOICES = /^[a-z][a-z0-9-]*(?: \| [a-z][a-z0-9-]*)+$/i;
const FLAG_OPTIONS = new Set<string>([...BOOLEAN_OPTIONS, 'help', 'version']);

/** Completion text is one line: a tab or newline would split a candidate. */
function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

function optionSpecs(entry: SadeEntry): OptionSpec[] {
  return entry.options.flatMap(([flags, description]) =>
    flags
      .split(/,\s*/)
      .filter((flag) => flag.startsWith('--'))
      .map((flag): OptionSpec => {
        const name = flag.slice(2);
        let value: ValueKind | null = null;
        if (!FLAG_OPTIONS.has(name)) {
          if (PROFILE_OPTIONS.has(name)) value = { kind: 'profile' };
          else if (CHOICES.test(description.trim())) value = { kind: 'choice', words: description.split('|').map((w) => w.trim()) };
          else value = { kind: 'file' };
        }
        return { flag, description: oneLine(description), value };
      }),
  );
}

function withoutRepeats(options: OptionSpec[]): OptionSpec[] {
  const seen = new Set<string>();
  return options.filter((o) => !seen.has(o.flag) && seen.add(o.flag));
}

const HELP: OptionSpec = { flag: '--help', description: 'Displays this message', value: null };
const VERSION: OptionSpec = { flag: '--version', description: 'Displays current version', value: null };

export function completionModel(program: Sade): CompletionModel {
  const { bin, ver, tree } = program as unknown as SadeInternals;
  const global = typeof tree.__all__ === 'object' ? optionSpecs(tree.__all__) : [];
  const commands: CommandSpec[] = [];
  const descriptions = new Map<string, string>();
  for (const [name, entry] of Object.entries(tree)) {
    if (typeof entry === 'string' || name.startsWith('__')) continue;
    const words = entry.usage.split(/\s+/);
    commands.push({
      name,
      options: withoutRepeats([...optionSpecs(entry), ...global, HELP]),
      positionals: words.filter((w) => /^[<[]/.test(w)).map((w) => (PROFILE_POSITIONAL.test(w) ? 'profile' : 'any')),
    });
    descriptions.set(name, oneLine(entry.describe?.[0] ?? ''));
  }
  const children = new Map<string, Candidate[]>();
  for (const { name } of commands) {
    const words = name.split(' ');
    for (let depth = 0; depth < words.length; depth++) {
      const path = words.slice(0, depth).join(' ');
      const word = words[depth]!;
      const list = children.get(path) ?? [];
      if (!list.some((c) => c.word === word)) {
        const whole = words.slice(0, depth + 1).join(' ');
        list.push({ word, description: descriptions.get(whole) ?? `${whole} commands` });
      }
      children.set(path, list);
    }
  }
  const topOptions = withoutRepeats([...global, HELP, VERSION]);
  const valueFlags = [...new Set([...topOptions, ...commands.flatMap((c) => c.options)].filter((o) => o.value !== null).map((o) => o.flag))];
  return { program: bin, version: ver, commands, topOptions, children, valueFlags };
}
