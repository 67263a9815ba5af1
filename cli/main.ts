/**
 * The `mailcairn` program (docs/cli.md "Commands"): the sade
 * command table, the options every command takes (`--endpoint`, `--output`),
 * and the one place failures are printed and turned into exit codes.
 *
 * Every command is an HTTP request to the administrative endpoint; the
 * client never reads the service's configuration or database.
 */
import sade, { type LazyOutput, type Sade } from 'sade';
import { version } from '../runtime/version.ts';
import type { Run } from './commands/run.ts';
import { configDir } from './config-dir.ts';
import type { Context } from './context.ts';
import { CliFailure, EXIT, usage } from './failure.ts';
import { BOOLEAN_OPTIONS, STRING_OPTIONS, optionalText, type Options } from './options.ts';
import { createOutput, parseFormat, type Streams } from './output.ts';
import type { Terminal } from './standard-input.ts';

export type MainIo = {
  argv: readonly string[];
  env: NodeJS.ProcessEnv;
  stdin: Terminal['stdin'];
  stdout: Streams['stdout'];
  stderr: Streams['stderr'] & Terminal['stderr'];
  /** Reported to the deployment's version check; the build's own unless a test says otherwise. */
  clientVersion?: string;
};

type Register = (program: Sade, run: Run) => void;

/**
 * The command modules, each loaded only when the command line names one of
 * its commands: a command then loads what it uses and nothing else (zod,
 * jose and the other commands' code cost start-up time every command would
 * pay; docs/performance.md "Client start-up"). The key is a command's first
 * word; the order is the order of `mailcairn --help`. The only other lazy
 * load is a credential's presenter (connection.ts), by sign-in mode.
 */
const COMMAND_MODULES: ReadonlyArray<readonly [readonly string[], () => Promise<Register>]> = [
  [['login'], async () => (await import('./commands/login.ts')).registerLogin],
  [['status', 'profiles', 'switch', 'logout'], async () => (await import('./commands/session.ts')).registerSession],
  [['mailbox'], async () => (await import('./commands/mailbox.ts')).registerMailbox],
  [['embedding'], async () => (await import('./commands/embedding.ts')).registerEmbedding],
  [['folder'], async () => (await import('./commands/folder.ts')).registerFolder],
  [['jobs'], async () => (await import('./commands/jobs.ts')).registerJobs],
  [['spam'], async () => (await import('./commands/spam.ts')).registerSpam],
  [['outbox'], async () => (await import('./commands/outbox.ts')).registerOutbox],
  [['contact'], async () => (await import('./commands/contact.ts')).registerContact],
  [['rules'], async () => (await import('./commands/rules.ts')).registerRules],
  [['completion'], async () => (await import('./commands/completion.ts')).registerCompletion],
];

/** The command line's first word that is neither an option nor a value option's value; undefined when there is none. */
function commandWord(argv: readonly string[]): string | undefined {
  const values = new Set<string>(STRING_OPTIONS);
  for (let i = 2; i < argv.length; i += 1) {
    const arg = argv[i]!;
    if (arg === '--') return argv[i + 1];
    if (!arg.startsWith('-')) return arg;
    if (arg.startsWith('--') && !arg.includes('=') && values.has(arg.slice(2))) i += 1;
  }
  return undefined;
}

/** The modules of the command named, or all of them (`--help`, a mistyped command: sade lists every command; `completion <shell>`). `--version` alone needs none. */
async function registerCommands(program: Sade, run: Run, argv: readonly string[]): Promise<void> {
  const word = commandWord(argv);
  if (word === undefined && argv.length === 3 && (argv[2] === '--version' || argv[2] === '-v')) return;
  // `completion <shell>` writes every command into its script, so it loads them all; `completion --profiles`
  // (run at each completion of a profile name) needs only its own module.
  const everything = word === 'completion' && !argv.includes('--profiles');
  const named = everything ? [] : COMMAND_MODULES.filter(([words]) => word !== undefined && words.includes(word));
  const loads = (named.length > 0 ? named : COMMAND_MODULES).map(([, load]) => load());
  for (const register of await Promise.all(loads)) register(program, run);
}

/** sade reports a bad command line by exiting; this turns that exit into exit code 2 without leaving main. */
class UsageExit extends Error {}

function parseCommandLine(program: Sade, argv: readonly string[]): LazyOutput | undefined {
  const exit = process.exit;
  process.exit = ((code?: number) => {
    throw new UsageExit(String(code));
  }) as typeof process.exit;
  try {
    // Undefined after --help or --version, which sade prints itself.
    return program.parse([...argv], {
      lazy: true,
      string: [...STRING_OPTIONS],
      boolean: [...BOOLEAN_OPTIONS],
      unknown: (arg: string) => `Unknown option ${arg.split('=')[0]}`,
    });
  } finally {
    process.exit = exit;
  }
}

export async function main(io: MainIo): Promise<number> {
  const clientVersion = io.clientVersion ?? version;
  const report = (err: unknown, ctx?: Context): number => {
    const out = ctx?.out ?? createOutput('table', io, io.env);
    if (err instanceof CliFailure) {
      out.error(err.message);
      return err.exitCode;
    }
    // A defect of the client: its kind, never its message (it might quote an answer).
    out.error(`unexpected failure (${err instanceof Error ? err.name : typeof err}); run again with the same arguments, and report it if it repeats.`);
    return EXIT.failed;
  };
  let exitCode: number = EXIT.ok;
  const run: Run =
    (command) =>
    async (...args) => {
      const options = args.at(-1) as Options;
      const positionals = args.slice(0, -1) as (string | undefined)[];
      let ctx: Context | undefined;
      try {
        if (options._.length > 0) throw usage(`Unexpected argument ${options._[0]}; see mailcairn --help.`);
        ctx = {
          env: io.env,
          dir: configDir(io.env),
          out: createOutput(parseFormat(optionalText(options, 'output')), io, io.env),
          io: {
            // Opened only by a command that reads it (bin/mailcairn.ts).
            get stdin() {
              return io.stdin;
            },
            stderr: io.stderr,
          },
          clientVersion,
          endpointOption: optionalText(options, 'endpoint'),
        };
        await command(ctx, options, positionals);
      } catch (err) {
        exitCode = report(err, ctx);
      }
    };

  const program = sade('mailcairn')
    .version(clientVersion)
    .describe('Operator client of a Mailcairn deployment: every command is a request to its administrative endpoint.')
    .option('--endpoint', 'Profile name or endpoint address (else SERVICE_ENDPOINT, else the default profile)')
    .option('--output', 'table | json', 'table');
  await registerCommands(program, run, io.argv);

  let parsed;
  try {
    parsed = parseCommandLine(program, io.argv);
  } catch (err) {
    if (err instanceof UsageExit) return EXIT.usage;
    throw err;
  }
  if (parsed === undefined) return EXIT.ok; // --help or --version
  await parsed.handler(...parsed.args);
  return exitCode;
}
