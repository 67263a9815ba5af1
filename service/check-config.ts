/**
 * `mailcairnd check-config`: runs what startup runs before it opens the
 * database (`loadStartupConfig`, the same function), then prints the
 * resolved posture and the startup warnings, or the refusal, one problem per
 * line with the message startup gives. Returns the exit code: 0 when the
 * configuration would start (warnings included), 78 (EX_CONFIG, startup's
 * exit code for a refusal) when it would be refused. Reads the credential
 * material startup reads, to judge it; prints none of it.
 */
import { existsSync } from 'node:fs';
import { AppError } from '../runtime/errors.ts';
import { configFileOf } from '../config/load.ts';
import { loadStartupConfig } from './startup-config.ts';

export const EX_CONFIG = 78;

export function runCheckConfig(options: { file?: string; env?: NodeJS.ProcessEnv; out: (line: string) => void }): number {
  const { out } = options;
  const source = configFileOf(options);
  const fileLine = !source.explicit && !existsSync(source.file) ? `${source.file} (absent: defaults apply)` : source.file;
  let posture;
  try {
    ({ posture } = loadStartupConfig({
      ...(options.file === undefined ? {} : { file: options.file }),
      ...(options.env === undefined ? {} : { env: options.env }),
    }));
  } catch (err) {
    if (!(err instanceof AppError) || err.code !== 'E_CONFIG_INVALID') throw err;
    out(`Configuration file: ${fileLine}`);
    out('Refused: the service would not start.');
    for (const line of err.message.split('\n')) out(`  ${line}`);
    return EX_CONFIG;
  }
  const { lines, warnings } = posture;
  out(`Configuration file: ${fileLine}`);
  out('Accepted: the service would start with this posture.');
  for (const line of lines) out(`  ${line}`);
  if (warnings.length === 0) out('No startup warnings.');
  else {
    out(`Startup warnings (${warnings.length}):`);
    for (const warning of warnings) out(`  warning [${warning.code}] ${warning.setting}: ${warning.message}`);
  }
  return 0;
}
