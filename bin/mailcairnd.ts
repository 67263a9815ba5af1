#!/usr/bin/env node
/**
 * `mailcairnd`: the service. Commands:
 *   mailcairnd [--config FILE]                 run the service
 *   mailcairnd check-config [--config FILE]    validate and print the posture
 *   mailcairnd keyring new [--out FILE]        create a data-encryption key ring
 *   mailcairnd keyring rotate FILE             add a new active key, keep the old
 * FILE defaults to $MAILCAIRN_CONFIG, else ./mailcairn.json.
 */
import { holdStopSignals } from '../service/stop-signals.ts';

// First, before any other module loads: from here on a SIGTERM or SIGINT is held for the service
// instead of ending the process by its default action (service/stop-signals.ts). Every other
// module is imported after this line, and each command loads only its own: the service does not
// pay for check-config's or the key ring's.
const signals = holdStopSignals();

const [{ default: sade }, { AppError }, { version }] = await Promise.all([import('sade'), import('../runtime/errors.ts'), import('../runtime/version.ts')]);

type Opts = { config?: string; out?: string; force?: boolean };

function fail(err: unknown): never {
  const message = err instanceof AppError ? `${err.message} (${err.code})` : err instanceof Error ? err.message : String(err);
  process.stderr.write(`mailcairnd: ${message}\n`);
  process.exit(1);
}

const prog = sade('mailcairnd').version(version).option('-c, --config', 'Configuration file (default $MAILCAIRN_CONFIG, else ./mailcairn.json)');

prog.command('run', 'Run the service (the default command)', { default: true }).action(async (opts: Opts) => {
  const { runDaemon } = await import('../service/app.ts');
  await runDaemon(opts.config ? { configFile: opts.config } : {}, signals);
});

prog
  .command('check-config', 'Validate the configuration, print the resolved posture and startup warnings; non-zero on a refusal')
  .action(async (opts: Opts) => {
    signals.release();
    const { runCheckConfig } = await import('../service/check-config.ts');
    process.exitCode = runCheckConfig({ ...(opts.config ? { file: opts.config } : {}), out: (line) => process.stdout.write(`${line}\n`) });
  });

prog
  .command('keyring new', 'Create a key ring file with one fresh active key (mode 0600)')
  .option('-o, --out', 'Write to this file instead of standard output')
  .option('-f, --force', 'Overwrite an existing file', false)
  .action(async (opts: Opts) => {
    signals.release();
    try {
      const { keyringNew } = await import('../runtime/keyring/cli.ts');
      const result = keyringNew({ ...(opts.out ? { out: opts.out } : {}), force: opts.force === true });
      if (result.path) process.stderr.write(`mailcairnd: key ring written to ${result.path}\n`);
      else process.stdout.write(result.text);
    } catch (err) {
      fail(err);
    }
  });

prog.command('keyring rotate <file>', 'Add a new active key to a key ring file; older keys stay to unseal what they sealed').action(async (file: string) => {
  signals.release();
  try {
    const { keyringRotate } = await import('../runtime/keyring/cli.ts');
    const result = keyringRotate(file);
    process.stderr.write(`mailcairnd: key ${result.activeKeyId} is now active in ${result.path}\n`);
  } catch (err) {
    fail(err);
  }
});

// --help, --version and a refused command run no action: they print and end, a held signal with them.
prog.parse(process.argv);
