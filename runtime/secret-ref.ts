/**
 * Reading the material behind a secret reference, now. `readSecret` reads
 * synchronously and caches nothing: it is for startup and for actors on
 * their own threads. The HTTP surfaces read through `secret-cache.ts`, which
 * keeps the material in memory and checks the file asynchronously for each
 * request (a stat shared by concurrent requests, a read only on change), so
 * that a rotation takes effect on the next request with no synchronous file
 * I/O on the request path.
 *
 * Schemes: `file:/absolute/path`; `env:NAME`; `systemd:NAME`, read from
 * `$CREDENTIALS_DIRECTORY/NAME` (systemd `LoadCredential=`). One trailing
 * newline is dropped, since editors and `echo` add one. Empty material is
 * refused: an empty key would match an empty credential.
 *
 * A failure is `E_CONFIG_SECRET_UNREADABLE` naming the scheme and, when the
 * caller gives it, the setting; never the path or variable the reference
 * points at, and never material (docs/configuration.md "Secret references":
 * messages and logs name the setting and the scheme only).
 *
 * This module reads `process.env` at call time for `env:` and `systemd:`
 * references (the one exception to load.ts being its only reader, because
 * material must be read at each use); pass `env` to read another table.
 * `secretTarget`, `secretMaterial` and `secretFileUnreadable` are the steps of
 * `readSecret`, for `secret-cache.ts` to take asynchronously.
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

/** Where the material behind a reference is: a file to read, or (`env:`) the material itself, not yet trimmed. */
export type SecretTarget = { readonly scheme: 'file' | 'systemd'; readonly path: string } | { readonly scheme: 'env'; readonly text: string };

/**
 * Where the material behind `ref` is, without reading a file.
 * @throws AppError E_CONFIG_SECRET_UNREADABLE: not a reference, an unset variable, no CREDENTIALS_DIRECTORY.
 */
export function secretTarget(ref: string, env: NodeJS.ProcessEnv = process.env, setting?: string): SecretTarget {
  const parsed = parseSecretRef(ref);
  if (parsed === null) throw unreadable('unknown', setting, 'it is not a secret reference (file:, env: or systemd:)');
  if (parsed.scheme === 'env') {
    const value = env[parsed.target];
    if (value === undefined) throw unreadable('env', setting, 'the environment variable is not set');
    return { scheme: 'env', text: value };
  }
  if (parsed.scheme === 'file') return { scheme: 'file', path: parsed.target };
  const directory = env.CREDENTIALS_DIRECTORY;
  if (directory === undefined || directory === '') {
    throw unreadable('systemd', setting, 'CREDENTIALS_DIRECTORY is not set (start the service with systemd LoadCredential=)');
  }
  return { scheme: 'systemd', path: join(directory, parsed.target) };
}

/**
 * The material in `text` as read from a reference of `scheme`: one trailing newline dropped.
 * @throws AppError E_CONFIG_SECRET_UNREADABLE when nothing is left.
 */
export function secretMaterial(scheme: SecretScheme, text: string, setting?: string): string {
  const trimmed = dropOneNewline(text);
  if (trimmed === '') throw unreadable(scheme, setting, 'the material is empty');
  return trimmed;
}

/** The failure to report when the file behind a reference could not be read (`err` from node:fs; its path is not repeated). */
export function secretFileUnreadable(scheme: 'file' | 'systemd', err: unknown, setting?: string): AppError {
  return unreadable(scheme, setting, fileReason(err));
}

/**
 * The material behind `ref`, read now (synchronously: startup and actors only).
 * @throws AppError E_CONFIG_SECRET_UNREADABLE (scheme and setting only).
 * @example const key = readSecret(entry.ApiKey.SecretReference, undefined, 'McpEndpoint:Authentication:0:ApiKey');
 */
export function readSecret(ref: string, env: NodeJS.ProcessEnv = process.env, setting?: string): string {
  const target = secretTarget(ref, env, setting);
  if (target.scheme === 'env') return secretMaterial('env', target.text, setting);
  let text: string;
  try {
    text = readFileSync(target.path, 'utf8');
  } catch (err) {
    throw secretFileUnreadable(target.scheme, err, setting);
  }
  return secretMaterial(target.scheme, text, setting);
}
