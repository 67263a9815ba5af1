/**
 * `mailcairnd check-config`: loads the configuration exactly as startup
 * does, then prints the resolved posture and the startup warnings, or the
 * refusal, one problem per line. Returns the exit code: 0 when the
 * configuration would start (warnings included), 78 (EX_CONFIG) when it
 * would be refused. Reads no secret material.
 */
import { existsSync } from 'node:fs';
import { AppError } from '../runtime/errors.ts';
import { configFileOf, loadConfig } from './load.ts';
import { describePosture } from './posture.ts';

export const EX_CONFIG = 78;

export function runCheckConfig(options: { file?: string; env?: NodeJS.ProcessEnv; out: (line: string) => void }): number {
  const { out } = options;
  const source = configFileOf(options);
  const fileLine = !source.explicit && !existsSync(source.file) ? `${source.file} (absent: defaults apply)` : source.file;
  let config;
  try {
    config = loadConfig({ ...(options.file === undefined ? {} : { file: options.file }), ...(options.env === undefined ? {} : { env: options.env }) });
  } catch (err) {
    if (!(err instanceof AppError) || err.code !== 'E_CONFIG_INVALID') throw err;
    out(`Configuration file: ${fileLine}`);
    out('Refused: the service would not start.');
    for (const line of err.message.split('\n')) out(`  ${line}`);
    return EX_CONFIG;
  }
  const { lines, warnings } = describePosture(config);
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
