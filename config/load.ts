/**
 * Loading the configuration: the only reader of the configuration file and of
 * `process.env` for settings (no other module reads them;
 * `runtime/secret-ref.ts` reads the environment for `env:` and `systemd:`
 * material, at each use).
 *
 * File (default `$MAILCAIRN_CONFIG`, else `./mailcairn.json`; a missing
 * default file is `{}`) → `MAILCAIRN__Section__Key` overrides → refusal of
 * the host listener settings the spec names → strict schema → cross-field
 * checks → deep freeze. Every problem is collected and thrown together as
 * one `E_CONFIG_INVALID` whose message has one problem per line.
 *
 * Importable from anywhere that starts the service or checks its configuration.
 */
import { readFileSync } from 'node:fs';
import { AppError } from '../runtime/errors.ts';
import { runChecks } from './checks/run-checks.ts';
import { applyEnvOverrides, type EnvSource } from './env-overrides.ts';
import { problemsFromIssues } from './issues.ts';
import { type Problem, formatProblem, problem } from './problem.ts';
import { type Config, ConfigSchema } from './schema.ts';

export const DEFAULT_CONFIG_FILE = './mailcairn.json';

/** Listener settings of the platform the spec was written against; listeners are set only in the endpoint sections. */
const HOST_LISTENER_VARIABLES = ['ASPNETCORE_URLS', 'ASPNETCORE_HTTP_PORTS', 'ASPNETCORE_HTTPS_PORTS', 'DOTNET_URLS'];

export type Validation = { readonly ok: true; readonly config: Config } | { readonly ok: false; readonly problems: readonly Problem[] };

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

/** Validates an already-read configuration tree (file plus overrides); no I/O. */
export function validateConfig(raw: unknown): Validation {
  if (!isPlainObject(raw)) return { ok: false, problems: [problem('', 'the configuration must be a JSON object whose keys are sections')] };
  const problems: Problem[] = [];
  const tree = { ...raw };
  if (Object.hasOwn(tree, 'Kestrel')) {
    const beside = ['McpEndpoint', 'AdminEndpoint', 'HealthEndpoints'].filter(
      (section) =>
        isPlainObject(tree[section]) &&
        isPlainObject(tree[section].Https) &&
        Array.isArray(tree[section].Https.Endpoints) &&
        tree[section].Https.Endpoints.length > 0,
    );
    problems.push(
      problem(
        'Kestrel',
        `is refused: listeners are set only in McpEndpoint, AdminEndpoint and HealthEndpoints${beside.length > 0 ? ` (Https profiles are written in ${beside.join(', ')})` : ''}`,
      ),
    );
    delete tree.Kestrel;
  }
  const parsed = ConfigSchema.safeParse(tree);
  if (!parsed.success) return { ok: false, problems: [...problems, ...problemsFromIssues(parsed.error.issues, tree, ConfigSchema)] };
  problems.push(...runChecks(parsed.data));
  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, config: deepFreeze(parsed.data) };
}

function readFile(file: string, explicit: boolean): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && !explicit) return {};
    const why = code === 'ENOENT' ? 'does not exist' : code === 'EACCES' ? 'is not readable (permission denied)' : `could not be read (${code ?? 'error'})`;
    throw refusal([problem('', `configuration file ${file} ${why}`)]);
  }
  try {
    return JSON.parse(text.replace(/^\uFEFF/, '')) as unknown;
  } catch (err) {
    // The parser's own message may quote the text around the fault, which may hold a value: give the place only.
    const position = /position (\d+)/.exec(String((err as Error).message));
    let where = '';
    if (position !== null) {
      const before = text.slice(0, Number(position[1]));
      const line = before.split('\n').length;
      where = ` (line ${line}, column ${before.length - before.lastIndexOf('\n')})`;
    }
    throw refusal([problem('', `configuration file ${file} is not valid JSON${where}`)]);
  }
}

function refusal(problems: readonly Problem[]): AppError {
  return new AppError('E_CONFIG_INVALID', { message: problems.map(formatProblem).join('\n'), details: { problems: problems.length } });
}

