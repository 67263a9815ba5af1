/**
 * Reading the material behind a secret reference, at each use: nothing is
 * cached, so replacing a file (or a systemd credential) rotates a key on the
 * next request without a restart.
 *
 * Schemes: `file:/absolute/path`; `env:NAME`; `systemd:NAME`, read from
 * `$CREDENTIALS_DIRECTORY/NAME` (systemd `LoadCredential=`). One trailing
 * newline is dropped, since editors and `echo` add one. Empty material is
 * refused: an empty key would match an empty credential.
 *
 * A failure is `E_CONFIG_SECRET_UNREADABLE` naming the scheme and, when the
 * caller gives it, the setting; never the path or variable the reference
 * points at, and never material (spec: the log records neither).
 *
 * This module reads `process.env` at call time for `env:` and `systemd:`
 * references (the one exception to load.ts being its only reader, because
 * material must be read at each use); pass `env` to read another table.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AppError } from './errors.ts';

export type SecretScheme = 'file' | 'env' | 'systemd';
export type ParsedSecretRef = { readonly scheme: SecretScheme; readonly target: string };

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
// systemd credential names: no path separator, not '.' or '..'.
const CREDENTIAL_NAME = /^(?!\.{1,2}$)[A-Za-z0-9_.@:-]{1,255}$/;

export function parseSecretRef(ref: string): ParsedSecretRef | null {
  const colon = ref.indexOf(':');
  if (colon < 0) return null;
  const scheme = ref.slice(0, colon);
  const target = ref.slice(colon + 1);
  if (scheme === 'file') {
    if (!target.startsWith('/') || target.includes('\0') || target.length < 2) return null;
    return { scheme, target };
  }
  if (scheme === 'env') return ENV_NAME.test(target) ? { scheme, target } : null;
  if (scheme === 'systemd') return CREDENTIAL_NAME.test(target) ? { scheme, target } : null;
  return null;
}


function unreadable(scheme: SecretScheme | 'unknown', setting: string | undefined, why: string): AppError {
  const where = setting === undefined ? 'a secret reference' : `the secret reference of ${setting}`;
  return new AppError('E_CONFIG_SECRET_UNREADABLE', {
    message: `${where} (${scheme}:) could not be read: ${why}`,
    details: setting === undefined ? { scheme } : { scheme, setting },
  });
}

function fileReason(err: unknown): string {
  switch ((err as NodeJS.ErrnoException).code) {
    case 'ENOENT':
      return 'nothing exists there';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'EISDIR':
      return 'it is a directory';
    default:
      return 'the file could not be read';
  }
}

function dropOneNewline(material: string): string {
  if (material.endsWith('\r\n')) return material.slice(0, -2);
  if (material.endsWith('\n')) return material.slice(0, -1);
  return material;
}

/**
 * The material behind `ref`, read now.
 * @throws AppError E_CONFIG_SECRET_UNREADABLE (scheme and setting only).
 * @example const key = readSecret(entry.ApiKey.SecretReference, undefined, 'McpEndpoint:Authentication:0:ApiKey');
 */
export function readSecret(ref: string, env: NodeJS.ProcessEnv = process.env, setting?: string): string {
  const parsed = parseSecretRef(ref);
  if (parsed === null) throw unreadable('unknown', setting, 'it is not a secret reference (file:, env: or systemd:)');
  let material: string;
  if (parsed.scheme === 'env') {
    const value = env[parsed.target];
    if (value === undefined) throw unreadable('env', setting, 'the environment variable is not set');
    material = value;
  } else {
    let path = parsed.target;
    if (parsed.scheme === 'systemd') {
      const directory = env.CREDENTIALS_DIRECTORY;
      if (directory === undefined || directory === '') {
        throw unreadable('systemd', setting, 'CREDENTIALS_DIRECTORY is not set (start the service with systemd LoadCredential=)');
      }
      path = join(directory, parsed.target);
    }
    try {
      material = readFileSync(path, 'utf8');
    } catch (err) {
      throw unreadable(parsed.scheme, setting, fileReason(err));
    }
  }
  const trimmed = dropOneNewline(material);
  if (trimmed === '') throw unreadable(parsed.scheme, setting, 'the material is empty');
  return trimmed;
}
