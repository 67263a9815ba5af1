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
import { registerCompletion } from './commands/completion.ts';
import { registerContact } from './commands/contact.ts';
import { registerEmbedding } from './commands/embedding.ts';
import { registerFolder } from './commands/folder.ts';
import { registerJobs } from './commands/jobs.ts';
import { registerLogin } from './commands/login.ts';
import { registerMailbox } from './commands/mailbox.ts';
import { registerSpam } from './commands/spam.ts';
import { registerOutbox } from './commands/outbox.ts';
import { registerRules } from './commands/rules.ts';
import type { Run } from './commands/run.ts';
import { registerSession } from './commands/session.ts';
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
          io: { stdin: io.stdin, stderr: io.stderr },
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
  registerLogin(program, run);
  registerSession(program, run);
  registerMailbox(program, run);
  registerEmbedding(program, run);
  registerFolder(program, run);
  registerJobs(program, run);
  registerSpam(program, run);
  registerOutbox(program, run);
  registerContact(program, run);
  registerRules(program, run);
  registerCompletion(program, run);

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