/** Names the environment variable behind a problem, where one set the setting. */
function attribute(p: Problem, sources: readonly EnvSource[]): Problem {
  const source = sources.find(
    (s) =>
      p.setting === s.setting ||
      p.setting.startsWith(`${s.setting}:`) ||
      // An unknown key the variable created on its way down (MAILCAIRN__Mcp__Enabled creates Mcp).
      (p.message.startsWith('unknown') && s.setting.startsWith(`${p.setting}:`)),
  );
  return source === undefined ? p : { setting: p.setting, message: `${p.message} (set by ${source.variable})` };
}

/** The file `loadConfig` reads: the one named, else `$MAILCAIRN_CONFIG`, else the default (which may be absent). */
export function configFileOf(options: { file?: string; env?: NodeJS.ProcessEnv }): { file: string; explicit: boolean } {
  const env = options.env ?? process.env;
  const named = options.file ?? (env.MAILCAIRN_CONFIG !== undefined && env.MAILCAIRN_CONFIG !== '' ? env.MAILCAIRN_CONFIG : undefined);
  return { file: named ?? DEFAULT_CONFIG_FILE, explicit: named !== undefined };
}

/**
 * Reads, overrides, validates and freezes the configuration.
 * @throws AppError E_CONFIG_INVALID listing every problem, one per line.
 * @example const config = loadConfig({ file: 'config/examples/mailcairn.json' });
 */
export function loadConfig(options: { file?: string; env?: NodeJS.ProcessEnv } = {}): Config {
  return loadConfigAsWritten(options).config;
}

/**
 * `loadConfig`, also giving the configuration as written: the file with the
 * overrides applied, before defaults. What the operator wrote decides the
 * warnings about settings this build does not serve (`config/not-served.ts`).
 * @throws AppError E_CONFIG_INVALID listing every problem, one per line.
 */
export function loadConfigAsWritten(options: { file?: string; env?: NodeJS.ProcessEnv } = {}): { config: Config; written: unknown } {
  const env = options.env ?? process.env;
  const { file, explicit } = configFileOf(options);
  const raw = readFile(file, explicit);
  if (!isPlainObject(raw)) throw refusal([problem('', 'the configuration must be a JSON object whose keys are sections')]);

  const problems: Problem[] = [];
  for (const variable of HOST_LISTENER_VARIABLES) {
    if (env[variable] !== undefined) {
      problems.push(problem(variable, 'is refused: listeners are set only in McpEndpoint, AdminEndpoint and HealthEndpoints; unset it'));
    }
  }
  const overridden = applyEnvOverrides(raw, env, ConfigSchema);
  problems.push(...overridden.problems);
  const validation = validateConfig(overridden.value);
  if (!validation.ok) problems.push(...validation.problems.map((p) => attribute(p, overridden.sources)));
  if (problems.length > 0 || !validation.ok) throw refusal(problems);
  return { config: validation.config, written: overridden.value };
}

/** What the configuration file says of one section now, read again (`Unknown`: why it could not be said). */
export type SectionOnDisk = { readonly ok: true; readonly section: unknown } | { readonly ok: false; readonly reason: string };

/**
 * The `MailRules` section as the file says it now, with the given overrides
 * (`MAILCAIRN__MailRules__…`) applied and defaults filled in, for comparing
 * with the section loaded at startup (`GET /api/admin/rules`). Reasons name
 * the failure, never a value of the file.
 */
export function mailRulesOnDisk(source: { file: string; explicit: boolean; overrides: Readonly<Record<string, string>> }): SectionOnDisk {
  let raw: unknown;
  try {
    raw = readFile(source.file, source.explicit);
  } catch {
    return { ok: false, reason: 'the configuration file could not be read or is not valid JSON' };
  }
  if (!isPlainObject(raw)) return { ok: false, reason: 'the configuration file is not a JSON object' };
  const overridden = applyEnvOverrides(raw, source.overrides, ConfigSchema);
  if (overridden.problems.length > 0) return { ok: false, reason: 'the environment overrides of MailRules no longer apply to the file' };
  const parsed = ConfigSchema.shape.MailRules.safeParse((overridden.value as Record<string, unknown>).MailRules ?? {});
  if (!parsed.success) return { ok: false, reason: 'the MailRules section in the file does not validate' };
  return { ok: true, section: parsed.data };
}
