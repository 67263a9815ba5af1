/**
 * Everything startup decides about the configuration before it opens the
 * database or binds a socket, in one function that `mailcairnd` (at start)
 * and `mailcairnd check-config` both call, so the two refuse the same
 * configurations with the same message:
 * 1. load and validate (`loadConfig`: file, overrides, schema, cross-field
 *    checks);
 * 2. refuse what this build does not serve (`config/not-served.ts`),
 *    resolve the telemetry settings against the `OTEL_*` environment
 *    (`config/telemetry-settings.ts`: a bad variable is refused here), and
 *    read the credential material of every enabled endpoint, refused by
 *    position (`http/auth/startup-checks.ts`), and the server certificates
 *    of every HTTPS profile served (`http/tls/server-certificates.ts`), all
 *    reported together;
 * 3. the posture and its warnings, not-served settings included.
 *
 * What needs the running system stays with startup: a port held by another
 * process, the writer lock held by another mailcairnd, a database that cannot
 * be opened or migrated.
 */
import { credentialProblems } from '../http/auth/startup-checks.ts';
import { serverCertificateProblems } from '../http/tls/server-certificates.ts';
import { AppError } from '../runtime/errors.ts';
import { loadConfigAsWritten } from '../config/load.ts';
import { notServedProblems } from '../config/not-served.ts';
import { describePosture, type Warning } from '../config/posture.ts';
import { formatProblem } from '../config/problem.ts';
import type { Config } from '../config/schema.ts';
import { resolveTelemetry, telemetryLine } from '../config/telemetry-settings.ts';
import type { TelemetrySettings } from '../runtime/telemetry/settings.ts';

export type StartupConfig = {
  readonly config: Config;
  readonly posture: { readonly lines: string[]; readonly warnings: Warning[] };
  /** What the composition root installs; null: no OpenTelemetry SDK is loaded. */
  readonly telemetry: TelemetrySettings | null;
};

/**
 * @throws AppError E_CONFIG_INVALID listing every problem, one per line.
 * @example const { config, posture } = loadStartupConfig({ file: 'mailcairn.json', env: process.env });
 */
export function loadStartupConfig(options: { file?: string; env?: NodeJS.ProcessEnv; now?: number } = {}): StartupConfig {
  const env = options.env ?? process.env;
  const now = options.now ?? Date.now();
  const { config, written } = loadConfigAsWritten({ ...(options.file === undefined ? {} : { file: options.file }), env });
  const telemetry = resolveTelemetry(config, env);
  const problems = [
    ...notServedProblems(config),
    ...telemetry.problems,
    ...credentialProblems(config, env, now),
    ...serverCertificateProblems(config, env, now),
  ];
  if (problems.length > 0) throw new AppError('E_CONFIG_INVALID', { message: problems.map(formatProblem).join('\n'), details: { problems: problems.length } });
  const posture = describePosture(config, { now, written });
  return { config, posture: { ...posture, lines: [...posture.lines, telemetryLine(config, telemetry.settings)] }, telemetry: telemetry.settings };
}
