/**
 * How a command fails: a sentence for standard error and an exit code. Every
 * module of the client throws `CliFailure`; only `main.ts` prints it. The
 * sentence never carries a credential, a token, a subject or a mail address.
 *
 * Exit codes (docs/cli.md "Exit codes"): 0 done; 1 refused or failed (by the
 * deployment, the network, the version agreement, a declined confirmation);
 * 2 the command line itself is wrong; 130 interrupted (Ctrl-C).
 */

export const EXIT = { ok: 0, failed: 1, usage: 2, interrupted: 130 } as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

export class CliFailure extends Error {
  readonly exitCode: ExitCode;
  /** The deployment answered and refused (400, 401, 403, 413): it did nothing. */
  readonly refusal: boolean;
  /** The status the deployment answered, when it answered one (404: it holds no such record). */
  readonly status: number | undefined;
  constructor(message: string, exitCode: ExitCode = EXIT.failed, options: { refusal?: boolean; status?: number } = {}) {
    super(message);
    this.name = 'CliFailure';
    this.exitCode = exitCode;
    this.refusal = options.refusal ?? false;
    this.status = options.status;
  }
}

/** The command line asks for something impossible: exit 2. */
export function usage(message: string): CliFailure {
  return new CliFailure(message, EXIT.usage);
}

/** A write the deployment refused changed nothing: its reason, then `what` says so. */
export async function unchanged<T>(work: Promise<T>, what: string): Promise<T> {
  try {
    return await work;
  } catch (err) {
    if (err instanceof CliFailure && err.refusal) throw new CliFailure(`${err.message} ${what}`, err.exitCode, { refusal: true, status: err.status });
    throw err;
  }
}
