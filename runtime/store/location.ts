/**
 * What `Storage:Database` names: an embedded file, an in-memory database
 * (tests), or a libSQL server (sqld) URL. Pure; no I/O except resolving a
 * file path to its canonical form, so that two spellings of one file (a
 * relative path, a symlinked directory) meet at the same writer lock.
 *
 * Imported by `open.ts` and `writer-lock.ts` only.
 */
import { realpathSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { AppError } from '../errors.ts';

export type StoreLocation =
  | { readonly kind: 'memory' }
  | { readonly kind: 'file'; readonly path: string }
  /** `shown` is the URL without user information, query or fragment: safe to put in a message. */
  | { readonly kind: 'server'; readonly url: string; readonly shown: string };

// libsql-js 0.5 speaks Hrana over HTTP for these; `libsql:` is its https alias.
// It cannot open `ws:`/`wss:` (it treats them as a local file name and fails).
const serverSchemes = new Set(['libsql:', 'http:', 'https:']);

export function storeLocation(database: string): StoreLocation {
  if (database === ':memory:') return { kind: 'memory' };
  if (database.trim() === '') {
    throw new AppError('E_STORE_UNSUPPORTED', { message: 'Storage:Database is empty; name a file path or a libSQL server URL' });
  }
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*:)\/\//.exec(database)?.[1]?.toLowerCase();
  if (scheme === undefined) return { kind: 'file', path: canonicalPath(database) };
  if (scheme === 'file:') return { kind: 'file', path: canonicalPath(decodeURIComponent(new URL(database).pathname)) };
  let url: URL;
  try {
    url = new URL(database);
  } catch {
    throw new AppError('E_STORE_UNSUPPORTED', { message: 'Storage:Database is not a valid URL' });
  }
  const shown = `${url.protocol}//${url.host}${url.pathname === '/' ? '' : url.pathname}`;
  if (!serverSchemes.has(scheme)) {
    throw new AppError('E_STORE_UNSUPPORTED', {
      message: `Storage:Database ${shown} uses a scheme this build cannot open; use libsql://, https:// or http:// for a libSQL server, or a file path`,
    });
  }
  return { kind: 'server', url: database, shown };
}

/** Absolute path with symlinks resolved as far as the path exists. */
function canonicalPath(path: string): string {
  const absolute = resolve(path);
  try {
    return realpathSync(absolute);
  } catch {
    // The file does not exist yet: canonicalise its directory when that exists.
    try {
      return join(realpathSync(dirname(absolute)), basename(absolute));
    } catch {
      return absolute;
    }
  }
}
